package lab

import (
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/switchsw"
	"github.com/fabriclab/fabriclab/switchsw/fc"
	"github.com/fabriclab/fabriclab/units"
)

// This file turns switch.flow_control (portfc, pfcstar) and switch.relay_pfc into the engines'
// plain-data configs. docs/portfc.md says why each choice was made.

// checkFC refuses flow-control settings the graph cannot carry, naming the spec field.
func (l *Lab) checkFC() error {
	s, g := l.Spec, l.Graph
	switch s.Switch.FlowControl {
	case "portfc":
		if g.Family != "ndc" {
			return fmt.Errorf("switch.flow_control: portfc needs an NDC(n,k) topology (every switch neighbour a node of k+1 ports), got family %q", g.Family)
		}
		for _, h := range g.Hosts {
			if len(g.Nodes[h].Ports) < 2 {
				return fmt.Errorf("switch.flow_control: portfc needs relaying nodes (NDC k >= 1); nodes here have %d port", len(g.Nodes[h].Ports))
			}
		}
		k1 := len(g.Nodes[g.Hosts[0]].Ports)
		for _, sw := range g.Switches {
			if n := len(g.Nodes[sw].Ports); k1*(n-1)+2 > 64 {
				return fmt.Errorf("switch.flow_control: portfc needs (k+1)(n-1)+2 node queues per port, at most 64: n = %d with k = %d is too large", n, k1-1)
			}
		}
		if s.Switch.Alpha != 0 {
			return fmt.Errorf("switch.alpha: portfc uses the static xoff/xon thresholds of the paper (6/4 BDP); remove alpha")
		}
	case "pfcstar":
		if p := s.Switch.Priorities; p >= 8 {
			return fmt.Errorf("switch.priorities: pfcstar takes at most 7 tags here (%d asked): NICs cannot send data on priority 0", p)
		}
	}
	return nil
}

// pfcStarBase is the priority of tag 0: the NIC's data priority when all tags fit above it.
func pfcStarBase(tags int) int { return min(nodes.DefaultDataPrio, 8-tags) }

func (l *Lab) pfcStarTags() int { return max(1, l.Spec.Switch.Priorities) }

// switchFC fills switch n's flow-control fields beyond the common ones switchConfig set.
func (l *Lab) switchFC(n int, c *switchsw.Config) {
	s, g := l.Spec, l.Graph
	switch s.Switch.FlowControl {
	case "portfc":
		// n data queues (n-1 IHFQs + DDQ); the switch's strict queues are the paper's HQ.
		c.DataQueues = len(g.Nodes[n].Ports)
		bdp := c.Ports[0].BDP()
		f := &c.FlowControl
		f.XOFF = units.Size{Bytes: s.Switch.XOFF.Resolve(bdp)}
		f.XON = units.Size{Bytes: s.Switch.XON.Resolve(bdp)}
		f.Alpha = 0
		for p := range g.Nodes[n].Ports {
			x := g.Peer(n, p).Node
			row := make([]int16, len(g.Nodes[x].Ports))
			for j := range row {
				if e := g.Peer(x, j); e.Node == n {
					row[j] = -1
				} else {
					row[j] = int16(e.Port)
				}
			}
			f.PortFC.PeerSelf = append(f.PortFC.PeerSelf, row)
		}
	case "pfcstar":
		tags := l.pfcStarTags()
		base := pfcStarBase(tags)
		c.FlowControl.PFCStar = fc.PFCStarConfig{Tags: tags, Base: base, EverySwitch: s.Switch.PFCStarRaise == "switches"}
		c.Lossless = make([]bool, 8)
		for t := 0; t < tags; t++ {
			c.Lossless[base+t] = true
		}
	}
}

