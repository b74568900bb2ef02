package netns

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/monitor"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/report"
)

// RunOptions tune a netns run. The zero value is a sensible default.
type RunOptions struct {
	// Name is the lab name (default: "r" + a number unique to this process and moment).
	Name string
	// Agents is how many agent processes host the devices. 0 means DefaultAgents; a value >= the number
	// of devices gives one process per device.
	Agents int
	// Pcap selects ports to capture: "all", or a comma list of device:p<port> ("s0:p1,h3:p0"). Files go
	// to PcapDir as <device>-p<port>.pcap.
	Pcap    string
	PcapDir string
	// StartLead is how far in the future the common start time is set once every agent is ready
	// (default 100 ms): long enough that no agent starts late.
	StartLead time.Duration
	// FidelityBound is the fraction of frames that may leave later than one serialization time before
	// the run is marked unfaithful (default DefaultFidelityBound).
	FidelityBound float64
	// Realtime is the SCHED_FIFO priority of the agents' loop threads: 0 means DefaultRealtime, a
	// negative value keeps them on the default scheduler (see clock.RealtimeThread for why).
	Realtime int
	// Kernel runs the lab's kernel-tcp hosts (package kernelhost provides it; this package cannot import
	// kernelhost, which builds on it). Required when the lab has any.
	Kernel KernelHosts
	// KernelLead is how long (real time) after the agents' epoch the schedule starts when the lab has
	// kernel hosts: their TCP handshakes cross the agents' switches, so the switches must already run,
	// and connections are made before any flow's clock starts (default 1 s).
	KernelLead time.Duration
	// Progress, if set, receives one-line notes on what the run is doing.
	Progress func(string)
	// OnClock, if set, is called about every 250 ms of wall time while the run goes with how far the
	// slowest agent's clock has got (engine time in paper units, i.e. divided by the dilation) and how
	// many flows have completed: a progress bar's ETA in engine time.
	OnClock func(now clock.Time, completed, total int)
	// CrossCheck bounds the wall time of the schedule-keeping run the verdict compares against (the
	// same lab on the virtual backend, see crossCheck): 0 means DefaultCrossCheckBudget (or the netns
	// run's own wall time, if longer), negative skips it.
	CrossCheck time.Duration
	// MinCatchUpStep overrides the agents' floor on catch-up steps (0: their default, 1 us). Coarser
	// steps run a lab that is behind the wall clock faster and less faithfully: the cross-check says so.
	MinCatchUpStep clock.Time
	// Save, if set, is called with the run's records before the lab is torn down, so a crash in teardown
	// cannot lose a finished (or interrupted) run; its error is Run's.
	Save func(*records.Log, RunResult) error
	// OnAgents, if set, is called with the agents' PIDs and devices once they have been told to start
	// (tests use it to kill one mid-run).
	OnAgents func(pids map[int][]string)
}

// DefaultAgents: one process hosting every device measured best on 2 cores (idle-path slowdown 1.04
// with 1 agent, 1.35 with 2, 1.46 with one per device on NDC(2,1) at D=1000): a frame handed between
// engines of one agent still crosses a veth, but no cross-process wake-up sits on its path.
const DefaultAgents = 1

// KernelMTU is the link MTU of a lab with kernel-tcp hosts and no host.mtu: Ethernet's.
const KernelMTU = 1500

// DefaultFidelityBound: a run is faithful when at most 5% of frames left more than one serialization
// time (at the dilated rate) after their scheduled departure.
const DefaultFidelityBound = 0.05

// KernelHosts runs kernel-stack hosts alongside the agents.
type KernelHosts interface {
	// Setup configures the hosts' namespaces (addresses, neighbours, sysctls) before any agent starts.
	Setup(nl *Lab, hosts []lab.HostDev) error
	// Run connects (the agents already forward), then runs flows whose dilated start times are
	// relative to start (a CLOCK_MONOTONIC reading in ns, in the future), and returns their records in
	// the agents' time: start is offset after the agents' time 0.
	Run(ctx context.Context, nl *Lab, flows []lab.FlowPlan, start int64, offset clock.Time) ([]records.Flow, error)
}

// DefaultRealtime is a low real-time priority: above every ordinary process, below the kernel's own
// threaded interrupt handlers (50) so the veths' softirq work still runs.
const DefaultRealtime = 10

