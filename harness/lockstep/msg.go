package lockstep

import (
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/fib"
	"github.com/fabriclab/fabriclab/harness/monitor"
	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/report"
	"github.com/fabriclab/fabriclab/switchsw"
	"github.com/fabriclab/fabriclab/units"
)

// The agent protocol: JSON objects, one per line, on the agent's stdin (backend -> agent) and stdout
// (agent -> backend). The order is
//
//	-> setup     <- ready        (ports open, engines built)
//	-> start     <- done         (every flow this agent sends has completed; may never come)
//	             <- end          (its clock reached the run's end; it waits for stop)
//	-> stop      <- records      (engines flushed: records, fidelity, counters)
//
// While running, an agent also sends progress (its clock and completed flows, every 250 ms of wall
// time) and completed (flows of setup.Remote that completed here); the backend relays each completed
// to the other agents as completed, so a flow starts when flows in another agent complete.
//
// and error at any point ends the agent. Configs are already dilated; times are the agent clock's
// picoseconds since the common epoch.

// AgentLinked is set by package agent's init: the backend re-executes its own binary as the agent, so
// that binary must contain it.
var AgentLinked bool

// AgentMsg is every message in both directions; Type says which fields matter.
type AgentMsg struct {
	Type     string         `json:"type"` // setup ready start done end stop records error progress completed
	Setup    *AgentSetup    `json:"setup,omitempty"`
	Epoch    int64          `json:"epoch,omitempty"` // start: CLOCK_MONOTONIC ns of time 0
	End      clock.Time     `json:"end,omitempty"`   // start: stop by itself at this time
	Log      *records.Log   `json:"log,omitempty"`
	Fidelity *AgentFidelity `json:"fidelity,omitempty"`
	Now      clock.Time     `json:"now,omitempty"` // records: the agent clock when it stopped; progress: now
	// Done is how many of its flows an agent has seen complete (progress).
	Done int `json:"done,omitempty"`
	// Flows are flow IDs that completed (completed), Finish when each did (engine time of the agent
	// that completed it: a flow waiting in another agent starts no earlier, whatever that agent's clock).
	Flows  []uint32     `json:"flows,omitempty"`
	Finish []clock.Time `json:"finish,omitempty"`
	// Deadlock is the run-time monitor's verdict (records; only from an agent that ran the monitor).
	Deadlock *report.DeadlockVerdict `json:"deadlock,omitempty"`
	Err      string                  `json:"err,omitempty"`
	// Live is a live lab's request or reply (type live, live.go).
	Live *LiveMsg `json:"live,omitempty"`
	// Lockstep (lockstep.go). reached: Now is the time before which the agent has run everything, Counts
	// the frames it has written on each outgoing channel. grant: run every event before Until once
	// Counts[c] frames have been read on each incoming channel c. halt: the run now ends at End.
	Until  clock.Time     `json:"until,omitempty"`
	Counts map[int]uint64 `json:"counts,omitempty"`
	// Late is, in reached, how many cross-agent frames the agent has read after their due time so far.
	Late uint64 `json:"late,omitempty"`
	// Snapshot is, in stalled, the agent's paused non-empty queues at a monitor tick (engine time).
	Snapshot *monitor.Snapshot `json:"snapshot,omitempty"`
}

// AgentSetup is what one agent hosts.
type AgentSetup struct {
	Lab string `json:"lab"`
	MTU int    `json:"mtu"`
	// Realtime is the SCHED_FIFO priority of the agent's loop thread (0: stay on the default scheduler).
	Realtime int `json:"realtime,omitempty"`
	// FrameBytes is the fidelity yardstick: a frame is late when it leaves more than one serialization
	// time of a FrameBytes frame (the largest data frame) after its scheduled departure.
	FrameBytes int           `json:"frame_bytes"`
	Devices    []AgentDevice `json:"devices"`
	Flows      []AgentFlow   `json:"flows,omitempty"`
	// MinCatchUpStep overrides the agent's floor on catch-up steps (0: its default, 1 us).
	MinCatchUpStep clock.Time `json:"min_catch_up_step,omitempty"`
	// StopWhenDone ends the run at this agent's last completion: set when it hosts the whole lab and the
	// spec stops when its flows are done.
	StopWhenDone bool `json:"stop_when_done,omitempty"`
	// Remote are the flows this agent starts whose completion flows in other agents wait for.
	Remote map[uint32]bool `json:"remote,omitempty"`
	// PcapDir receives <device>-p<port>.pcap for every port in Pcap.
	PcapDir string     `json:"pcap_dir,omitempty"`
	Pcap    []PcapPort `json:"pcap,omitempty"`
	// Monitor, when set, makes the agent run the deadlock monitor over its devices; the backend sets
	// it when one agent hosts every device, since a wait-for cycle may cross any of them.
	Monitor *AgentMonitor `json:"monitor,omitempty"`
	// Faults are the spec's cable faults (live.go).
	Faults []AgentFault `json:"faults,omitempty"`
	// Lockstep makes the agent advance only as far as the coordinator grants (several agents): see
	// lockstep.go. Its ports on cut links have TxChan and RxChan set.
	Lockstep bool `json:"lockstep,omitempty"`
	// Sample, with Lockstep, makes the agent send its paused queues every Interval (engine time) for the
	// coordinator's deadlock monitor (the Graph and Config are the coordinator's; only the mode is needed
	// here).
	Sample *AgentMonitor `json:"sample,omitempty"`
	// EngineDilation, when set, is D: the devices' configs and the flows' NIC parameters are the
	// paper's (Dilated.EngineD), the engines run on the agent clock seen D times slower, and the agent
	// returns records in dilated time as it otherwise does. Flow start times stay dilated.
	EngineDilation int64 `json:"engine_dilation,omitempty"`
}

