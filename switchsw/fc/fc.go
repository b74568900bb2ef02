// Package fc is the switch's flow-control plug-in point. A Module decides, for every data frame, which
// egress queue it joins and how the buffer admits it (the classifier), watches frames enter and leave
// egress queues to detect congestion, sends link-local pause/resume frames upstream, and consumes the
// flow-control frames that arrive from downstream by pausing egress queues.
//
// Modes are registered by name, one file each, without touching the switch: "lossy" (fc.go), "pfc"
// (pfc.go), PFC* ("pfcstar": per-hop priority increase, a Classify that rewrites Prio and otherwise PFC)
// and PortFC ("portfc": per-egress-queue detection on Enqueued/Dequeued, (queue, port) frames sent out of
// every other port with SendControl, and Receive pausing Port(in).Pause(queue)). How to add one:
// docs/architecture.md §Adding a flow-control mode.
package fc

import (
	"fmt"
	"sort"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/switchsw/mmu"
	"github.com/fabriclab/fabriclab/units"
)

// Class says how the buffer admits a data frame, and whether dropping it is a violation.
type Class uint8

const (
	// Lossy frames are charged to their egress queue and dropped at its limit (drop-tail, dynamic
	// threshold).
	Lossy Class = iota
	// LosslessIngress frames are charged to their ingress (port, priority) group with XOFF/XON and
	// headroom, PFC-style. A drop is a violation.
	LosslessIngress
	// LosslessEgress frames are charged to their egress queue without the lossy limit: the module keeps
	// queues bounded itself (PortFC pauses upstream queues by egress queue depth). A drop is a violation.
	LosslessEgress
)

// Lossless reports whether dropping a frame of this class breaks the run's guarantee.
func (c Class) Lossless() bool { return c != Lossy }

// Loc is where a data frame sits in the switch. InPrio is its priority as it arrived, which the ingress
// group is keyed by; a Classify that rewrites p.Prio (PFC*) does not move the frame to another group.
type Loc struct {
	In, InPrio int
	Out, Queue int
	Class      Class
}

// Device is what the switch offers a module. Control frames sent with SendControl bypass the MMU and
// every pause, and leave ahead of all other traffic on the port.
type Device interface {
	ID() int32
	Clock() clock.Clock
	NumPorts() int
	Port(i int) *egress.Port
	// DataQueues is the number of data queues per port (indices 0..DataQueues-1).
	DataQueues() int
	// Prios is the number of priorities; frame priorities are clamped to 0..Prios-1.
	Prios() int
	// Lossless reports whether priority prio is configured lossless.
	Lossless(prio int) bool
	// PeerHost is the host index on the far end of port, or ok=false when the peer is a switch.
	PeerHost(port int) (host int32, ok bool)
	MMU() *mmu.MMU
	// Frame returns a control frame holding v for SendControl. A PFC frame the module makes this way
	// goes back to the engine's packet pool once the peer switch has read it.
	Frame(v pkt.Packet) *pkt.Packet
	SendControl(port int, f *pkt.Packet)
	// Note counts a flow-control frame sent or received on port about queue (a priority for PFC) and, when
	// it changes pause state (change), appends it to the device's pause records. Refreshes are counted,
	// not recorded.
	Note(port, queue int, on, sent, change bool, hops int8)
}

// Module is one flow-control mode on one switch. All calls come from the switch's clock goroutine.
type Module interface {
	// Classify picks the data queue (0..DataQueues-1) and admission class of a data frame about to be
	// enqueued on port out. It may rewrite p.Prio (per-hop priority schemes). A source-routed frame's Hop
	// still points at this device here (p.PortAhead(0) == out), so PortAhead(2) is the egress port at the
	// switch after the next relay; the switch advances Hop after Classify.
	Classify(out int, p *pkt.Packet) (queue int, class Class)
	// Enqueued runs after the frame was admitted and charged to the MMU, just before it joins the egress
	// queue: Port(at.Out).Bytes(at.Queue) does not include it yet. Every Enqueued precedes the
	// frame's Dequeued.
	Enqueued(at Loc, p *pkt.Packet)
	// Dequeued runs when the frame leaves its egress queue and its buffer has been released.
	Dequeued(at Loc, p *pkt.Packet)
	// Receive consumes a flow-control frame (pkt.PFC or pkt.PortFC) that arrived on port in.
	Receive(in int, p *pkt.Packet)
}

