package netns

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/fib"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/switchsw"
	"github.com/fabriclab/fabriclab/switchsw/fc"
	"github.com/fabriclab/fabriclab/units"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// A live lab (`lab up`) runs the agents of a lab with no workload and no end: the switches forward
// whatever the kernel hosts send, for as long as the lab is up. While it runs, the backend sends the
// agent live requests (AgentMsg type live) and the agent answers each with one live reply, from its
// event loop, so the engines stay single-threaded.

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

// Live is the running agent of a live lab.
type Live struct {
	Lab      *Lab
	Dilation float64
	proc     *agentProc
	mu       sync.Mutex // one request at a time
	replies  chan AgentMsg
	exited   chan error
}

// liveEnd is the agents' end time: never, in practice (11.6 days of dilated engine time).
const liveEnd = clock.Time(units.MaxTime)

// StartLive starts the agent that runs l's switches (and NIC hosts, if any) on nl, which is up, with its
// kernel hosts already set up. The agent runs until Stop or until this process dies.
func StartLive(ctx context.Context, l *lab.Lab, nl *Lab) (*Live, error) {
	if !AgentLinked {
		return nil, errors.New("live lab: this binary does not contain the agent")
	}
	d := l.Spec.EffectiveDilation()
	s, err := LiveSetup(l, nl)
	if err != nil {
		return nil, err
	}
	p, err := startAgent(nl.Name, s)
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(ctx, "ready", 30*time.Second); err != nil {
		p.kill()
		return nil, err
	}
	epoch := clock.MonotonicNanos() + (50 * time.Millisecond).Nanoseconds()
	if err := p.send(AgentMsg{Type: "start", Epoch: epoch, End: liveEnd}); err != nil {
		p.kill()
		return nil, fmt.Errorf("%s: start: %w", p.name(), err)
	}
	lv := &Live{Lab: nl, Dilation: d, proc: p, replies: make(chan AgentMsg, 1), exited: make(chan error, 1)}
	go func() {
		for m := range p.msgs {
			if m.Type == "live" || m.Type == "error" {
				lv.replies <- m
			}
		}
		lv.exited <- <-p.exited
	}()
	return lv, nil
}

// LiveSetup is the one agent setup of a live lab on nl: every switch (and relay host) of l, no flows,
// no end, no monitor. A live lab over several machines deals its devices out (LiveParts).
func LiveSetup(l *lab.Lab, nl *Lab) (*AgentSetup, error) {
	d := l.Spec.EffectiveDilation()
	dl, err := Dilate(l, d)
	if err != nil {
		return nil, err
	}
	dl.Flows = nil
	setups, _ := splitAgents(l, dl, nl, 1, nil, "", nil)
	if len(setups) == 0 && l.Tables.HostTransit {
		setups = []*AgentSetup{{Lab: nl.Name, MTU: nl.MTU, FrameBytes: dataFrameBytes(l)}}
	}
	if len(setups) == 0 {
		return nil, errors.New("live lab: no device for an agent to run (a lab of kernel hosts alone)")
	}
	s := setups[0]
	kernel := map[int]bool{}
	for _, h := range dl.Kernel {
		kernel[h.Node] = true
	}
	if !l.Tables.HostTransit {
		for i := range s.Devices {
			for j := range s.Devices[i].Ports {
				if p := &s.Devices[i].Ports[j]; kernel[p.PeerNode] {
					p.IngressDelay = p.Delay
				}
			}
		}
	}
	if len(dl.Switches) > 0 {
		relays, err := relayDevices(l, dl, nl, dl.Switches[0].Config)
		if err != nil {
			return nil, err
		}
		s.Devices = append(s.Devices, relays...)
	}
	s.Monitor = nil
	s.Realtime = DefaultRealtime
	return s, nil
}

// Pid is the agent's process ID.
func (lv *Live) Pid() int { return lv.proc.cmd.Process.Pid }

// Exited receives the agent's exit (it should never exit while the lab is up).
func (lv *Live) Exited() <-chan error { return lv.exited }

// Request sends one live request and waits for its reply.
func (lv *Live) Request(req LiveMsg) (*LiveMsg, error) {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	if err := lv.proc.send(AgentMsg{Type: "live", Live: &req}); err != nil {
		return nil, fmt.Errorf("%s: %w", lv.proc.name(), err)
	}
	select {
	case m := <-lv.replies:
		if m.Type == "error" {
			return nil, fmt.Errorf("%s: %s", lv.proc.name(), m.Err)
		}
		if m.Live == nil {
			return nil, fmt.Errorf("%s: live reply without a body", lv.proc.name())
		}
		if m.Live.Err != "" {
			return m.Live, errors.New(m.Live.Err)
		}
		return m.Live, nil
	case <-time.After(10 * time.Second):
		return nil, fmt.Errorf("%s: no reply to %s within 10 s", lv.proc.name(), req.Op)
	}
}

// Stop ends the agent.
func (lv *Live) Stop() { lv.proc.kill() }

