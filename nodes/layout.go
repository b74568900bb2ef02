package nodes

import "github.com/fabriclab/fabriclab/pkt"

// Layout is the NIC's egress queue layout, the seam PortFC plugs into: it says how many queues each port
// has, which one is the strict control queue, which queue a local flow or a relayed frame goes to, and
// which queues a PFC pause of a priority stops. PortFC's node layout ((k+1)(n-1)+2 queues: four-hop,
// two-hop, relay, high-priority) is another implementation, paired with an FCHook that handles PortFC
// frames.
//
// Queues other than the control queue are served by deficit round robin, so relay traffic is never
// starved behind local flows (nor the reverse).
type Layout interface {
	// Queues is the number of egress queues of port (at most 64).
	Queues(port int) int
	// Control is the strict-priority queue of port for ACK/NACK/CNP and flow-control frames. It is never
	// paused.
	Control(port int) int
	// Local is the queue for a locally originated flow's data leaving port. It is asked once per flow,
	// with a prototype of the flow's packets: Route and Hop as at this NIC (Hop = 0, so PortAhead(1) is
	// the egress port at the next switch), Dst, Prio, Flow.
	Local(port int, p *pkt.Packet) int
	// Relay is the queue for a data frame this NIC forwards out of port; p.Hop still indexes this NIC.
	// (Relayed control frames always take the control queue.)
	Relay(port int, p *pkt.Packet) int
	// PFC lists the queues of port that a PFC pause of priority prio stops.
	PFC(port int, prio int) []int
}

// PrioLayout (a queue per priority), FIFOLayout (one data queue) and PortFCLayout (queues by next-hop
// port, portfc.go) implement Layout.
var (
	_ Layout = PrioLayout{}
	_ Layout = (*FIFOLayout)(nil)
	_ Layout = (*PortFCLayout)(nil)
)

// FCHook handles a received link-level flow-control frame (pkt.PortFC, or pkt.PFC when set to replace
// the built-in PFC handling). It may pause/resume queues with NIC.PauseQueue and send frames with
// NIC.SendControl (PortFC relays DDQ-class pauses to the NIC's other ports).
type FCHook func(n *NIC, port int, p *pkt.Packet)

// Plugins are the optional, non-plain-data parts of a NIC: a queue layout and flow-control handlers.
// Zero fields take the defaults (PrioLayout; built-in PFC; PortFC frames counted and ignored).
type Plugins struct {
	Layout   Layout
	OnPFC    FCHook
	OnPortFC FCHook

	pass *passThrough // configPlugins' relay_pfc pass-through state, read by the memory guard
}

// PrioLayout is the default layout: per port, queues 0..7 carry local data by priority, 8..15 relayed
// data by priority, and 16 is the control queue. A PFC pause of priority p stops queues p and 8+p.
type PrioLayout struct{}

const (
	prioRelayBase = 8
	prioControl   = 16
)

func (PrioLayout) Queues(int) int  { return prioControl + 1 }
func (PrioLayout) Control(int) int { return prioControl }
func (PrioLayout) Local(_ int, p *pkt.Packet) int {
	return int(p.Prio & 7)
}
func (PrioLayout) Relay(_ int, p *pkt.Packet) int {
	return prioRelayBase + int(p.Prio&7)
}
func (PrioLayout) PFC(_ int, prio int) []int {
	return prioPFC[prio&7][:]
}

var prioPFC = func() (t [8][2]int) {
	for p := range t {
		t[p] = [2]int{p, prioRelayBase + p}
	}
	return t
}()

// FIFOLayout is traditional PFC at a node (the PortFC paper's PFC and PFC* baselines: "all traffic at
// both switches and nodes is placed in a single queue", §III-D): per port, local and relayed data of
// a priority share ONE FIFO, so a relayed frame waits behind the node's own frames in arrival order
// and a pause of the priority stops both. Queue numbers stay PrioLayout's (data 0..7, control 16;
// 8..15 stay empty) so monitors read queues the same way under either layout.
//
// Under PFC* (Tags > 0) a relayed frame has just crossed a switch, so the relay raises its tag
// (priority Base+t becomes Base+min(t+1, Tags-1)) before queueing it: a frame's tag at every device
// is min(switches crossed before it, P-1), and the switches keep the tag of frames that come from a
// host (switchsw/fc PFCStar). Local data keeps its priority (the lab sets it to Base, tag 0).
//
// With KeepTag the relay queues a relayed frame at the tag it arrived with (the switches raise it at
// every hop instead: switchsw/fc PFCStarConfig.EverySwitch).
type FIFOLayout struct {
	Tags, Base int
	KeepTag    bool
}

func (FIFOLayout) Queues(int) int  { return prioControl + 1 }
func (FIFOLayout) Control(int) int { return prioControl }
func (FIFOLayout) Local(_ int, p *pkt.Packet) int {
	return int(p.Prio & 7)
}

// Relay queues by priority, raising the PFC* tag first (it rewrites p.Prio).
func (l FIFOLayout) Relay(_ int, p *pkt.Packet) int {
	if l.Tags > 0 && !l.KeepTag {
		p.Prio = uint8(l.Base + min(PFCStarTag(int(p.Prio), l.Tags, l.Base)+1, l.Tags-1))
	}
	return int(p.Prio & 7)
}
func (FIFOLayout) PFC(_ int, prio int) []int {
	return fifoPFC[prio&7][:]
}

var fifoPFC = func() (t [8][1]int) {
	for p := range t {
		t[p] = [1]int{p}
	}
	return t
}()

// PFCStarConfig is PFC*'s tagging at a node: Tags lossless priorities from Base (0 = no tagging).
type PFCStarConfig struct {
	Tags int `json:"tags,omitempty"`
	Base int `json:"base,omitempty"`
	// KeepAtRelays: relays queue relayed frames at their arrival tag (the switches raise it at every
	// hop, switch.pfcstar_raise: switches).
	KeepAtRelays bool `json:"keep_at_relays,omitempty"`
}

// PFCStarTag is the tag priority prio stands for: 0 below Base, Tags-1 above the range (as the
// switches read it).
func PFCStarTag(prio, tags, base int) int {
	return max(0, min(prio-base, tags-1))
}

// localRoom says whether lane l may put another local frame on its queue. Normally the NIC keeps
// Config.QueueDepth frames of local data per queue: queues build in switches, and pacing stays real.
// A relay node running PFC at its ingress with one FIFO per priority (FIFOLayout, relay_pfc ingress)
// is a small switch whose host stack is one more ingress: its local data may hold up to
// RelayPFC.LocalBytes of the shared FIFO, as the paper's DPDK testbed nodes fill a deep TX ring. With a
// two-frame (or an XOFF) local window, relayed frames take the port as fast as they arrive and never
// reach XOFF, so the node never pauses its upstream and PFC cannot deadlock (docs/portfc.md §5).
func (n *NIC) localRoom(l *lane) bool {
	if _, ok := n.layout.(FIFOLayout); ok && n.ingress != nil {
		return l.queuedBytes < int(n.ingress.local)
	}
	return l.queued < n.cfg.QueueDepth
}
