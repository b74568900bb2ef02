package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/kernelhost"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/switchsw"
)

// KernelMTU is the interface MTU of kernel-stack hosts when the spec's host.mtu is unset: Ethernet's.
const KernelMTU = 1500

// KernelResult is a kernel-TCP run through Go switches.
type KernelResult struct {
	Dilation    float64
	LinkBps     float64 // the host links' emulated (dilated) rate
	Flows       []records.Flow
	Stats       []kernelhost.Stat
	Forwarder   ForwarderStats
	GoodputBps  []float64 // per flow: size x 8 / FCT, in real (dilated) time
	AggregateBp float64   // all bytes / (last finish - first start)
}

// DilateSwitch converts a switch config to dilation d: rates / d, delays and timers x d, bytes unchanged.
func DilateSwitch(c switchsw.Config, d float64) switchsw.Config {
	t := func(x clock.Time) clock.Time { return clock.Time(float64(x)*d + 0.5) }
	c.Ports = append([]switchsw.PortConfig(nil), c.Ports...)
	for i := range c.Ports {
		c.Ports[i].RateBps /= d
		c.Ports[i].Delay = t(c.Ports[i].Delay)
	}
	c.FlowControl.Refresh = t(c.FlowControl.Refresh)
	c.FlowletGap = t(c.FlowletGap)
	c.SampleEvery = t(c.SampleEvery)
	return c
}

// RunKernel brings lab l (host.transport kernel-tcp) up as namespaces named name, hosts its switches in
// a Forwarder at the spec's dilation, runs its flows as kernel TCP and tears everything down.
func RunKernel(ctx context.Context, name string, l *lab.Lab) (res *KernelResult, err error) {
	s := l.Spec
	if s.Host.Transport != "kernel-tcp" {
		return nil, fmt.Errorf("host.transport: %q, want kernel-tcp", s.Host.Transport)
	}
	if err := kernelhost.Available(s.Host.CC); err != nil {
		return nil, err
	}
	d := s.Dilation
	if d < 1 {
		d = 1
	}
	mtu := s.Host.MTU
	if mtu == 0 {
		mtu = KernelMTU
	}
	nl, err := netns.Up(ctx, name, l.Graph, netns.Options{MTU: mtu})
	if err != nil {
		return nil, err
	}
	defer func() {
		if derr := netns.Down(name); derr != nil {
			err = errors.Join(err, fmt.Errorf("tear down lab %s: %w", name, derr))
		}
	}()
	g := l.Graph
	var hosts []kernelhost.Host
	for _, h := range l.Hosts {
		hosts = append(hosts, kernelhost.Host{Device: g.Nodes[h.Node].Name, Index: g.Nodes[h.Node].Index})
	}
	if err := kernelhost.Setup(nl, hosts, kernelhost.Config{CC: s.Host.CC, ECN: s.Switch.ECN.ECNEnabled()}); err != nil {
		return nil, err
	}
	var sws []Switch
	for _, sd := range l.Switches {
		name := g.Nodes[sd.Node].Name
		sws = append(sws, Switch{Name: name, NSPath: nl.NSPath(name), Config: DilateSwitch(sd.Config, d)})
	}
	fwd, err := StartForwarder(sws, mtu)
	if err != nil {
		return nil, err
	}
	var flows []kernelhost.Flow
	for _, f := range l.Flows {
		if len(f.After) > 0 {
			return nil, fmt.Errorf("flow %d: kernel hosts cannot start a flow after others (traffic.Flow.After); use fixed start times", f.ID)
		}
		flows = append(flows, kernelhost.Flow{ID: f.ID, Src: f.Src, Dst: f.Dst, Size: f.Size,
			At: clock.Time(float64(f.At)*d + 0.5).Duration(), Ideal: clock.Time(float64(f.Ideal)*d + 0.5), Class: f.Class})
	}
	kr, rerr := kernelhost.Run(ctx, nl, flows, kernelhost.Options{CC: s.Host.CC,
		Timeout: time.Duration(float64(l.End.Duration())*d) + 30*time.Second})
	fs, ferr := fwd.Stop()
	if rerr != nil || ferr != nil {
		return nil, errors.Join(rerr, ferr)
	}
	res = &KernelResult{Dilation: d, Flows: kr.Flows, Stats: kr.Stats, Forwarder: fs}
	if len(l.Hosts) > 0 {
		res.LinkBps = g.LinkAt(l.Hosts[0].Node, 0).RateBps / d
	}
	var bytes int64
	var first, last clock.Time = -1, 0
	for _, f := range kr.Flows {
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