// RunResult says how a netns run ended.
type RunResult struct {
	End                          clock.Time // agent clock at the end (dilated)
	Dilation                     float64
	AllDone, TimedOut, Cancelled bool
	Fidelity                     report.Fidelity
	Monitor                      AgentFidelity // all agents summed; Max fields are the maximum
	// Deadlock is the run-time deadlock monitor's verdict (engine time). DeadlockWatched says whether
	// the monitor ran: it needs one agent hosting every device (the default).
	Deadlock        report.DeadlockVerdict
	DeadlockWatched bool
	Lab             string
	Agents          int
	Wall            time.Duration
}

type agentProc struct {
	cmd     *exec.Cmd
	devices []string
	in      io.WriteCloser
	enc     *json.Encoder
	msgs    chan AgentMsg
	exited  chan error // receives Wait's result once
	flows   int
}

func (p *agentProc) name() string {
	return fmt.Sprintf("agent pid %d (devices %s)", p.cmd.Process.Pid, strings.Join(p.devices, ","))
}

var runSeq int

// Run brings l up as a namespace lab, runs its engines in agent processes on real frames, and always
// tears the lab down before returning (also on ctx cancellation; a crash of this process is cleaned by
// `lab down`, which kills the agents the state directory lists). The records are in dilated time.
func Run(ctx context.Context, l *lab.Lab, opts RunOptions) (*records.Log, RunResult, error) {
	res := RunResult{Dilation: l.Spec.EffectiveDilation()}
	if err := checkRoot(); err != nil {
		return nil, res, err
	}
	if !AgentLinked {
		return nil, res, errors.New("netns backend: this binary does not contain the agent; import _ \"github.com/fabriclab/fabriclab/harness/netns/agent\"")
	}
	if err := Preflight(l); err != nil {
		return nil, res, err
	}
	dl, err := Dilate(l, res.Dilation)
	if err != nil {
		return nil, res, err
	}
	pcaps, err := parsePcap(opts.Pcap, l)
	if err != nil {
		return nil, res, err
	}
	if len(pcaps) > 0 && opts.PcapDir == "" {
		return nil, res, errors.New("pcap: a capture directory is needed (PcapDir)")
	}
	name := opts.Name
	if name == "" {
		runSeq++
		name = fmt.Sprintf("r%d-%d", os.Getpid()%100000, runSeq)
	}
	res.Lab = name
	progress := opts.Progress
	if progress == nil {
		progress = func(string) {}
	}
	var kernelFlows []lab.FlowPlan
	kernelLead := time.Duration(0)
	if len(dl.Kernel) > 0 {
		if opts.Kernel == nil {
			return nil, res, errors.New("host.transport: kernel-tcp hosts need a kernel-host runner (RunOptions.Kernel, from package kernelhost)")
		}
		kernelLead = opts.KernelLead
		if kernelLead <= 0 {
			kernelLead = time.Second
		}
		// Every flow, NIC or kernel, starts kernelLead late on the agents' clock, so the handshakes
		// happen on a running fabric and a mixed lab keeps its schedule's relative timing.
		shift := clock.Time(kernelLead.Nanoseconds()) * clock.Nanosecond
		kernel := map[int]bool{}
		for _, h := range dl.Kernel {
			kernel[h.Node] = true
		}
		var nic []lab.FlowPlan
		for _, f := range dl.Flows {
			if kernel[f.SrcNode] {
				kernelFlows = append(kernelFlows, f)
			} else {
				f.At += shift
				nic = append(nic, f)
			}
		}
		dl.Flows = nic
		dl.End += shift
	}
	nl, err := Up(ctx, name, l.Graph, Options{MTU: labMTU(l)})
	if err != nil {
		return nil, res, err
	}
	defer func() {
		if derr := Down(name); derr != nil {
			progress("teardown: " + derr.Error())
		}
	}()
	if len(dl.Kernel) > 0 {
		if err := opts.Kernel.Setup(nl, dl.Kernel); err != nil {
			return nil, res, err
		}
	}
	setups := splitAgents(l, dl, nl, opts.Agents, pcaps, opts.PcapDir)
	addFaults(setups, l, res.Dilation) // live.go
	rt := opts.Realtime
	if rt == 0 {
		rt = DefaultRealtime
	}
	for _, s := range setups {
		s.Realtime = max(rt, 0)
		s.MinCatchUpStep = opts.MinCatchUpStep
	}
	res.Agents = len(setups)
	progress(fmt.Sprintf("lab %s up: %d devices in %d agents, dilation %g", name, len(l.Graph.Nodes), len(setups), res.Dilation))

	procs := make([]*agentProc, 0, len(setups))
	defer func() {
		for _, p := range procs {
			p.kill()
		}
	}()
	for _, s := range setups {
		p, err := startAgent(name, s)
		if err != nil {
			return nil, res, err
		}
		procs = append(procs, p)
	}
	for _, p := range procs {
		if _, err := p.expect(ctx, "ready", 30*time.Second); err != nil {
			return nil, res, err
		}
	}
	lead := opts.StartLead
	if lead <= 0 {
		lead = 100 * time.Millisecond
	}
	epoch := clock.MonotonicNanos() + lead.Nanoseconds()
	for _, p := range procs {
		if err := p.enc.Encode(AgentMsg{Type: "start", Epoch: epoch, End: dl.End}); err != nil {
			return nil, res, fmt.Errorf("%s: start: %w", p.name(), err)
		}
	}
	wall := time.Now()
	progress("running")
	if opts.OnAgents != nil {
		m := map[int][]string{}
		for _, p := range procs {
			m[p.cmd.Process.Pid] = p.devices
		}
		opts.OnAgents(m)
	}

	type kernelOut struct {
		flows []records.Flow
		err   error
	}
	var kernelDone chan kernelOut
	kctx, kcancel := context.WithCancel(ctx)
	defer kcancel()
	if len(dl.Kernel) > 0 {
		kernelDone = make(chan kernelOut, 1)
		go func() {
			fl, err := opts.Kernel.Run(kctx, nl, kernelFlows, epoch+kernelLead.Nanoseconds(), clock.Time(kernelLead.Nanoseconds())*clock.Nanosecond)
			kernelDone <- kernelOut{fl, err}
		}()
	}
	var kernelRecs []records.Flow
	kernelPending := kernelDone != nil

	// Wait for every agent's "done", every agent's "end" (its clock reached the run's end), Ctrl-C, or an
	// agent's death; the wall-clock deadline is only a safety net.
	endWall := time.Duration(lead) + dl.End.Duration() + 2*time.Second
	if len(dl.Kernel) > 0 {
		endWall += 10 * time.Second // connection setup and the kernel's own retransmission timers
	}
	if len(procs) == 1 && len(dl.Kernel) == 0 {
		// One agent keeps the schedule even when it runs behind the wall clock (agent catchUp), so its
		// run may take longer than its length: up to 10 times, then it counts as timed out.
		endWall += 9*dl.End.Duration() + 30*time.Second
	}
	deadline := time.NewTimer(endWall)
	defer deadline.Stop()
	stopWhenDone := l.Spec.StopWhenDone()
	doneCount, endCount := 0, 0
	clocks, dones := make([]clock.Time, len(procs)), make([]int, len(procs))
	cases := mergeMsgs(procs)
wait:
	for (doneCount < len(procs) || kernelPending || !stopWhenDone) && (endCount < len(procs) || kernelPending) {
		select {
		case k := <-kernelDone:
			kernelPending = false
			if k.err != nil {
				return nil, res, fmt.Errorf("kernel hosts: %w", k.err)
			}
			kernelRecs = k.flows
		case ev := <-cases:
			p := procs[ev.i]
			switch {
			case ev.exit:
				return nil, res, fmt.Errorf("%s died mid-run: %v", p.name(), ev.err)
			case ev.m.Type == "done":
				doneCount++
			case ev.m.Type == "completed":
				// Flows in other agents may wait for these: every other agent hears of them.
				for j, q := range procs {
					if j != ev.i {
						if err := q.enc.Encode(AgentMsg{Type: "completed", Flows: ev.m.Flows, Finish: ev.m.Finish}); err != nil {
							return nil, res, fmt.Errorf("%s: relaying completions: %w", q.name(), err)
						}
					}
				}
			case ev.m.Type == "progress":
				clocks[ev.i], dones[ev.i] = ev.m.Now, ev.m.Done
				if opts.OnClock != nil {
					now, n := clocks[0], 0
					for j := range procs {
						now = min(now, clocks[j])
						n += dones[j]
					}
					opts.OnClock(clock.Time(float64(now)/res.Dilation), n+len(kernelRecs), len(l.Flows))
				}
			case ev.m.Type == "end":
				endCount++
			case ev.m.Type == "error":
				return nil, res, fmt.Errorf("%s: %s", p.name(), ev.m.Err)
			}
		case <-deadline.C:
			res.TimedOut = true
			break wait
		case <-ctx.Done():
			res.Cancelled = true
			break wait
		}
	}
	kcancel()
	if kernelPending {
		if k := <-kernelDone; k.err == nil {
			kernelRecs = k.flows
		}
	}
	for _, p := range procs {
		p.enc.Encode(AgentMsg{Type: "stop"})
	}
	got, err := collectRecords(cases, procs, 30*time.Second)
	if err != nil {
		return nil, res, err
	}
	log := &records.Log{}
	var fids []AgentFidelity
	for _, m := range got {
		if m.Deadlock != nil {
			res.DeadlockWatched = true
			if m.Deadlock.Detected && !res.Deadlock.Detected {
				res.Deadlock = *m.Deadlock
			}
		}
		log.Merge(m.Log)
		if m.Fidelity != nil {
			fids = append(fids, *m.Fidelity)
		}
		if m.Now > res.End {
			res.End = m.Now
		}
	}
	log.Flows = append(log.Flows, kernelRecs...)
	res.Wall = time.Since(wall)
	completed := 0
	for _, f := range log.Flows {
		if f.Completed {
			completed++
		}
	}
	res.AllDone = completed == len(l.Flows)
	if res.End >= dl.End && !res.AllDone {
		res.TimedOut = true
	}
	res.Monitor = sumFidelity(fids)
	bound := opts.FidelityBound
	if bound <= 0 {
		bound = DefaultFidelityBound
	}
	res.Fidelity = Verdict(res.Monitor, bound)
	res.Fidelity = stallVerdict(res.Fidelity, res.Monitor, log, stallBudget(dl))
	if len(dl.Kernel) == 0 && opts.CrossCheck >= 0 {
		res.Fidelity = crossCheck(ctx, l, log, res, opts.CrossCheck)
	}
	if res.Monitor.KernelFull > 0 {
		log.Violations = append(log.Violations, fmt.Sprintf("netns: the kernel refused %d frames (an agent fell behind reading)", res.Monitor.KernelFull))
	}
	sort.SliceStable(log.Flows, func(i, j int) bool { return log.Flows[i].ID < log.Flows[j].ID })
	for i, v := range log.Violations {
		log.Violations[i] = paperTimes(v, res.Dilation)
	}
	if opts.Save != nil {
		if err := opts.Save(log, res); err != nil {
			return log, res, err
		}
	}
	return log, res, nil
}