// Config is the flow-control part of a switch config: plain data, filled by the lab layer.
type Config struct {
	// Mode is a registered mode name: "lossy" (default) or "pfc".
	Mode string `json:"mode,omitempty"`

	// XOFF and XON are static thresholds on an ingress (port, priority) group's bytes, in bytes or in
	// BDPs of the port (rate x one-way delay). Used only when Alpha is 0. XON defaults to 2/3 of XOFF
	// (the 6 and 4 BDP of the PortFC paper).
	XOFF units.Size `json:"xoff,omitzero"`
	XON  units.Size `json:"xon,omitzero"`
	// Alpha > 0 selects the dynamic XOFF of HPCC's MMU and overrides XOFF/XON: pause once a group's
	// shared bytes reach Alpha x free shared buffer, resume once ResumeOffset below it (HPCC ns-3,
	// simulation/src/point-to-point/model/switch-mmu.cc: GetPfcThreshold, CheckShouldPause,
	// CheckShouldResume). With neither XOFF nor Alpha set, Alpha is 1/8 (HPCC's default).
	Alpha float64 `json:"alpha,omitempty"`
	// ResumeOffset (dynamic mode) is how far below the threshold a group must drain to resume
	// (0 = 3 KB, HPCC's default).
	ResumeOffset int64 `json:"resume_offset,omitempty"`
	// HeadroomBytes per port per lossless priority; 0 = computed by switchsw.Headroom from the port's
	// rate and delay.
	HeadroomBytes int64 `json:"headroom,omitempty"`

	// PauseQuanta is the pause time a PFC pause frame asks for, in 512-bit-time quanta (0 = 0xFFFF).
	PauseQuanta uint16 `json:"pause_quanta,omitempty"`
	// Refresh is how often a PFC pause is re-sent while the group stays above XON (0 = half the pause
	// time at the port's rate). Re-sending before the quanta expire keeps the peer paused.
	Refresh clock.Time `json:"refresh,omitempty"`

	// PortFC is the "portfc" mode's per-switch data (portfc.go); zero elsewhere.
	PortFC PortFCConfig `json:"portfc,omitzero"`
	// PFCStar is the "pfcstar" mode's tagging (pfcstar.go); zero elsewhere.
	PFCStar PFCStarConfig `json:"pfcstar,omitzero"`
}

// PortFCConfig is what a PortFC switch cannot learn from its ports: how its neighbours are wired to the
// next switches, for the n-1 queue-index compression (docs/portfc.md), and the DDQ thresholds.
type PortFCConfig struct {
	// PeerSelf[p][j] is the port index, at the switch behind port j of the node on this switch's port p,
	// of that node; -1 for the node port that faces this switch.
	PeerSelf [][]int16 `json:"peer_self,omitempty"`
	// DDQXOFF/DDQXON are the paper's X-hat thresholds on the destination-direct queue (0 = XOFF/XON).
	DDQXOFF units.Size `json:"ddq_xoff,omitzero"`
	DDQXON  units.Size `json:"ddq_xon,omitzero"`
}

// PFCStarConfig is PFC*'s per-hop priority increase: a data frame with tag t (priority Base+t) leaves a
// switch with tag min(t+1, Tags-1).
type PFCStarConfig struct {
	Tags int `json:"tags,omitempty"` // P, the number of lossless priorities (0 = 2)
	Base int `json:"base,omitempty"` // priority of tag 0
	// EverySwitch raises the tag at every switch, also for a frame from a host (the relays then keep
	// it: nodes.PFCStarConfig.KeepAtRelays); false raises it only for a frame from another switch.
	EverySwitch bool `json:"every_switch,omitempty"`
}

// Factory builds a module for a device.
type Factory func(dev Device, cfg Config) (Module, error)

// Mode is a registered flow-control mode.
type Mode struct {
	New Factory
	// Ingress says the mode charges lossless priorities to ingress (port, priority) groups, so the switch
	// sizes XOFF/XON and reserves headroom for them (PFC, PFC*). Modes that bound queues by other means
	// (PortFC) leave it false and classify lossless frames as LosslessEgress.
	Ingress bool
}

var registry = map[string]Mode{}

// Register adds a mode. It panics on a duplicate name: two modes under one name is a build error.
func Register(name string, m Mode) {
	if _, dup := registry[name]; dup {
		panic("fc: mode registered twice: " + name)
	}
	registry[name] = m
}

// Modes lists the registered mode names.
func Modes() []string {
	var s []string
	for k := range registry {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// Lookup returns the mode a config names ("" = lossy).
func Lookup(name string) (Mode, error) {
	if name == "" {
		name = "lossy"
	}
	m, ok := registry[name]
	if !ok {
		return Mode{}, fmt.Errorf("flow_control: unknown mode %q (have %v)", name, Modes())
	}
	return m, nil
}

// New builds the module cfg.Mode names.
func New(dev Device, cfg Config) (Module, error) {
	m, err := Lookup(cfg.Mode)
	if err != nil {
		return nil, err
	}
	return m.New(dev, cfg)
}

// PrioQueue is the default classifier: one data queue per priority.
func PrioQueue(dev Device, p *pkt.Packet) int { return QueueOf(dev, int(p.Prio)) }

// QueueOf is the data queue of priority prio under PrioQueue.
func QueueOf(dev Device, prio int) int {
	if n := min(dev.Prios(), dev.DataQueues()); prio >= n {
		return n - 1
	}
	return prio
}

func init() {
	Register("lossy", Mode{New: func(dev Device, _ Config) (Module, error) { return lossy{dev}, nil }})
}

// lossy is drop-tail (with ECN, which the switch applies to every mode): no pauses sent, and received
// pause frames are ignored, as a switch with PFC disabled does.
type lossy struct{ dev Device }

// Every mode implements Module: lossy (here), PFC (pfc.go), PFCStar (pfcstar.go), PortFC (portfc.go).
var (
	_ Module = lossy{}
	_ Module = (*PFC)(nil)
	_ Module = (*PFCStar)(nil)
	_ Module = (*PortFC)(nil)
)

func (l lossy) Classify(_ int, p *pkt.Packet) (int, Class) { return PrioQueue(l.dev, p), Lossy }
func (lossy) Enqueued(Loc, *pkt.Packet)                    {}
func (lossy) Dequeued(Loc, *pkt.Packet)                    {}
func (lossy) Receive(int, *pkt.Packet)                     {}