// RecordProcess adds a process of ours (a live lab's supervisor) to the lab's agents file, so `lab down`
// ends it as it ends agents; token is ProcessToken's, given to the process in its environment.
func RecordProcess(lab string, pid int, token string) error { return recordAgent(lab, pid, token) }

// StateDir is where lab keeps its state file, lock and (live labs) control socket.
func StateDir(lab string) string { return stateDir(lab) }

// LabMTU is the link MTU a lab is brought up with (the host MTU when its hosts are kernel hosts).
func LabMTU(l *lab.Lab) int { return labMTU(l) }

// KernelIf and RelayPort name a relay host's kernel interface and the port its relay engine reads it
// through: a veth pair inside the host's namespace. In a server-centric fabric (NDC, BCube) a host
// forwards; in a live lab its ports belong to a Go relay engine (a switch with one more port, toward
// the kernel), and the kernel, an ordinary host behind it, sends and receives on KernelIf.
const (
	KernelIf  = "eth0"
	RelayPort = "k0"
)

// AddKernelPort makes the KernelIf-RelayPort veth pair inside device's namespace, up, at mtu, offloads
// off (see setOffloadsOff). It goes with the namespace.
func (l *Lab) AddKernelPort(device string, mtu int) error {
	nh, err := l.Handle(device)
	if err != nil {
		return err
	}
	defer nh.Close()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: RelayPort, MTU: mtu, TxQLen: DefaultTxQueueLen}, PeerName: KernelIf}
	if err := nh.LinkAdd(v); err != nil {
		return fmt.Errorf("%s: veth %s-%s: %w", device, RelayPort, KernelIf, err)
	}
	for _, n := range []string{RelayPort, KernelIf} {
		lk, err := nh.LinkByName(n)
		if err != nil {
			return err
		}
		if err := nh.LinkSetMTU(lk, mtu); err != nil {
			return err
		}
		if err := nh.LinkSetUp(lk); err != nil {
			return err
		}
	}
	return l.Do(device, func() error {
		sock, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(sock)
		for _, n := range []string{RelayPort, KernelIf} {
			if err := setOffloadsOff(sock, n); err != nil {
				return err
			}
		}
		return nil
	})
}

// relayDevices are the agent devices of a live lab's relay hosts (HostTransit tables): a switch engine
// on the host's ports plus RelayPort, its table the host's own with the host itself behind RelayPort.
func relayDevices(l *lab.Lab, dl *Dilated, nl *Lab, tmpl switchsw.Config) ([]AgentDevice, error) {
	if !l.Tables.HostTransit {
		return nil, nil
	}
	g := l.Graph
	var out []AgentDevice
	for _, h := range dl.Kernel {
		n := h.Node
		node := &g.Nodes[n]
		c := tmpl
		c.Device = int32(n)
		c.FlowControl = fc.Config{Mode: "lossy"}
		c.Lossless, c.ClassUp = nil, nil
		c.Ports = nil
		var ports []AgentPort
		var top float64
		for i, li := range node.Ports {
			lk := g.Links[li]
			peer := g.Peer(n, i)
			pn := g.Nodes[peer.Node]
			c.Ports = append(c.Ports, switchsw.PortConfig{RateBps: lk.RateBps / dl.D, Delay: dl.LinkDelay[li],
				PeerIsHost: pn.Kind == topo.Host, PeerHost: int32(pn.Index)})
			ports = append(ports, AgentPort{Ifname: PortName(i), RateBps: lk.RateBps / dl.D, Delay: dl.LinkDelay[li],
				PeerNode: peer.Node, PeerPort: peer.Port})
			top = max(top, lk.RateBps/dl.D)
		}
		k := len(node.Ports)
		c.Ports = append(c.Ports, switchsw.PortConfig{RateBps: top, PeerIsHost: true, PeerHost: int32(node.Index)})
		ports = append(ports, AgentPort{Ifname: RelayPort, RateBps: top, PeerNode: -1, PeerPort: -1})
		var err error
		if c.FIB, err = RelayFIB(l.Tables.FIB[n], node.Index, k); err != nil {
			return nil, fmt.Errorf("%s: %w", node.Name, err)
		}
		out = append(out, AgentDevice{Name: node.Name, Node: n, NSPath: nl.NSPath(node.Name), Switch: &c, Ports: ports})
	}
	return out, nil
}

// RelayFIB is a relay host's table toward every host, itself behind RelayPort (after its fabric ports).
func RelayFIB(host fib.Table, self, ports int) (fib.Table, error) {
	return host.With(self, []uint8{uint8(ports)})
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

// addFaults gives every agent the lab's planned faults, dilated.
func addFaults(setups []*AgentSetup, l *lab.Lab, d float64) {
	for _, p := range l.Faults {
		ends := l.FaultEnds(p)
		f := p.Fault
		f.Delay = clock.Time(float64(f.Delay) * d)
		for i, s := range setups {
			s.Faults = append(s.Faults, AgentFault{At: clock.Time(float64(p.At) * d), Name: p.Name,
				Ends: [2][2]int{{ends[0].Node, ends[0].Port}, {ends[1].Node, ends[1].Port}}, Fault: f, FIB: p.FIB, Log: i == 0})
		}
	}
}