// Scheduled reports whether every frame the agents read was one they wrote themselves (one agent, no
// kernel hosts): those are taken at their scheduled arrival time, so how late the loop ran in wall time
// does not reach the results, only how late it took frames against their schedule.
func (m AgentFidelity) Scheduled() bool {
	return m.Arrivals > 0 && m.Arrivals+m.Malformed >= m.RxFrames
}

// Verdict applies the fidelity rule: unfaithful when more than bound of the frames were late by more
// than one serialization time (at the dilated rate). For a scheduled lab (AgentFidelity.Scheduled) late
// means taken by the receiving engine after its scheduled arrival, and a frame the kernel refused is
// unfaithful by itself; otherwise it means written after its scheduled departure, since the receiver
// takes a frame when it reads it.
func Verdict(m AgentFidelity, bound float64) report.Fidelity {
	if m.Frames == 0 {
		return report.Fidelity{Faithful: true, Reason: "no frames sent"}
	}
	if m.Scheduled() {
		frac := float64(m.LateArrivals) / float64(m.Arrivals)
		detail := fmt.Sprintf("%d of %d frames (%.2f%%) taken more than one serialization time after their scheduled arrival (bound %.2g%%), mean error %v, max %v; in wall time %d of %d left late (mean %v, max %v); timer lag mean %v, max %v (due at %v)",
			m.LateArrivals, m.Arrivals, 100*frac, 100*bound, m.SumArrivalErr/clock.Time(m.Arrivals), m.MaxArrivalErr,
			m.LateFrames, m.Frames, m.SumLateness/clock.Time(m.Frames), m.MaxLateness,
			m.TimerLagSum/clock.Time(max(m.Timers, 1)), m.TimerLagMax, m.TimerLagAt)
		detail += loopDetail(m)
		switch {
		case m.KernelFull > 0:
			return report.Fidelity{Faithful: false, Reason: fmt.Sprintf("the kernel refused %d frames (the agent fell behind reading); %s", m.KernelFull, detail)}
		case frac > bound:
			return report.Fidelity{Faithful: false, Reason: "agents could not keep up with the schedule: " + detail}
		}
		return report.Fidelity{Faithful: true, Reason: detail}
	}
	frac := float64(m.LateFrames) / float64(m.Frames)
	detail := fmt.Sprintf("%d of %d frames (%.2f%%) left more than one serialization time late (bound %.2g%%); mean lateness %v, max %v; timer lag mean %v, max %v (due at %v)",
		m.LateFrames, m.Frames, 100*frac, 100*bound, m.SumLateness/clock.Time(m.Frames), m.MaxLateness,
		m.TimerLagSum/clock.Time(max(m.Timers, 1)), m.TimerLagMax, m.TimerLagAt)
	detail += loopDetail(m)
	if frac > bound {
		return report.Fidelity{Faithful: false, Reason: "agents could not keep up: " + detail}
	}
	return report.Fidelity{Faithful: true, Reason: detail}
}