// AgentMonitor is what the run-time deadlock monitor (package monitor) needs: the topology for the
// wait-for edges, the flow-control mode for the queues' priorities, and the dilated timing.
type AgentMonitor struct {
	Graph       *topo.Graph    `json:"graph"`
	FlowControl string         `json:"flow_control"`
	Config      monitor.Config `json:"config"`
}

// AgentDevice is one switch or NIC engine and its ports.
type AgentDevice struct {
	Name   string           `json:"name"`
	Node   int              `json:"node"`
	NSPath string           `json:"ns_path"`
	Switch *switchsw.Config `json:"switch,omitempty"`
	Host   *nodes.Config    `json:"host,omitempty"`
	Ports  []AgentPort      `json:"ports"`
}

// AgentPort is one port's interface and the link it transmits onto.
type AgentPort struct {
	Ifname  string     `json:"ifname"`
	RateBps float64    `json:"rate_bps"` // dilated; the fidelity monitor's yardstick
	Delay   clock.Time `json:"delay"`    // dilated propagation delay, applied by the sender
	// PeerNode and PeerPort name the other end of the link, so an agent hosting both ends knows when a
	// frame it reads is one it wrote (and when it was due to arrive).
	PeerNode int `json:"peer_node"`
	PeerPort int `json:"peer_port"`
	// IngressDelay delays frames read here before the engine takes them: a live lab's kernel host
	// cannot delay what it sends, so its switch applies the cable's delay on arrival.
	IngressDelay clock.Time `json:"ingress_delay,omitempty"`
	// TxChan and RxChan number the two directions of a cut link (the peer is in another agent): frames
	// written here carry a lockstep stamp and count on TxChan, frames read here on RxChan (0: not cut).
	TxChan int `json:"tx_chan,omitempty"`
	RxChan int `json:"rx_chan,omitempty"`
}

// AgentFlow is a flow a NIC of this agent starts.
type AgentFlow struct {
	Node int        `json:"node"`
	At   clock.Time `json:"at"`
	Flow nodes.Flow `json:"flow"`
	// After are the flows (by ID, in any agent) that must complete before this one starts; it then
	// starts at At or at once, whichever is later.
	After []uint32 `json:"after,omitempty"`
}

// PcapPort selects a port to capture.
type PcapPort struct {
	Device string `json:"device"`
	Port   int    `json:"port"`
}

