package route

import "github.com/fabriclab/fabriclab/lab/topo"

// WithoutLinks is g with the links in down cut: each end of a cut link leads back to its own node, so
// routing sees no neighbour there, and every other port keeps its number (the tables stay valid for the
// devices that are running). Failed links in a live lab and a spec's faults recompute tables on it.
func WithoutLinks(g *topo.Graph, down map[int]bool) *topo.Graph {
	c := *g
	c.Nodes = make([]topo.Node, len(g.Nodes))
	for i, n := range g.Nodes {
		n.Ports = append([]int(nil), n.Ports...)
		c.Nodes[i] = n
	}
	c.Links = append([]topo.Link(nil), g.Links...)
	for li := range down {
		lk := g.Links[li]
		for _, e := range []topo.End{lk.A, lk.B} {
			c.Links = append(c.Links, topo.Link{A: e, B: e, RateBps: lk.RateBps, Delay: lk.Delay})
			c.Nodes[e.Node].Ports[e.Port] = len(c.Links) - 1
		}
	}
	return &c
}
