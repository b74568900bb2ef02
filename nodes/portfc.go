package nodes

import (
	"fmt"

	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
)

// Flow-control names for Config.FlowControl.
const (
	FCPFC     = "pfc"
	FCPFCStar = "pfcstar"
	FCPortFC  = "portfc"
)

// PortFCConfig is what a PortFC node needs besides its ports (docs/portfc.md): the radix n of the
// switches it attaches to, and its own port index on each of them, which the n-1 queue compression
// excludes.
type PortFCConfig struct {
	N    int   `json:"n"`
	Self []int `json:"self"` // Self[p]: this NIC's port index on the switch behind its port p
}

// checkFlowControl validates the flow-control part of a config, naming the field.
func (c *Config) checkFlowControl() error {
	switch c.FlowControl {
	case "", FCPFC:
	case FCPFCStar:
		if t, b := c.PFCStar.Tags, c.PFCStar.Base; t < 0 || b < 0 || b+t > 8 {
			return fmt.Errorf("nodes: config.pfcstar: tags %d from priority %d do not fit 8 priorities", t, b)
		}
	case FCPortFC:
		pc := c.PortFC
		if len(c.Ports) < 2 {
			return fmt.Errorf("nodes: config.flow_control portfc: PortFC nodes relay, so they need at least two ports (NDC k >= 1); this NIC has %d", len(c.Ports))
		}
		if pc.N < 2 {
			return fmt.Errorf("nodes: config.portfc.n: want at least 2 (switch radix), got %d", pc.N)
		}
		if q := len(c.Ports)*(pc.N-1) + 2; q > 64 {
			return fmt.Errorf("nodes: config.portfc.n: %d ports x (n-1) + 2 = %d queues per port, at most 64 (n = %d is too large)", len(c.Ports), q, pc.N)
		}
		if len(pc.Self) != len(c.Ports) {
			return fmt.Errorf("nodes: config.portfc.self: want %d entries (one per port), got %d", len(c.Ports), len(pc.Self))
		}
		for i, s := range pc.Self {
			if s < 0 || s >= pc.N {
				return fmt.Errorf("nodes: config.portfc.self[%d]: %d is not a port of an %d-port switch", i, s, pc.N)
			}
		}
		if c.RelayPFC.Mode != "" {
			return fmt.Errorf("nodes: config.relay_pfc: %q is for pfc and pfcstar, not portfc", c.RelayPFC.Mode)
		}
	default:
		return fmt.Errorf("nodes: config.flow_control %q: want pfc, pfcstar or portfc", c.FlowControl)
	}
	return c.RelayPFC.check()
}

// configPlugins builds the layout and hooks a plain-data config asks for.
func configPlugins(c Config) Plugins {
	var p Plugins
	switch c.FlowControl {
	case FCPortFC:
		l := &PortFCLayout{N: c.PortFC.N, Self: c.PortFC.Self}
		p.Layout, p.OnPortFC = l, l.onPortFC
	case FCPFC:
		// The paper's PFC baselines queue local and relayed data of a priority together (FIFOLayout).
		p.Layout = FIFOLayout{}
	case FCPFCStar:
		p.Layout = FIFOLayout{Tags: c.PFCStar.Tags, Base: c.PFCStar.Base, KeepTag: c.PFCStar.KeepAtRelays}
	}
	if c.RelayPFC.Mode == RelayPassThrough {
		p.pass = newPassThrough(len(c.Ports))
		p.OnPFC = p.pass.onPFC
	}
	return p
}

// compress maps an egress port e of a switch onto n-1 indices by leaving out the node's own port self.
func compress(e, self int) int {
	if e > self {
		return e - 1
	}
	return e
}

// PortFCLayout is PortFC's node egress port on NDC(n,k): (k+1)(n-1)+2 queues per port (paper §III-B.2),
// a node having k+1 ports. Locally originated traffic is typed by the number of switches h it still
// crosses (1..k+1; the paper's "k+1 types according to the number of hops"), n-1 queues per type:
//
//	t(n-1) .. t(n-1)+n-2  type t = k+1-h, by the egress port at the next switch: for k = 1, t = 0 is the
//	                      paper's four-hop queues (0..n-2), t = 1 its two-hop queues (n-1..2n-3)
//	(k+1)(n-1)            RQ: everything this node relays, one FIFO, never paused
//	(k+1)(n-1)+1          HQ: ACK/NACK/CNP and PortFC frames, strict priority
//
// Indices at the next switch leave out this node's own port there (docs/portfc.md, resolution 1). A
// non-minimal path crossing more than k+1 switches shares type 0, the most hops the paper types.
type PortFCLayout struct {
	N    int
	Self []int
}