// AgentFidelity is one agent's fidelity monitor (docs/architecture.md §Fidelity): how late frames left
// relative to their scheduled departure, and how late the event loop ran timers.
type AgentFidelity struct {
	Frames      uint64     `json:"frames"`       // frames written
	LateFrames  uint64     `json:"late_frames"`  // written more than one data-frame serialization time (dilated rate) late
	MaxLateness clock.Time `json:"max_lateness"` // worst frame
	SumLateness float64    `json:"sum_lateness"` // picoseconds (float: see clock.LagStats.Sum)
	Timers      uint64     `json:"timers"`
	TimerLagMax clock.Time `json:"timer_lag_max"`
	TimerLagAt  clock.Time `json:"timer_lag_at"`  // when (agent time) the worst timer was due
	TimerLagSum float64    `json:"timer_lag_sum"` // picoseconds
	KernelFull  uint64     `json:"kernel_full"`   // frames the kernel refused (dropped: counted as drops)
	Malformed   uint64     `json:"malformed"`
	RxFrames    uint64     `json:"rx_frames"`
	// Loop instrumentation: iterations of the event loop, how many woke from ppoll for frames vs the
	// timeout, and the wall time spent inside ppoll (the rest is engines, encode/decode and syscalls).
	Loops       uint64     `json:"loops"`
	PollWakes   uint64     `json:"poll_wakes"`
	PollTimeout uint64     `json:"poll_timeouts"`
	PollTime    clock.Time `json:"poll_time"`
	BusyTime    clock.Time `json:"busy_time"`
	// LagOver[i] counts timers that fired later than clock.LagBuckets[i].
	LagOver [4]uint64 `json:"lag_over"`
	// RealtimeErr is why the loop thread is not SCHED_FIFO when Realtime was asked for ("" when it is).
	// Arrivals are frames an agent read from its own peer port, which it takes at their scheduled
	// arrival time; LateArrivals those it could only take more than one data-frame serialization time
	// later (its clock had moved on), with the sum and maximum of that error.
	Arrivals      uint64     `json:"arrivals,omitempty"`
	LateArrivals  uint64     `json:"late_arrivals,omitempty"`
	SumArrivalErr float64    `json:"sum_arrival_err,omitempty"` // picoseconds
	MaxArrivalErr clock.Time `json:"max_arrival_err,omitempty"`
	// CatchUpSteps counts steps taken to catch up after the loop woke late (agent catchUp).
	CatchUpSteps uint64 `json:"catch_up_steps,omitempty"`
	// CPUTime is the CPU the agent process used from the run's start to its records (user + system: most of
	// an agent's is the kernel's, moving frames), for `lab bench`'s frames per CPU-second.
	CPUTime     clock.Time `json:"cpu_time,omitempty"`
	RealtimeErr string     `json:"realtime_err,omitempty"`
	// Datapath is how the agent's ports moved frames: batched, legacy or xdp (native or generic), and
	// with xdp how many ports the kernel refused an AF_XDP socket and why.
	Datapath string `json:"datapath,omitempty"`
	Realtime bool   `json:"realtime,omitempty"`
	// Lockstep (several agents): frames read on cut links (CrossFrames), those read after their due time
	// (LateCross, worst by MaxCrossLate: the protocol failed, the run is unfaithful), those whose stamp
	// did not parse (BadStamps, also in Malformed), sequence numbers skipped or given up on (LostCross)
	// and duplicates or frames read after being given up on (StaleCross).
	CrossFrames  uint64     `json:"cross_frames,omitempty"`
	LateCross    uint64     `json:"late_cross,omitempty"`
	MaxCrossLate clock.Time `json:"max_cross_late,omitempty"`
	BadStamps    uint64     `json:"bad_stamps,omitempty"`
	LostCross    uint64     `json:"lost_cross,omitempty"`
	StaleCross   uint64     `json:"stale_cross,omitempty"`
	// LateStarts are flows that waited for a flow in another agent and started after their due time:
	// the completion was heard of after this agent's clock had passed it (at most a lookahead).
	LateStarts uint64 `json:"late_starts,omitempty"`
}

// agentMsgTypes are the protocol's message types.
var agentMsgTypes = map[string]bool{"setup": true, "ready": true, "start": true, "done": true, "end": true,
	"stop": true, "records": true, "error": true, "progress": true, "completed": true, "live": true,
	"reached": true, "grant": true, "halt": true, "stalled": true}

// Check refuses a message the other side could not act on sensibly: an unknown type, a setup without
// its body, or numbers a backend never sends (negative times, non-finite or non-positive rates).
func (m *AgentMsg) Check() error {
	if !agentMsgTypes[m.Type] {
		return fmt.Errorf("agent message type %q is not one of the protocol's", m.Type)
	}
	if m.End < 0 || m.Now < 0 || m.Done < 0 || m.Until < 0 {
		return fmt.Errorf("agent message %s: negative end, now or done", m.Type)
	}
	if m.Type != "setup" {
		return nil
	}
	s := m.Setup
	switch {
	case s == nil:
		return fmt.Errorf("setup message without setup")
	case s.MTU < nslink.MinMTU || s.MTU > nslink.MaxMTU:
		return fmt.Errorf("setup: mtu %d is not in %d..%d", s.MTU, nslink.MinMTU, nslink.MaxMTU)
	case s.FrameBytes < 1 || s.FrameBytes > 65535:
		return fmt.Errorf("setup: frame_bytes %d is not in 1..65535", s.FrameBytes)
	}
	for _, d := range s.Devices {
		for i, p := range d.Ports {
			if !(p.RateBps > 0 && p.RateBps <= units.MaxRate) || p.Delay < 0 || p.Delay > units.MaxTime {
				return fmt.Errorf("setup: device %s port %d: rate %v or delay %v out of range", d.Name, i, p.RateBps, p.Delay)
			}
		}
	}
	for _, f := range s.Flows {
		if f.At < 0 || f.At > units.MaxTime || f.Flow.Size < 0 || f.Flow.Size > units.MaxBytes {
			return fmt.Errorf("setup: flow %d: start %v or size %d out of range", f.Flow.ID, f.At, f.Flow.Size)
		}
	}
	return nil
}

