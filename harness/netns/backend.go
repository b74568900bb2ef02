// Package netns is the netns backend: it runs a lab's spec on namespaces and veths (package nslink)
// with agents (harness/netns/agent) moving frames on ports (portio) in lockstep (lockstep). It plans the
// run (the split of devices among agents, split.go; the dilation, autodilate.go, calibrate.go,
// backend_dilate.go; the preflight), starts and coordinates the agents (backend_run.go,
// backend_coord.go, machines.go for several machines), merges their records and judges the run's
// fidelity (backend.go, crosscheck.go).
package netns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/nslink"

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
	// Machines, if set, carries the run over several machines, one agent each (machines.go): nothing
	// is made on this one.
	Machines Machines
	// Standing, if set, is the lab's namespaces already up (BringUp, for a calibration on its own
	// fabric first): the run uses them, under their name, and leaves them up for the caller to Down.
	Standing *Standing
}

// DefaultAgents is what a library caller or a suite gets without asking: one process hosting every
// device, so a test's cost does not depend on the machine it lands on. `lab run` without --agents
// chooses instead (ChooseAgents, agents.go): from the fabric's forecast and the CPUs the machine has
// free. Any count gives identical results; only the wall time differs.
const DefaultAgents = 1

// KernelMTU is the link MTU of a lab with kernel-tcp hosts and no host.mtu: Ethernet's.
const KernelMTU = 1500

// DefaultFidelityBound: a run is faithful when at most 5% of frames left more than one serialization
// time (at the dilated rate) after their scheduled departure.
const DefaultFidelityBound = 0.05

// KernelHosts runs kernel-stack hosts alongside the agents.
type KernelHosts interface {
	// Setup configures the hosts' namespaces (addresses, neighbours, sysctls) before any agent starts.
	Setup(nl *nslink.Lab, hosts []lab.HostDev) error
	// Run connects (the agents already forward), then runs flows whose dilated start times are
	// relative to start (a CLOCK_MONOTONIC reading in ns, in the future), and returns their records in
	// the agents' time: start is offset after the agents' time 0.
	Run(ctx context.Context, nl *nslink.Lab, flows []lab.FlowPlan, start int64, offset clock.Time) ([]records.Flow, error)
}

// DefaultRealtime is a low real-time priority: above every ordinary process, below the kernel's own
// threaded interrupt handlers (50) so the veths' softirq work still runs.
const DefaultRealtime = 10

// RunResult says how a netns run ended.
type RunResult struct {
	End                          clock.Time // agent clock at the end (dilated)
	Dilation                     float64
	DilationWhy                  string // why this D, when the spec left it to the backend (AutoDilation)
	AllDone, TimedOut, Cancelled bool
	Fidelity                     report.Fidelity
	Monitor                      lockstep.AgentFidelity // all agents summed; Max fields are the maximum
	// Deadlock is the run-time deadlock monitor's verdict (engine time). DeadlockWatched says whether
	// the monitor ran: it needs one agent hosting every device (the default).
	Deadlock        report.DeadlockVerdict
	DeadlockWatched bool
	Lab             string
	Agents          int
	// Cut is how the devices were split across agents (several agents).
	Cut  CutReport
	Wall time.Duration
	// Partial: a machine was lost mid-run (Lost says which and why: silent, gone, stalled); the records
	// are the others', up to Agreed, the last lockstep window every machine had reached (End too).
	Partial bool
	Lost    []string
	Agreed  clock.Time
	// Machines is what the machines report of themselves (their clock offsets), for run.json.
	Machines any
	// Twin is the cross-check's virtual run compared with this one (nil: it did not run, or not to its
	// end): `lab run --check-against virtual` reports on it instead of running the twin again.
	Twin *VirtualTwin
}