// hostFC fills NIC n's flow-control fields.
func (l *Lab) hostFC(n int, c *nodes.Config) {
	s, g := l.Spec, l.Graph
	mode := s.Switch.FlowControl
	switch mode {
	case "portfc":
		c.FlowControl = nodes.FCPortFC
		c.PortFC.N = len(g.Nodes[g.Peer(n, 0).Node].Ports)
		for p := range g.Nodes[n].Ports {
			c.PortFC.Self = append(c.PortFC.Self, g.Peer(n, p).Port)
		}
		return
	case "pfcstar":
		c.FlowControl = nodes.FCPFCStar
		tags := l.pfcStarTags()
		c.DataPrio = uint8(pfcStarBase(tags))
		c.PFCStar = nodes.PFCStarConfig{Tags: tags, Base: pfcStarBase(tags), KeepAtRelays: s.Switch.PFCStarRaise == "switches"}
	case "pfc":
		c.FlowControl = nodes.FCPFC
	default:
		return
	}
	// Relay PFC only means something where hosts forward; on switch-centric fabrics a host has no
	// upstream to pass a pause to and holds nothing for others.
	if !route.ServerCentric(g) || len(g.Nodes[n].Ports) < 2 {
		return
	}
	link := g.LinkAt(n, 0)
	bdp := int64(link.RateBps/8*link.Delay.Seconds() + 0.5)
	c.RelayPFC = nodes.RelayPFCConfig{Mode: s.Switch.RelayPFC,
		XOFFBytes: s.Switch.XOFF.Resolve(bdp), XONBytes: s.Switch.XON.Resolve(bdp)}
	if c.RelayPFC.Mode == nodes.RelayIngress && c.RelayPFC.XONBytes >= c.RelayPFC.XOFFBytes {
		c.RelayPFC.XONBytes = c.RelayPFC.XOFFBytes * 2 / 3
	}
}

// PortFCQueueBound is the most a PortFC switch data queue (the IHFQ group or the DDQ of one egress
// port) can hold, for switches of radix n whose links run at rateBps with one-way delay delay
// (docs/portfc.md §3, "Headroom"): X_off, plus what each of the n-1 other nodes on the switch still
// delivers after the pause. A node's b-queue stops one hop after the pause (one PFC headroom,
// switchsw.Headroom: two BDPs in flight plus frames already being serialized), but its relay queue is
// never paused: the relayed pause must cross a second link to stop the IHFQ of the switch feeding it,
// so a second headroom's worth keeps arriving through the relay. A one-hop "X_OFF + headroom"
// bound (not the paper's; it gives none) is this with the headroom counted per feeding node and per hop.
func PortFCQueueBound(xoff int64, n int, rateBps float64, delay clock.Time, mtu int) int64 {
	return xoff + int64(n-1)*2*switchsw.Headroom(rateBps, delay, mtu)
}

// PortFCQueueBound is PortFCQueueBound for switch i of the lab (its XOFF, radix, first port, MTU).
func (l *Lab) PortFCQueueBound(i int) int64 {
	c := l.Switches[i].Config
	p := c.Ports[0]
	return PortFCQueueBound(c.FlowControl.XOFF.Resolve(p.BDP()), len(c.Ports), p.RateBps, p.Delay, c.MTU)
}

// checkBuffers refuses a switch.buffer that headroom and reserves leave no shared space in (the
// switch engine would refuse it later, as "mmu: ...", without naming the field), and warns about
// lossless settings that are legal but cannot work as meant: a headroom below what the link needs, a
// static XOFF above the shared buffer.
func (l *Lab) checkBuffers() error {
	s := l.Spec
	warned := map[string]bool{}
	warn := func(field, format string, a ...any) {
		if !warned[field] {
			warned[field] = true
			l.Warnings = append(l.Warnings, field+": "+fmt.Sprintf(format, a...))
		}
	}
	for _, sd := range l.Switches {
		name := l.Graph.Nodes[sd.Node].Name
		p, err := switchsw.PlanBuffer(sd.Config)
		if err != nil {
			return fmt.Errorf("switch: %w", err)
		}
		if p.Shared <= 0 {
			return fmt.Errorf("switch.buffer: %s leaves no shared space on %s: headroom takes %s (%d lossless priorities x %d ports) and reserves %s; give at least %s, or lower switch.headroom / switch.reserve",
				units.FormatBytes(p.Buffer), name, units.FormatBytes(p.Headroom), p.Lossless, len(p.PortHeadroom),
				units.FormatBytes(p.Reserve), units.FormatBytes(p.NeedBuffer()))
		}
		if p.Lossless == 0 {
			continue
		}
		for i := range p.PortHeadroom {
			link := sd.Config.Ports[i]
			if !s.Switch.Headroom.IsZero() && p.PortHeadroom[i] < p.PortNeed[i] {
				warn("switch.headroom", "%s is below the %s a %s, %v link needs (2 BDP + 3 MTU + a pause frame) on %s port %d: frames in flight after a pause can overflow it, and each such drop is a lossless violation",
					units.FormatBytes(p.PortHeadroom[i]), units.FormatBytes(p.PortNeed[i]), units.FormatRate(link.RateBps), link.Delay, name, i)
			}
			if p.XOFF[i] > p.Shared {
				warn("switch.xoff", "%s exceeds the %s of shared buffer left after headroom and reserves on %s: the buffer fills before a port pauses, and lossless queues drop",
					units.FormatBytes(p.XOFF[i]), units.FormatBytes(p.Shared), name)
			}
		}
	}
	return nil
}
