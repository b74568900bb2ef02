package route

import (
	"fmt"

	"github.com/fabriclab/fabriclab/fib"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// Tables are per-device next hops toward every host, for fabrics that forward by destination.
//
// FIB[node].Ports(dst) (Ports(node, dst)) is the ECMP set of egress ports at graph node `node` toward
// host h<dst>, in ascending port order: for a switch that is its forwarding table; for a host it is the
// NIC's choice of first hop (one port on single-homed hosts; on multi-homed NDC hosts every port that
// starts a shortest path). The set is empty at dst itself and where dst is unreachable. The lab hands
// FIB[node] to the device as it is, so the tables and the devices share one copy.
type Tables struct {
	// HostTransit records whether paths may pass through hosts (server-centric fabrics such as NDC,
	// where hosts relay) or not (switch-centric fabrics: a host only sends and receives).
	HostTransit bool
	FIB         []fib.Table
	g           *topo.Graph // what Dist walks
}

// serverCentric lists the families whose hosts relay traffic. Everything else is switch-centric.
var serverCentric = map[string]bool{"ndc": true, "bcube": true, "dcell": true}

// ServerCentric reports whether g's hosts forward traffic for others (NDC/BCube: the "node-centric"
// fabrics where every multi-digit path goes through a relay host).
func ServerCentric(g *topo.Graph) bool { return serverCentric[g.Family] }

// Shortest computes ECMP tables over all shortest paths. Paths may transit hosts only on server-centric
// families (ServerCentric), where hosts are relays; on switch-centric families a host is never a middle
// hop even if that would be shorter (two hosts on the same pair of switches do not bridge them).
func Shortest(g *topo.Graph) (*Tables, error) { return ShortestWith(g, ServerCentric(g)) }

// ShortestWith is Shortest with an explicit choice of whether hosts may be transited.
func ShortestWith(g *topo.Graph, hostTransit bool) (*Tables, error) {
	if err := checkPorts(g); err != nil {
		return nil, err
	}
	nn, nh := len(g.Nodes), len(g.Hosts)
	t := &Tables{HostTransit: hostTransit, FIB: make([]fib.Table, nn), g: g}
	// One allocation for every node's index: 612 nodes x 432 hosts x 2 bytes at k=12.
	idx := make([]uint16, nn*nh)
	b := make([]*fib.Builder, nn)
	for n := range b {
		b[n] = fib.NewBuilderInto(idx[n*nh : (n+1)*nh : (n+1)*nh])
	}
	dist := make([]int32, nn)
	queue := make([]int, 0, nn)
	var scratch []uint8
	for d, dn := range g.Hosts {
		// BFS backwards from the destination: every link is bidirectional, so the distance to d equals
		// the distance from d. A node may relay (be expanded) only if it is a switch or a transit host;
		// non-transit hosts still get a distance, as sources.
		for i := range dist {
			dist[i] = -1
		}
		dist[dn] = 0
		queue = append(queue[:0], dn)
		for qi := 0; qi < len(queue); qi++ {
			u := queue[qi]
			if u != dn && !t.relays(g, u) {
				continue
			}
			for p := range g.Nodes[u].Ports {
				v := g.Peer(u, p).Node
				if dist[v] < 0 {
					dist[v] = dist[u] + 1
					queue = append(queue, v)
				}
			}
		}
		for u := range g.Nodes {
			if u == dn || dist[u] < 0 {
				continue
			}
			scratch = scratch[:0]
			for p := range g.Nodes[u].Ports {
				v := g.Peer(u, p).Node
				if dist[v] == dist[u]-1 && (v == dn || t.relays(g, v)) {
					scratch = append(scratch, uint8(p))
				}
			}
			if len(scratch) == 0 {
				continue
			}
			if err := b[u].Set(d, scratch); err != nil {
				return nil, fmt.Errorf("%s: %w", g.Nodes[u].Name, err)
			}
		}
	}
	for n := range b {
		t.FIB[n] = b[n].Table()
	}
	return t, nil
}

// Dist is the number of links on a shortest allowed path from node to host h<dst>, -1 if there is none.
// Every port in a set leads one link closer, so the walk along first ports is a shortest path; walking
// costs a few steps where a stored distance per (node, host) cost as much memory as the tables.
func (t *Tables) Dist(node, dst int) int {
	dn := t.g.Hosts[dst]
	n := 0
	for u := node; u != dn; n++ {
		set := t.FIB[u].Ports(dst)
		if len(set) == 0 {
			return -1
		}
		u = t.g.Peer(u, int(set[0])).Node
	}
	return n
}

// relays reports whether node n may be a middle hop under these tables.
func (t *Tables) relays(g *topo.Graph, n int) bool {
	return g.Nodes[n].Kind == topo.Switch || t.HostTransit
}

// Ports is the ECMP set at node toward host dst.
func (t *Tables) Ports(node, dst int) []uint8 { return t.FIB[node].Ports(dst) }

// Paths enumerates shortest paths from host src to host dst by following the tables, in lexicographic
// port order, stopping after limit paths (limit <= 0: all of them; their number can be exponential).
func (t *Tables) Paths(g *topo.Graph, src, dst, limit int) ([]Path, error) {
	sn, err := hostNode(g, src)
	if err != nil {
		return nil, err
	}
	if _, err := hostNode(g, dst); err != nil {
		return nil, err
	}
	if src == dst {
		return nil, fmt.Errorf("h%d to itself has no path", src)
	}
	if t.Dist(sn, dst) < 0 {
		return nil, fmt.Errorf("h%d cannot reach h%d", src, dst)
	}
	var out []Path
	nodes := []int{sn}
	var ports []uint8
	var walk func(u int) bool
	walk = func(u int) bool {
		set := t.FIB[u].Ports(dst)
		if len(set) == 0 { // at dst
			out = append(out, Path{Nodes: append([]int(nil), nodes...), Ports: append([]uint8(nil), ports...)})
			return limit > 0 && len(out) >= limit
		}
		for _, p := range set {
			v := g.Peer(u, int(p)).Node
			nodes, ports = append(nodes, v), append(ports, p)
			stop := walk(v)
			nodes, ports = nodes[:len(nodes)-1], ports[:len(ports)-1]
			if stop {
				return true
			}
		}
		return false
	}
	walk(sn)
	return out, nil
}

// Pick follows the tables from host src to host dst choosing one ECMP member per hop from entropy (e.g.
// a hash of the flow's 5-tuple), the way hash-based ECMP switches would. The per-hop choice re-mixes the
// entropy with the hop number so that consecutive tiers do not pick correlated members.
func (t *Tables) Pick(g *topo.Graph, src, dst int, entropy uint32) (Path, error) {
	sn, err := hostNode(g, src)
	if err != nil {
		return Path{}, err
	}
	if _, err := hostNode(g, dst); err != nil {
		return Path{}, err
	}
	if src == dst {
		return Path{}, fmt.Errorf("h%d to itself has no path", src)
	}
	if t.Dist(sn, dst) < 0 {
		return Path{}, fmt.Errorf("h%d cannot reach h%d", src, dst)
	}
	p := Path{Nodes: []int{sn}}
	for u, hop := sn, uint32(0); ; hop++ {
		set := t.FIB[u].Ports(dst)
		if len(set) == 0 {
			return p, nil
		}
		port := set[mix(entropy, hop)%uint32(len(set))]
		u = g.Peer(u, int(port)).Node
		p.Nodes, p.Ports = append(p.Nodes, u), append(p.Ports, port)
	}
}

// mix is a small integer hash (lowbias32) of entropy and hop.
func mix(x, hop uint32) uint32 {
	x ^= hop * 0x9e3779b9
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return x
}