// Verdict applies the fidelity rule: unfaithful when more than bound of the frames were late by more
// than one serialization time (at the dilated rate). For a scheduled lab (AgentFidelity.Scheduled) late
// means taken by the receiving engine after its scheduled arrival, and a frame the kernel refused is
// unfaithful by itself; otherwise it means written after its scheduled departure, since the receiver
// takes a frame when it reads it.
func Verdict(m lockstep.AgentFidelity, bound float64) report.Fidelity {
	if m.Frames == 0 {
		return report.Fidelity{Faithful: true, Reason: "no frames sent"}
	}
	if m.Scheduled() {
		frac := float64(m.LateArrivals) / float64(m.Arrivals)
		detail := fmt.Sprintf("%d of %d frames (%.2f%%) taken more than one serialization time after their scheduled arrival (bound %.2g%%), mean error %v, max %v; in wall time %d of %d left late (mean %v, max %v); timer lag mean %v, max %v (due at %v)",
			m.LateArrivals, m.Arrivals, 100*frac, 100*bound, meanPs(m.SumArrivalErr, m.Arrivals), m.MaxArrivalErr,
			m.LateFrames, m.Frames, meanPs(m.SumLateness, m.Frames), m.MaxLateness,
			meanPs(m.TimerLagSum, m.Timers), m.TimerLagMax, m.TimerLagAt)
		detail += loopDetail(m)
		switch {
		case m.LateCross > 0 || m.LostCross > 0:
			return report.Fidelity{Faithful: false, Reason: fmt.Sprintf("lockstep failed: %d cross-agent frames read after their due time (worst %v), %d lost on the way; %s",
				m.LateCross, m.MaxCrossLate, m.LostCross, detail)}
		case m.KernelFull > 0:
			return report.Fidelity{Faithful: false, Reason: fmt.Sprintf("the kernel refused %d frames (the agent fell behind reading); %s", m.KernelFull, detail)}
		case frac > bound:
			return report.Fidelity{Faithful: false, Reason: "agents could not keep up with the schedule: " + detail}
		}
		return report.Fidelity{Faithful: true, Reason: detail}
	}
	frac := float64(m.LateFrames) / float64(m.Frames)
	detail := fmt.Sprintf("%d of %d frames (%.2f%%) left more than one serialization time late (bound %.2g%%); mean lateness %v, max %v; timer lag mean %v, max %v (due at %v)",
		m.LateFrames, m.Frames, 100*frac, 100*bound, meanPs(m.SumLateness, m.Frames), m.MaxLateness,
		meanPs(m.TimerLagSum, m.Timers), m.TimerLagMax, m.TimerLagAt)
	detail += loopDetail(m)
	switch {
	case m.LateCross > 0 || m.LostCross > 0:
		// Kernel hosts in lockstep: frames between agents are still taken against their stamps.
		return report.Fidelity{Faithful: false, Reason: fmt.Sprintf("lockstep failed: %d cross-agent frames read after their due time (worst %v), %d lost on the way; %s",
			m.LateCross, m.MaxCrossLate, m.LostCross, detail)}
	case frac > bound:
		return report.Fidelity{Faithful: false, Reason: "agents could not keep up: " + detail}
	}
	return report.Fidelity{Faithful: true, Reason: detail}
}

// meanPs is a mean of n picosecond values summing to sum.
func meanPs(sum float64, n uint64) clock.Time { return clock.Time(sum / float64(max(n, 1))) }