// loopDetail is the loop instrumentation every verdict reason ends with.
func loopDetail(m AgentFidelity) string {
	d := fmt.Sprintf("; timers late >10us/100us/1ms/10ms: %d/%d/%d/%d of %d; loop %d iterations (%d catch-up steps), %.0f%% of wall waiting for frames",
		m.LagOver[0], m.LagOver[1], m.LagOver[2], m.LagOver[3], m.Timers, m.Loops, m.CatchUpSteps,
		100*float64(m.PollTime)/float64(max(m.PollTime+m.BusyTime, 1)))
	if m.RealtimeErr != "" {
		d += "; loop not real-time: " + m.RealtimeErr
	}
	return d
}

// stallBudget is the longest loop stall PFC headroom absorbs: once a pause is due, headroom covers
// about one round trip of the shortest link (2 x its delay, dilated) of frames still arriving. A
// stall longer than that lets an upstream agent, catching up on its timers, send past a pause it has
// not read yet.
func stallBudget(dl *Dilated) clock.Time {
	var d clock.Time = -1
	for _, x := range dl.LinkDelay {
		if d < 0 || x < d {
			d = x
		}
	}
	return 2 * max(d, 0)
}

// stallVerdict makes a run with lossless drops unfaithful when the agents stalled for longer than the
// headroom covers: those drops are the machine's, and a suite must not read them as the flow control's.
// The drops stay in the log as violations either way; with no such stall they are the engines' own.
func stallVerdict(f report.Fidelity, m AgentFidelity, log *records.Log, budget clock.Time) report.Fidelity {
	if !f.Faithful || m.TimerLagMax <= budget || m.Scheduled() {
		// A scheduled lab kept to its schedule through the stall (Verdict checked): its drops are the
		// engines' own.
		return f
	}
	n := 0
	for _, d := range log.Drops {
		if d.Lossless {
			n++
		}
	}
	if n == 0 {
		return f
	}
	return report.Fidelity{Faithful: false, Reason: fmt.Sprintf(
		"%d lossless drops after an agent stalled %v, longer than the %v of arrivals PFC headroom covers (machine busy?); %s",
		n, m.TimerLagMax, budget, f.Reason)}
}

