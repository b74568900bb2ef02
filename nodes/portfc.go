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
		if len(c.Ports) != 2 {
			return fmt.Errorf("nodes: config.flow_control portfc: PortFC node queues are defined for two-port nodes (NDC k=1), this NIC has %d ports", len(c.Ports))
		}
		if pc.N < 2 || 2*pc.N > 64 {
			return fmt.Errorf("nodes: config.portfc.n: want 2..32 (switch radix), got %d", pc.N)
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
		p.Layout = FIFOLayout{Tags: c.PFCStar.Tags, Base: c.PFCStar.Base}
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

// PortFCLayout is PortFC's node egress port for k = 1: 2n queues per port (paper §III-B.2).
//
//	0 .. n-2    a: four-hop flows from this node, by the egress port at the next switch (toward the relay)
//	n-1 .. 2n-3 b: two-hop flows from this node, by the egress port at the next switch (toward the destination)
//	2n-2        RQ: everything this node relays, one FIFO, never paused
//	2n-1        HQ: ACK/NACK/CNP and PortFC frames, strict priority
//
// Indices at the next switch leave out this node's own port there (docs/portfc.md, resolution 1).
type PortFCLayout struct {
	N    int
	Self []int
}

func (l *PortFCLayout) Queues(int) int  { return 2 * l.N }
func (l *PortFCLayout) Control(int) int { return 2*l.N - 1 }

// Local needs the flow's source route: the queue depends on the next switch's egress port. A flow
// without one gets -1, which StartFlow reports as an error.
func (l *PortFCLayout) Local(port int, p *pkt.Packet) int {
	e := p.PortAhead(1)
	if e < 0 || e >= l.N || e == l.Self[port] {
		return -1
	}
	q := compress(e, l.Self[port])
	if p.PortAhead(2) < 0 { // the next switch delivers: two-hop
		return l.N - 1 + q
	}
	return q
}

func (l *PortFCLayout) Relay(int, *pkt.Packet) int { return 2*l.N - 2 }

// PFC: PortFC fabrics send no PFC frames; a stray one pauses nothing.
func (l *PortFCLayout) PFC(int, int) []int { return nil }

// onPortFC is Algorithm 3 (the paper titles it "Switch", but it is the node's handler): an IHFQ-class
// frame pauses the four-hop queue a[port]; a DDQ-class frame pauses the two-hop queue b[port] and is
// relayed unchanged to the switches on this node's other ports, whose IHFQ feeding the congested port
// it pauses (Algorithm 4). Nodes detect nothing and originate nothing; the RQ is never paused.
func (l *PortFCLayout) onPortFC(n *NIC, in int, p *pkt.Packet) {
	now := n.clk.Now()
	cp := int(p.FCPort)
	if cp < 0 || cp >= l.N || cp == l.Self[in] {
		n.log.Violations = append(n.log.Violations, fmt.Sprintf("host %d port %d: PortFC frame names port %d (own port %d, radix %d) at %v",
			n.cfg.Host, in, cp, l.Self[in], l.N, now))
		return
	}
	q := compress(cp, l.Self[in])
	switch cq := int(p.FCQueue); {
	case cq >= 0 && cq < l.N-1:
	case cq == l.N-1:
		q += l.N - 1
	default:
		n.log.Violations = append(n.log.Violations, fmt.Sprintf("host %d port %d: PortFC frame names queue %d of %d at %v",
			n.cfg.Host, in, cq, l.N, now))
		return
	}
	n.PauseQueue(in, q, p.FCPause)
	n.log.AddPause(records.Pause{At: now, Device: n.cfg.Device, Kind: records.Host,
		Port: int16(in), Queue: int16(q), On: p.FCPause})
	if int(p.FCQueue) != l.N-1 {
		return
	}
	for out := range n.ports {
		if out == in {
			continue
		}
		f := *p
		f.InPort, f.Raw = 0, nil
		n.SendControl(out, &f)
		n.log.AddPause(records.Pause{At: now, Device: n.cfg.Device, Kind: records.Host,
			Port: int16(out), Queue: p.FCQueue, On: p.FCPause, Sent: true, Hops: 1})
	}
}