// loopDetail is the loop instrumentation every verdict reason ends with.
func loopDetail(m lockstep.AgentFidelity) string {
	d := fmt.Sprintf("; timers late >10us/100us/1ms/10ms: %d/%d/%d/%d of %d; loop %d iterations (%d catch-up steps), %.0f%% of wall waiting for frames",
		m.LagOver[0], m.LagOver[1], m.LagOver[2], m.LagOver[3], m.Timers, m.Loops, m.CatchUpSteps,
		100*float64(m.PollTime)/float64(max(m.PollTime+m.BusyTime, 1)))
	if m.CrossFrames > 0 || m.BadStamps > 0 {
		d += fmt.Sprintf("; lockstep: %d cross-agent frames, %d late, %d lost, %d stale, %d without a valid stamp; %d flows started late after a completion in another agent",
			m.CrossFrames, m.LateCross, m.LostCross, m.StaleCross, m.BadStamps, m.LateStarts)
	}
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
func stallVerdict(f report.Fidelity, m lockstep.AgentFidelity, log *records.Log, budget clock.Time) report.Fidelity {
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

func sumFidelity(fs []lockstep.AgentFidelity) lockstep.AgentFidelity {
	var s lockstep.AgentFidelity
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
		s.CPUTime += f.CPUTime
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
		s.CrossFrames += f.CrossFrames
		s.LateCross += f.LateCross
		s.MaxCrossLate = max(s.MaxCrossLate, f.MaxCrossLate)
		s.BadStamps += f.BadStamps
		s.LostCross += f.LostCross
		s.StaleCross += f.StaleCross
		s.LateStarts += f.LateStarts
		s.Realtime = s.Realtime || f.Realtime
		if f.RealtimeErr != "" {
			s.RealtimeErr = f.RealtimeErr
		}
		if s.Datapath == "" || strings.Contains(f.Datapath, "AF_PACKET") { // a refusal is what to show
			s.Datapath = f.Datapath
		}
	}
	return s
}

// labMTU fits the largest frame the engines make, with room for the lockstep stamp a frame carries on a
// link between two agents: a data packet of host.mtu bytes of payload with a full source route (the
// switches' MTU, lab.maxFrame: payload + 58 bytes of RoCEv2 headers + the route option), less the 14
// bytes of Ethernet header an interface's MTU does not count, plus 16. Every other frame (PFC, ACK,
// CNP, probe) is smaller. There is no floor (it was 1500+16): host.mtu 1000 with a 5-hop source route is
// an MTU of 1068, and a 1500-byte underlay (VXLAN adds 50) carries host.mtu up to about 1380.
func labMTU(l *lab.Lab) int {
	for _, h := range l.Hosts {
		if IsKernelHost(h) {
			// The kernel sizes its segments to the interface: the link MTU is the host MTU.
			if l.Spec.Host.MTU > 0 {
				return min(l.Spec.Host.MTU, nslink.MaxMTU)
			}
			return KernelMTU
		}
	}
	frame := 0
	for _, s := range l.Switches {
		frame = max(frame, s.Config.MTU)
	}
	if frame == 0 {
		// No switch to say it: a bound on any source route.
		for _, h := range l.Hosts {
			frame = max(frame, h.Config.MTU+200)
		}
	}
	return min(max(frame-pkt.EthHdr+lockstep.StampLen, nslink.MinMTU), nslink.MaxMTU)
}

// DataFrameBytes is the largest data frame the NICs send (payload MTU plus RoCEv2 headers).
func DataFrameBytes(l *lab.Lab) int {
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

// SplitAgents deals devices to n agents so that few of the frames the workload will send cross between
// agents, balanced by expected frame rate (TrafficParts), and says what the split cuts.
func SplitAgents(l *lab.Lab, dl *Dilated, nl *nslink.Lab, n int, pcaps map[lockstep.PcapPort]bool, pcapDir string, given *plannedSplit) ([]*lockstep.AgentSetup, CutReport) {
	g := l.Graph
	devs := len(dl.Switches) + len(dl.Hosts)
	if n <= 0 {
		n = DefaultAgents
	}
	n = min(n, devs)
	setups := make([]*lockstep.AgentSetup, n)
	for i := range setups {
		setups[i] = &lockstep.AgentSetup{Lab: nl.Name, MTU: nl.MTU, PcapDir: pcapDir, FrameBytes: DataFrameBytes(l), EngineDilation: dl.EngineD}
	}
	var agentOf map[int]int
	var cut CutReport
	if given != nil {
		// The parts machines were made with (upMachines): the split must be exactly theirs (the
		// refinement breaks ties in map order, so a second call may differ).
		agentOf, cut = given.part, given.cut
	} else {
		agentOf, cut = TrafficParts(l, dl, n)
	}
	parts := map[int]bool{}
	for _, a := range agentOf {
		parts[a] = true
	}
	mon := &lockstep.AgentMonitor{Graph: g, FlowControl: l.Spec.Switch.FlowControl, Config: monitor.Dilated(dl.D)}
	switch {
	case len(parts) > 1:
		// Several agents run in lockstep (lockstep.go); the coordinator merges their stalled queues.
		for _, s := range setups {
			s.Lockstep = true
			if len(dl.Kernel) == 0 {
				s.Sample = mon
			}
		}
	case len(dl.Kernel) == 0:
		for _, s := range setups {
			s.StopWhenDone = l.Spec.StopWhenDone()
			s.Monitor = mon
		}
	}
	ports := func(node int) []lockstep.AgentPort {
		out := make([]lockstep.AgentPort, len(g.Nodes[node].Ports))
		for i, li := range g.Nodes[node].Ports {
			lk := g.Links[li]
			peer := g.Peer(node, i)
			out[i] = lockstep.AgentPort{Ifname: nslink.PortName(i), RateBps: lk.RateBps / dl.D, Delay: dl.LinkDelay[li],
				PeerNode: peer.Node, PeerPort: peer.Port}
			if a, hosted := agentOf[peer.Node]; hosted && a != agentOf[node] {
				out[i].TxChan, out[i].RxChan = cutChans(li, node, i, peer.Node, peer.Port)
			}
		}
		return out
	}
	owner := map[int]int{}
	add := func(node int, dev lockstep.AgentDevice) {
		s := setups[agentOf[node]]
		owner[node] = agentOf[node]
		dev.Name, dev.Node, dev.NSPath, dev.Ports = g.Nodes[node].Name, node, nl.NSPath(g.Nodes[node].Name), ports(node)
		s.Devices = append(s.Devices, dev)
		for i := range dev.Ports {
			if pcaps[lockstep.PcapPort{Device: dev.Name, Port: i}] {
				s.Pcap = append(s.Pcap, lockstep.PcapPort{Device: dev.Name, Port: i})
			}
		}
	}
	for _, h := range dl.Hosts {
		c := h.Config
		if dl.EngineD > 0 {
			c = dl.Paper.Hosts[h.Node]
		}
		add(h.Node, lockstep.AgentDevice{Host: &c})
	}
	for _, s := range dl.Switches {
		c := s.Config
		if dl.EngineD > 0 {
			c = dl.Paper.Switches[s.Node]
		}
		add(s.Node, lockstep.AgentDevice{Switch: &c})
	}
	src := map[uint32]int{}
	for _, f := range dl.Flows {
		src[f.ID] = f.SrcNode
	}

	for _, f := range dl.Flows {
		s := setups[owner[f.SrcNode]]
		fl := f.NICFlow()
		if dl.EngineD > 0 {
			fl = dl.Paper.Flows[f.ID]
		}
		s.Flows = append(s.Flows, lockstep.AgentFlow{Node: f.SrcNode, At: f.At, Flow: fl, After: f.After})
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
	return slices.DeleteFunc(setups, func(s *lockstep.AgentSetup) bool { return len(s.Devices) == 0 }), cut
}

// cutChans numbers the two directions of cut link li: 2li+1 from the end with the smaller (node, port),
// 2li+2 from the other; it returns the channel out of (node, port) and the one into it.
func cutChans(li, node, port, peerNode, peerPort int) (tx, rx int) {
	if node < peerNode || node == peerNode && port < peerPort {
		return 2*li + 1, 2*li + 2
	}
	return 2*li + 2, 2*li + 1
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
func parsePcap(sel string, l *lab.Lab) (map[lockstep.PcapPort]bool, error) {
	ends, err := virtual.PortSelection(l.Graph, sel)
	if err != nil {
		return nil, err
	}
	out := map[lockstep.PcapPort]bool{}
	for _, e := range ends {
		out[lockstep.PcapPort{Device: l.Graph.Nodes[e.Node].Name, Port: e.Port}] = true
	}
	return out, nil
}

// expect waits for a message of type typ from p (before the run, when nothing else is read).
func (p *agentProc) expect(ctx context.Context, typ string, timeout time.Duration) (lockstep.AgentMsg, error) {
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
		return lockstep.AgentMsg{}, fmt.Errorf("%s: no %s within %v", p.name(), typ, timeout)
	case <-ctx.Done():
		return lockstep.AgentMsg{}, ctx.Err()
	}
}

type agentEvent struct {
	i    int
	m    lockstep.AgentMsg
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

// collectRecords waits for every agent's records; an agent that exits first is named in the error,
// unless lost accepts its loss (a machine of a run over several: the others' records are still kept).
// Agents already lost are not waited for; their records are empty.
func collectRecords(ch chan agentEvent, procs []*agentProc, timeout time.Duration, gone []int, lost func(int, error) bool) ([]lockstep.AgentMsg, error) {
	got := map[int]lockstep.AgentMsg{}
	for _, i := range gone {
		got[i] = lockstep.AgentMsg{Type: "records"}
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for len(got) < len(procs) {
		select {
		case ev := <-ch:
			q := procs[ev.i]
			_, have := got[ev.i]
			switch {
			case ev.exit && !have && lost != nil && lost(ev.i, ev.err):
				got[ev.i] = lockstep.AgentMsg{Type: "records"}
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
	out := make([]lockstep.AgentMsg, len(procs))
	for i := range procs {
		out[i] = got[i]
	}
	return out, nil
}

// LabMTU is the link MTU a lab is brought up with (the host MTU when its hosts are kernel hosts).
func LabMTU(l *lab.Lab) int { return labMTU(l) }
