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