// k is the NDC level: the node has k+1 ports.
func (l *PortFCLayout) k() int { return len(l.Self) - 1 }

func (l *PortFCLayout) rq() int                    { return (l.k() + 1) * (l.N - 1) }
func (l *PortFCLayout) Queues(int) int             { return l.rq() + 2 }
func (l *PortFCLayout) Control(int) int            { return l.rq() + 1 }
func (l *PortFCLayout) Relay(int, *pkt.Packet) int { return l.rq() }

// Local needs the flow's source route: the queue depends on the next switch's egress port and on how
// many switches the route still crosses. A flow without one gets -1, which StartFlow reports as an error.
func (l *PortFCLayout) Local(port int, p *pkt.Packet) int {
	e := p.PortAhead(1)
	if e < 0 || e >= l.N || e == l.Self[port] {
		return -1
	}
	h := (len(p.Route) - int(p.Hop)) / 2 // the route alternates node and switch ports from here
	t := max(l.k()+1-h, 0)
	return t*(l.N-1) + compress(e, l.Self[port])
}

// PFC: PortFC fabrics send no PFC frames; a stray one pauses nothing.
func (l *PortFCLayout) PFC(int, int) []int { return nil }

// onPortFC is Algorithm 3 (the paper titles it "Switch", but it is the node's handler). An IHFQ-class
// frame pauses the local queues that feed the congested port's IHFQs: for k = 1 the four-hop queue
// a[port], in general every type that crosses at least one more switch. A DDQ-class frame pauses the
// one-switch (two-hop) queue of the port and is relayed to the switches on this node's other ports,
// whose IHFQ feeding the congested port it pauses (Algorithm 4). Nodes detect nothing and originate
// nothing; the RQ is never paused.
//
// For k > 1 an IHFQ-class frame is relayed too, but only to the switches of lower layers than the one
// that sent it (a node's port l faces its layer-l switch). The congested IHFQs then also hold frames
// relayed into them (a six-hop path's middle switch), which no local queue feeds, and without the relay
// nothing would stop them; the lab's routes correct the lowest layer first, so such frames always come
// from a lower layer. Relaying upward too would let IHFQ groups wait on each other round a cycle: an
// upstream IHFQ is shared by the frames for all of this node's other switches, and one congested switch
// holds them all (a run of NDC(4,2) deadlocked so). Downward only, a paused IHFQ group waits on groups of
// higher layers and on DDQs, which never wait: no cycle, whatever the routes. The paper gives
// Algorithm 3 for two-port nodes only (docs/portfc.md §9). The relayed frame carries the port it came in
// by (pkt.Packet.SetFCVia): the receiving switch must know which of this node's switches the congested
// port is on.
func (l *PortFCLayout) onPortFC(n *NIC, in int, p *pkt.Packet) {
	now := n.clk.Now()
	cp := int(p.FCPort)
	if cp < 0 || cp >= l.N || cp == l.Self[in] {
		n.log.Violations = append(n.log.Violations, fmt.Sprintf("host %d port %d: PortFC frame names port %d (own port %d, radix %d) at %v",
			n.cfg.Host, in, cp, l.Self[in], l.N, now))
		return
	}
	q := compress(cp, l.Self[in])
	first, last := 0, l.k()-1 // IHFQ class: the types crossing two or more switches
	switch cq := int(p.FCQueue); {
	case cq >= 0 && cq < l.N-1:
	case cq == l.N-1:
		first, last = l.k(), l.k()
	default:
		n.log.Violations = append(n.log.Violations, fmt.Sprintf("host %d port %d: PortFC frame names queue %d of %d at %v",
			n.cfg.Host, in, cq, l.N, now))
		return
	}
	for t := first; t <= last; t++ {
		n.PauseQueue(in, t*(l.N-1)+q, p.FCPause)
		n.log.AddPause(records.Pause{At: now, Device: n.cfg.Device, Kind: records.Host,
			Port: int16(in), Queue: int16(t*(l.N-1) + q), On: p.FCPause})
	}
	ihfq := int(p.FCQueue) != l.N-1
	if ihfq && l.k() < 2 {
		return
	}
	for out := range n.ports {
		if out == in || (ihfq && out > in) {
			continue
		}
		f := *p
		f.InPort, f.Raw = 0, nil
		f.SetFCVia(in)
		n.SendControl(out, &f)
		n.log.AddPause(records.Pause{At: now, Device: n.cfg.Device, Kind: records.Host,
			Port: int16(out), Queue: p.FCQueue, On: p.FCPause, Sent: true, Hops: 1})
	}
}