func sumFidelity(fs []AgentFidelity) AgentFidelity {
	var s AgentFidelity
	for _, f := range fs {
		s.Frames += f.Frames
		s.LateFrames += f.LateFrames
		s.SumLateness += f.SumLateness
		s.MaxLateness = max(s.MaxLateness, f.MaxLateness)
		s.Timers += f.Timers
		s.TimerLagSum += f.TimerLagSum
		if f.TimerLagMax > s.TimerLagMax {
			s.TimerLagMax, s.TimerLagAt = f.TimerLagMax, f.TimerLagAt
		}
		s.KernelFull += f.KernelFull
		s.Malformed += f.Malformed
		s.RxFrames += f.RxFrames
		s.Loops += f.Loops
		s.CatchUpSteps += f.CatchUpSteps
		s.Arrivals += f.Arrivals
		s.LateArrivals += f.LateArrivals
		s.SumArrivalErr += f.SumArrivalErr
		s.MaxArrivalErr = max(s.MaxArrivalErr, f.MaxArrivalErr)
		s.PollWakes += f.PollWakes
		s.PollTimeout += f.PollTimeout
		s.PollTime += f.PollTime
		s.BusyTime += f.BusyTime
		for i := range s.LagOver {
			s.LagOver[i] += f.LagOver[i]
		}
		s.Realtime = s.Realtime || f.Realtime
		if f.RealtimeErr != "" {
			s.RealtimeErr = f.RealtimeErr
		}
	}
	return s
}