// Scheduled reports whether every frame the agents read was one they wrote themselves (one agent, no
// kernel hosts): those are taken at their scheduled arrival time, so how late the loop ran in wall time
// does not reach the results, only how late it took frames against their schedule.
func (m AgentFidelity) Scheduled() bool {
	return m.Arrivals > 0 && m.Arrivals+m.Malformed >= m.RxFrames
}

// LiveMsg is a live request (Op set) or its reply (Err, or the op's result).
type LiveMsg struct {
	// Op is inspect (counters of every device), fault (Device's Port link fault, both directions of
	// the cable on the Device's side), fib (Device's forwarding table) or capture (start writing
	// Device's Port to Path as pcap; an empty Path stops it).
	Op     string        `json:"op"`
	Device string        `json:"device,omitempty"`
	Port   int           `json:"port,omitempty"`
	Fault  *egress.Fault `json:"fault,omitempty"`
	FIB    fib.Table     `json:"fib,omitzero"`
	Path   string        `json:"path,omitempty"`
	// ID, when set, comes back on the reply: an agent server's own requests (a capture over machines)
	// share the agent with the coordinator's and are told apart by it.
	ID uint64 `json:"id,omitempty"`

	Err     string       `json:"err,omitempty"`
	Now     clock.Time   `json:"now,omitempty"` // agent clock (dilated engine time) of the reply
	Devices []LiveDevice `json:"devices,omitempty"`
	// Inspect's agent-wide counters: the data path its ports use, and frames the kernel would not take
	// from it (a transmit ring the kernel stopped consuming: written nowhere, counted here).
	Datapath   string `json:"datapath,omitempty"`
	KernelFull uint64 `json:"kernel_full,omitempty"`
}

// LiveDevice is one engine's live counters.
type LiveDevice struct {
	Name     string     `json:"name"`
	Kind     string     `json:"kind"` // switch or host
	RxFrames uint64     `json:"rx_frames"`
	Drops    uint64     `json:"drops"`
	Marked   uint64     `json:"ecn_marked"`
	Ports    []LivePort `json:"ports"`
}

// LivePort is one port's live counters. Tx counts what the engine sent onto the link, Rx what the agent
// read from the port's socket (including frames it then dropped).
type LivePort struct {
	Port     int               `json:"port"`
	Peer     string            `json:"peer"` // device:p<port> at the other end of the cable
	TxFrames uint64            `json:"tx_frames"`
	TxBytes  uint64            `json:"tx_bytes"`
	RxFrames uint64            `json:"rx_frames"`
	RxBytes  uint64            `json:"rx_bytes"`
	Drops    map[string]uint64 `json:"drops,omitempty"` // by reason: buffer, headroom, no-route, link-down, link-loss, ...
	// Malformed counts frames read from the port that did not decode (garbage written into the lab's
	// wire): dropped before any engine, included in RxFrames, not in Drops.
	Malformed  uint64 `json:"malformed_frames"`
	PausesSent uint64 `json:"pauses_sent"`
	PausesRecv uint64 `json:"pauses_received"`
	ECNMarked  uint64 `json:"ecn_marked"`
	QueueBytes int    `json:"queue_bytes"`      // data bytes queued now, all queues
	QueuePeak  int64  `json:"queue_peak_bytes"` // most data bytes queued at once so far
	Fault      string `json:"fault,omitempty"`  // the link fault on this port's egress, if any
	Capture    string `json:"capture,omitempty"`
}

// AgentFault is a spec fault (lab.FaultPlan) as an agent applies it: at At (dilated), each end it hosts
// impairs its egress (Fault, delay dilated), each switch it hosts in FIB takes its new table. Log is set
// for one agent, which records the event.
type AgentFault struct {
	At    clock.Time        `json:"at"`
	Name  string            `json:"name"`
	Ends  [2][2]int         `json:"ends"` // (node, port) of each end
	Fault egress.Fault      `json:"fault"`
	FIB   map[int]fib.Table `json:"fib,omitempty"`
	Log   bool              `json:"log,omitempty"`
}
