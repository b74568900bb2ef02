package route

import (
	"fmt"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// Via pins a flow through relay hosts (the spec's `via: [h1]`): the path is src -> relays[0] -> ... ->
// dst, each segment being alg's first (preferred) path between consecutive hosts. A nil alg means the
// shortest path through switches only (hosts do not transit inside a segment; the lowest ECMP port is
// taken), so in NDC each segment between hosts that differ in one digit is host -> shared switch -> host.
// src, dst and relays are host indices.
func Via(g *topo.Graph, src, dst int, relays []int, alg Router) (Path, error) {
	hosts := append(append([]int{src}, relays...), dst)
	for _, h := range hosts {
		if _, err := hostNode(g, h); err != nil {
			return Path{}, err
		}
	}
	var tables *Tables
	segs := make([]Path, 0, len(hosts)-1)
	for i := 0; i+1 < len(hosts); i++ {
		a, b := hosts[i], hosts[i+1]
		if a == b {
			return Path{}, fmt.Errorf("via: h%d follows itself", a)
		}
		var seg Path
		if alg != nil {
			ps, err := alg.Paths(a, b)
			if err != nil {
				return Path{}, fmt.Errorf("via segment h%d -> h%d: %w", a, b, err)
			}
			if len(ps) == 0 {
				return Path{}, fmt.Errorf("via segment h%d -> h%d: %s found no path", a, b, alg.Name())
			}
			seg = ps[0]
		} else {
			if tables == nil {
				var err error
				if tables, err = ShortestWith(g, false); err != nil {
					return Path{}, err
				}
			}
			ps, err := tables.Paths(g, a, b, 1)
			if err != nil {
				return Path{}, fmt.Errorf("via segment h%d -> h%d through switches: %w", a, b, err)
			}
			seg = ps[0]
		}
		segs = append(segs, seg)
	}
	return concat(segs), nil
}

// Explicit builds the path through the given node indices in order (the spec's `path: [h0, s0, h1, ...]`),
// taking the lowest port where two devices are joined by parallel links. It fails naming the first two
// consecutive devices that are not linked, or an end that is not a host.
func Explicit(g *topo.Graph, nodes []int) (Path, error) {
	if len(nodes) < 2 {
		return Path{}, fmt.Errorf("explicit path needs at least 2 devices, got %d", len(nodes))
	}
	if err := checkPorts(g); err != nil {
		return Path{}, err
	}
	for _, n := range nodes {
		if n < 0 || n >= len(g.Nodes) {
			return Path{}, fmt.Errorf("explicit path names node %d, topology has %d", n, len(g.Nodes))
		}
	}
	for _, n := range []int{nodes[0], nodes[len(nodes)-1]} {
		if g.Nodes[n].Kind != topo.Host {
			return Path{}, fmt.Errorf("explicit path must start and end at hosts, %s is a %s", g.Nodes[n].Name, g.Nodes[n].Kind)
		}
	}
	p := Path{Nodes: append([]int(nil), nodes...)}
	for i := 0; i+1 < len(nodes); i++ {
		a, b := nodes[i], nodes[i+1]
		port := -1
		for q := range g.Nodes[a].Ports {
			if g.Peer(a, q).Node == b {
				port = q
				break
			}
		}
		if port < 0 {
			return Path{}, fmt.Errorf("explicit path: %s and %s are not linked", g.Nodes[a].Name, g.Nodes[b].Name)
		}
		p.Ports = append(p.Ports, uint8(port))
	}
	return p, nil
}

// ExplicitNames is Explicit with device names ("h0", "s3", ...), as a spec writes them.
func ExplicitNames(g *topo.Graph, names []string) (Path, error) {
	nodes := make([]int, len(names))
	for i, name := range names {
		n, err := g.Lookup(name)
		if err != nil {
			return Path{}, err
		}
		nodes[i] = n
	}
	return Explicit(g, nodes)
}