// labMTU fits the largest frame the engines make: a data packet of the host MTU with a full source
// route, or the switch MTU.
func labMTU(l *lab.Lab) int {
	for _, h := range l.Hosts {
		if IsKernelHost(h) {
			// The kernel sizes its segments to the interface: the link MTU is the host MTU.
			if l.Spec.Host.MTU > 0 {
				return min(l.Spec.Host.MTU, MaxMTU)
			}
			return KernelMTU
		}
	}
	m := DefaultMTU
	for _, h := range l.Hosts {
		if need := h.Config.MTU + 200; need > m {
			m = need
		}
	}
	for _, s := range l.Switches {
		if s.Config.MTU > m {
			m = s.Config.MTU
		}
	}
	return min(m, MaxMTU)
}

// dataFrameBytes is the largest data frame the NICs send (payload MTU plus RoCEv2 headers).
func dataFrameBytes(l *lab.Lab) int {
	for _, h := range l.Hosts {
		if IsKernelHost(h) {
			return labMTU(l) + 14
		}
	}
	m := nodes.DefaultMTU
	for _, h := range l.Hosts {
		m = max(m, h.Config.MTU)
	}
	return pkt.DataSize(m, 0)
}

// splitAgents deals devices to n agents, each a connected part of the fabric (connectedParts): most
// frames then stay inside one agent, where they are taken at their scheduled arrival.
func splitAgents(l *lab.Lab, dl *Dilated, nl *Lab, n int, pcaps map[PcapPort]bool, pcapDir string) []*AgentSetup {
	g := l.Graph
	devs := len(dl.Switches) + len(dl.Hosts)
	if n <= 0 {
		n = DefaultAgents
	}
	n = min(n, devs)
	setups := make([]*AgentSetup, n)
	for i := range setups {
		setups[i] = &AgentSetup{Lab: nl.Name, MTU: nl.MTU, PcapDir: pcapDir, FrameBytes: dataFrameBytes(l)}
	}
	if n == 1 && len(dl.Kernel) == 0 {
		setups[0].StopWhenDone = l.Spec.StopWhenDone()
		setups[0].Monitor = &AgentMonitor{Graph: g, FlowControl: l.Spec.Switch.FlowControl, Config: monitor.Dilated(dl.D)}
	}
	ports := func(node int) []AgentPort {
		out := make([]AgentPort, len(g.Nodes[node].Ports))
		for i, li := range g.Nodes[node].Ports {
			lk := g.Links[li]
			peer := g.Peer(node, i)
			out[i] = AgentPort{Ifname: PortName(i), RateBps: lk.RateBps / dl.D, Delay: dl.LinkDelay[li],
				PeerNode: peer.Node, PeerPort: peer.Port}
		}
		return out
	}
	agentOf := connectedParts(g, dl, n)
	owner := map[int]int{}
	add := func(node int, dev AgentDevice) {
		s := setups[agentOf[node]]
		owner[node] = agentOf[node]
		dev.Name, dev.Node, dev.NSPath, dev.Ports = g.Nodes[node].Name, node, nl.NSPath(g.Nodes[node].Name), ports(node)
		s.Devices = append(s.Devices, dev)
		for i := range dev.Ports {
			if pcaps[PcapPort{Device: dev.Name, Port: i}] {
				s.Pcap = append(s.Pcap, PcapPort{Device: dev.Name, Port: i})
			}
		}
	}
	for _, h := range dl.Hosts {
		c := h.Config
		add(h.Node, AgentDevice{Host: &c})
	}
	for _, s := range dl.Switches {
		c := s.Config
		add(s.Node, AgentDevice{Switch: &c})
	}
	src := map[uint32]int{}
	for _, f := range dl.Flows {
		src[f.ID] = f.SrcNode
	}

	for _, f := range dl.Flows {
		s := setups[owner[f.SrcNode]]
		s.Flows = append(s.Flows, AgentFlow{Node: f.SrcNode, At: f.At, Flow: f.NICFlow(), After: f.After})
		for _, id := range f.After {
			if o := owner[src[id]]; o != owner[f.SrcNode] {
				if setups[o].Remote == nil {
					setups[o].Remote = map[uint32]bool{}
				}
				setups[o].Remote[id] = true
			}
		}
	}
	// An agent that got no device (fewer connected parts than agents) is not started.
	return slices.DeleteFunc(setups, func(s *AgentSetup) bool { return len(s.Devices) == 0 })
}

