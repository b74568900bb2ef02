package bench

import (
	"context"
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/kernelhost"
	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/report"
)

// KernelResult is a kernel-TCP run through the agent's Go switches, as `lab run` makes it.
type KernelResult struct {
	Dilation float64
	Agents   int
	LinkBps  float64 // the host links' emulated (dilated) rate
	Flows    []records.Flow
	Stats    []kernelhost.Stat // the senders' TCP_INFO, by flow
	// Fidelity is the run's verdict and Monitor the agents' own account (frames late, timer lag,
	// malformed frames, cross-agent frames), both as run.json has them.
	Fidelity report.Fidelity
	Monitor  lockstep.AgentFidelity
	// Marked is the CE marks the switches applied, from their counters (counters.csv's ecn_marked).
	Marked      uint64
	Log         *records.Log
	GoodputBps  []float64 // per flow: size x 8 / FCT, in real (dilated) time
	AggregateBp float64   // all bytes / (last finish - first start)
}

// TimerLagMean is the agents' mean timer lag over the run.
func (r *KernelResult) TimerLagMean() clock.Time {
	return clock.LagStats{Fired: r.Monitor.Timers, Sum: r.Monitor.TimerLagSum}.Mean()
}

// RunKernel runs lab l (host.transport kernel-tcp) on the netns backend as lab name, in agents agent
// processes (0: the default), exactly as `lab run` does: the agents host the switches, the kernel hosts
// run the flows as Linux TCP. Everything is torn down before it returns. Records are in dilated time.
func RunKernel(ctx context.Context, name string, l *lab.Lab, agents int) (*KernelResult, error) {
	s := l.Spec
	if s.Host.Transport != netns.KernelTCP {
		return nil, fmt.Errorf("host.transport: %q, want %s", s.Host.Transport, netns.KernelTCP)
	}
	if err := kernelhost.Available(s.Host.CC); err != nil {
		return nil, err
	}
	hosts := kernelhost.ForNetns(l)
	log, rr, err := netns.Run(ctx, l, netns.RunOptions{Name: name, Agents: agents, Kernel: hosts})
	if err != nil {
		return nil, err
	}
	res := &KernelResult{Dilation: rr.Dilation, Agents: rr.Agents, Flows: log.Flows, Stats: hosts.Stats,
		Fidelity: rr.Fidelity, Monitor: rr.Monitor, Log: log}
	for _, c := range log.Counters {
		if l.Graph.Nodes[c.Device].Kind == topo.Switch {
			res.Marked += c.ECNMarked
		}
	}
	if len(l.Hosts) > 0 {
		res.LinkBps = l.Graph.LinkAt(l.Hosts[0].Node, 0).RateBps / rr.Dilation
	}
	var bytes int64
	var first, last clock.Time = -1, 0
	for _, f := range log.Flows {
		gp := 0.0
		if f.Completed && f.FCT() > 0 {
			gp = float64(f.Size) * 8 / f.FCT().Seconds()
			bytes += f.Size
			if first < 0 || f.Start < first {
				first = f.Start
			}
			last = max(last, f.Finish)
		}
		res.GoodputBps = append(res.GoodputBps, gp)
	}
	if last > first && first >= 0 {
		res.AggregateBp = float64(bytes) * 8 / (last - first).Seconds()
	}
	return res, nil
}

// Faithful says whether rates measured through the run can be trusted: the run's fidelity verdict, and
// the agents' timers late by less than half a frameBytes frame's serialization at the host link's rate
// on average (a late loop idles a backlogged port in real time, and the capacity lost shows up as lower
// goodput, which the verdict's one-frame-per-frame count may not catch).
func (r *KernelResult) Faithful(frameBytes int) (bool, string) {
	if !r.Fidelity.Faithful {
		return false, r.Fidelity.Reason
	}
	frame := clock.TxTime(frameBytes, r.LinkBps)
	if lag := r.TimerLagMean(); r.Monitor.Timers > 0 && lag > frame/2 {
		return false, fmt.Sprintf("agent timers ran %v late on average, more than half a %d-byte frame's %v at %.3g b/s (machine busy?)",
			lag, frameBytes, frame, r.LinkBps)
	}
	return true, ""
}
