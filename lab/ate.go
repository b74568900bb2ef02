package lab

import (
	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/pkt"
)

// hostATE gives a NIC what ATE (nodes/ate.go) measures against: which port is its first hop into the
// high-bandwidth domain (the one to its layer-0 switch), and B_H as bytes in flight, the HBD port rate
// x the base round trip of the host's longest HBD-first path (to the host differing in every digit:
// the 4-hop HBD-then-ND path for k = 1). That RTT is also ATE's update period: the feedback delay of
// a first-hop choice.
func (l *Lab) hostATE(r *route.ATE, c *nodes.Config) {
	g := l.Graph
	node := g.Hosts[c.Host]
	c.ATE.P, c.ATE.Measure = r.P, r.Measure
	c.ATE.HBDPort = -1 // no layer-0 switch: nodes rejects the config, naming the port
	for p := range g.Nodes[node].Ports {
		s := g.Peer(node, p).Node
		if g.Nodes[s].Kind == topo.Switch && g.Nodes[s].Layer == 0 {
			c.ATE.HBDPort = p
			break
		}
	}
	if c.ATE.HBDPort < 0 {
		return
	}
	far, dist := -1, 0
	a := g.Nodes[node].Addr
	for i, h := range g.Hosts {
		d := 0
		for j, v := range g.Nodes[h].Addr {
			if v != a[j] {
				d++
			}
		}
		if d > dist {
			far, dist = i, d
		}
	}
	if far < 0 {
		return
	}
	ps, err := r.Paths(int(c.Host), far)
	if err != nil || len(ps) == 0 {
		return
	}
	mtu := l.Spec.Host.MTU
	if mtu == 0 {
		mtu = nodes.DefaultMTU
	}
	p := ps[0]
	var rtt clock.Time
	for i, rate := range p.Rates(g) {
		rtt += 2*p.Delays(g)[i] + clock.TxTime(pkt.DataSize(mtu, p.Hops()), rate)
	}
	c.ATE.CapacityBytes = int64(c.Ports[c.ATE.HBDPort].RateBps/8*rtt.Seconds() + 0.5)
}