// connectedParts assigns each agent-hosted device to one of n agents, each a connected region: n seeds
// spread apart (each the device farthest from the seeds before it), then the regions grow in turn, one
// device at a time from their own frontier, up to an equal share (ceil(devices/n)); a device left over
// joins a neighbouring region. Dealing hosts to one agent and switches to the other, as it did before,
// put every frame of a run on a cross-process hop.
func connectedParts(g *topo.Graph, dl *Dilated, n int) map[int]int {
	hosted := map[int]bool{}
	var nodes []int
	for _, h := range dl.Hosts {
		hosted[h.Node] = true
	}
	for _, s := range dl.Switches {
		hosted[s.Node] = true
	}
	for v := range g.Nodes {
		if hosted[v] {
			nodes = append(nodes, v)
		}
	}
	out := map[int]int{}
	if len(nodes) == 0 {
		return out
	}
	neighbours := func(v int) []int {
		var ns []int
		for p := range g.Nodes[v].Ports {
			if w := g.Peer(v, p).Node; hosted[w] {
				ns = append(ns, w)
			}
		}
		return ns
	}
	// dist[v]: hops from v to the nearest seed so far (breadth-first from every seed).
	const far = 1 << 30
	dist := map[int]int{}
	for _, v := range nodes {
		dist[v] = far
	}
	var seeds []int
	for len(seeds) < n {
		seed, best := -1, -1
		for _, v := range nodes {
			if dist[v] > best && dist[v] > 0 {
				seed, best = v, dist[v]
			}
		}
		if seed < 0 {
			break
		}
		seeds = append(seeds, seed)
		dist[seed] = 0
		queue := []int{seed}
		for len(queue) > 0 {
			v := queue[0]
			queue = queue[1:]
			for _, w := range neighbours(v) {
				if dist[w] > dist[v]+1 {
					dist[w] = dist[v] + 1
					queue = append(queue, w)
				}
			}
		}
	}
	share := (len(nodes) + len(seeds) - 1) / len(seeds)
	agentOf := map[int]int{}
	frontier := make([][]int, len(seeds))
	size := make([]int, len(seeds))
	for a, v := range seeds {
		agentOf[v] = a + 1 // +1: the zero value means unassigned
		size[a] = 1
		frontier[a] = neighbours(v)
	}
	for grew := true; grew; {
		grew = false
		for a := range seeds {
			for size[a] < share && len(frontier[a]) > 0 {
				v := frontier[a][0]
				frontier[a] = frontier[a][1:]
				if agentOf[v] != 0 {
					continue
				}
				agentOf[v] = a + 1
				size[a]++
				frontier[a] = append(frontier[a], neighbours(v)...)
				grew = true
				break // one device per region per turn keeps the regions growing evenly
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, v := range nodes {
			if agentOf[v] != 0 {
				continue
			}
			for _, w := range neighbours(v) {
				if agentOf[w] != 0 {
					agentOf[v], changed = agentOf[w], true
					break
				}
			}
		}
	}
	for _, v := range nodes {
		out[v] = max(agentOf[v], 1) - 1 // a device with no hosted neighbour at all: agent 0
	}
	return out
}

// parsePcap resolves a --pcap selection against the lab's devices.
func parsePcap(sel string, l *lab.Lab) (map[PcapPort]bool, error) {
	ends, err := virtual.PortSelection(l.Graph, sel)
	if err != nil {
		return nil, err
	}
	out := map[PcapPort]bool{}
	for _, e := range ends {
		out[PcapPort{Device: l.Graph.Nodes[e.Node].Name, Port: e.Port}] = true
	}
	return out, nil
}

func startAgent(labName string, s *AgentSetup) (*agentProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("agent: cannot find this binary to re-execute: %w", err)
	}
	cmd := exec.Command(exe)
	token, tokenEnv := ProcessToken(labName)
	cmd.Env = append(os.Environ(), AgentEnv+"=1", tokenEnv)
	cmd.Stderr = os.Stderr
	// The agent dies with us even if we are SIGKILLed (no deferred cleanup runs then).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &agentProc{cmd: cmd, in: in, enc: json.NewEncoder(in), msgs: make(chan AgentMsg, 16), exited: make(chan error, 1), flows: len(s.Flows)}
	for _, d := range s.Devices {
		p.devices = append(p.devices, d.Name)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if err := recordAgent(labName, cmd.Process.Pid, token); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	go func() {
		dec := json.NewDecoder(bufio.NewReader(out))
		for {
			var m AgentMsg
			if err := dec.Decode(&m); err != nil {
				if !errors.Is(err, io.EOF) {
					fmt.Fprintf(os.Stderr, "netns: %s: unreadable message: %v\n", p.name(), err)
				}
				close(p.msgs)
				p.exited <- cmd.Wait()
				return
			}
			p.msgs <- m
		}
	}()
	if err := p.enc.Encode(AgentMsg{Type: "setup", Setup: s}); err != nil {
		return p, fmt.Errorf("%s: setup: %w", p.name(), err)
	}
	return p, nil
}

func (p *agentProc) kill() {
	if p.cmd.ProcessState == nil {
		p.in.Close()
		p.cmd.Process.Kill()
	}
}

// expect waits for a message of type typ from p (before the run, when nothing else is read).
func (p *agentProc) expect(ctx context.Context, typ string, timeout time.Duration) (AgentMsg, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m, ok := <-p.msgs:
		if !ok {
			return m, fmt.Errorf("%s exited before %s: %v", p.name(), typ, <-p.exited)
		}
		if m.Type == "error" {
			return m, fmt.Errorf("%s: %s", p.name(), m.Err)
		}
		if m.Type != typ {
			return m, fmt.Errorf("%s: sent %q, expected %q", p.name(), m.Type, typ)
		}
		return m, nil
	case <-t.C:
		return AgentMsg{}, fmt.Errorf("%s: no %s within %v", p.name(), typ, timeout)
	case <-ctx.Done():
		return AgentMsg{}, ctx.Err()
	}
}

type agentEvent struct {
	i    int
	m    AgentMsg
	exit bool
	err  error
}

// mergeMsgs fans every agent's messages (and its exit) into one channel.
func mergeMsgs(procs []*agentProc) chan agentEvent {
	ch := make(chan agentEvent, 16*len(procs))
	for i, p := range procs {
		go func() {
			for m := range p.msgs {
				ch <- agentEvent{i: i, m: m}
			}
			err := <-p.exited
			if err == nil {
				err = errors.New("exited")
			}
			ch <- agentEvent{i: i, exit: true, err: err}
		}()
	}
	return ch
}

// collectRecords waits for every agent's records; an agent that exits first is named in the error.
func collectRecords(ch chan agentEvent, procs []*agentProc, timeout time.Duration) ([]AgentMsg, error) {
	got := map[int]AgentMsg{}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for len(got) < len(procs) {
		select {
		case ev := <-ch:
			q := procs[ev.i]
			_, have := got[ev.i]
			switch {
			case ev.exit && !have:
				return nil, fmt.Errorf("%s died before handing over its records: %v", q.name(), ev.err)
			case ev.m.Type == "error":
				return nil, fmt.Errorf("%s: %s", q.name(), ev.m.Err)
			case ev.m.Type == "records":
				got[ev.i] = ev.m
			}
		case <-t.C:
			var missing []string
			for i, p := range procs {
				if _, ok := got[i]; !ok {
					missing = append(missing, p.name())
				}
			}
			return nil, fmt.Errorf("no records within %v from %s", timeout, strings.Join(missing, "; "))
		}
	}
	out := make([]AgentMsg, len(procs))
	for i := range procs {
		out[i] = got[i]
	}
	return out, nil
}
