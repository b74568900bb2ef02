// Package route computes paths and forwarding tables from a topology graph: plain data that the harness
// hands to the engines (switch FIBs, NIC source routes). It never touches a device; a backend never
// computes routes (docs/architecture.md §The path of a spec).
//
// Index conventions, used throughout: src, dst and relays are HOST indices (h<i>, i.e. positions in
// Graph.Hosts), because that is how flows, records and FIBs name endpoints; Path.Nodes and Explicit take
// NODE indices (positions in Graph.Nodes), because a path also names switches.
package route

import (
	"fmt"
	"strings"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// Path is one way from a host to a host: the devices in order and the egress port taken at each device
// but the last, so len(Ports) == len(Nodes)-1. Hosts in the middle are relays (server-centric fabrics).
type Path struct {
	Nodes []int   // node indices; first and last are hosts
	Ports []uint8 // Ports[i] is the egress port at Nodes[i]
	// Prio, when set (DF-KSP with several lossless priorities), is the lossless class of each hop:
	// Prio[i] is the class the packet travels in on the link out of Nodes[i], 0 being the flow's own
	// priority. A switch moves a packet up one class where the path turns down-then-up, which it can
	// decide from (in-port, out-port) alone (FC+ paper §III-D). Nil means one class throughout.
	Prio []uint8
}

// Route is the source route a NIC stamps on the flow's packets (pkt.Packet.Route): the egress port at
// each device starting with the sending host. It shares storage with the path; callers must not mutate.
func (p Path) Route() []uint8 { return p.Ports }

// Hops is the number of links the path crosses.
func (p Path) Hops() int { return len(p.Ports) }

// Links returns the link crossed at each hop, in order.
func (p Path) Links(g *topo.Graph) []*topo.Link {
	ls := make([]*topo.Link, len(p.Ports))
	for i, port := range p.Ports {
		ls[i] = g.LinkAt(p.Nodes[i], int(port))
	}
	return ls
}

// Rates returns each hop's link rate in bit/s: with Delays, what an ideal (standalone) FCT needs.
func (p Path) Rates(g *topo.Graph) []float64 {
	rs := make([]float64, len(p.Ports))
	for i, l := range p.Links(g) {
		rs[i] = l.RateBps
	}
	return rs
}

// Delays returns each hop's propagation delay.
func (p Path) Delays(g *topo.Graph) []clock.Time {
	ds := make([]clock.Time, len(p.Ports))
	for i, l := range p.Links(g) {
		ds[i] = l.Delay
	}
	return ds
}

// Bottleneck is the lowest link rate on the path (0 for an empty path).
func (p Path) Bottleneck(g *topo.Graph) float64 {
	var min float64
	for i, r := range p.Rates(g) {
		if i == 0 || r < min {
			min = r
		}
	}
	return min
}

// Delay is the one-way propagation delay of the path (no serialization).
func (p Path) Delay(g *topo.Graph) clock.Time {
	var d clock.Time
	for _, x := range p.Delays(g) {
		d += x
	}
	return d
}

// Relays returns the node indices of the hosts the path passes through (neither first nor last).
func (p Path) Relays(g *topo.Graph) []int {
	var rs []int
	for i := 1; i+1 < len(p.Nodes); i++ {
		if g.Nodes[p.Nodes[i]].Kind == topo.Host {
			rs = append(rs, p.Nodes[i])
		}
	}
	return rs
}

// Format names the devices, e.g. "h15 s3 h12 s4 h0".
func (p Path) Format(g *topo.Graph) string {
	names := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		names[i] = g.Nodes[n].Name
	}
	return strings.Join(names, " ")
}

// Equal reports whether two paths take the same devices and ports.
func (p Path) Equal(q Path) bool {
	if len(p.Nodes) != len(q.Nodes) || len(p.Ports) != len(q.Ports) {
		return false
	}
	for i := range p.Nodes {
		if p.Nodes[i] != q.Nodes[i] {
			return false
		}
	}
	for i := range p.Ports {
		if p.Ports[i] != q.Ports[i] {
			return false
		}
	}
	return true
}

// Validate checks that the path is well formed on g: hosts at both ends, each port exists and leads to
// the next node. Paths from this package always validate; this is for paths read from files or specs.
func (p Path) Validate(g *topo.Graph) error {
	if len(p.Nodes) < 2 {
		return fmt.Errorf("path has %d devices, want at least 2", len(p.Nodes))
	}
	if len(p.Ports) != len(p.Nodes)-1 {
		return fmt.Errorf("path has %d devices but %d ports, want %d", len(p.Nodes), len(p.Ports), len(p.Nodes)-1)
	}
	for _, n := range p.Nodes {
		if n < 0 || n >= len(g.Nodes) {
			return fmt.Errorf("path names node %d, topology has %d", n, len(g.Nodes))
		}
	}
	first, last := p.Nodes[0], p.Nodes[len(p.Nodes)-1]
	for _, n := range []int{first, last} {
		if g.Nodes[n].Kind != topo.Host {
			return fmt.Errorf("path must start and end at hosts, %s is a %s", g.Nodes[n].Name, g.Nodes[n].Kind)
		}
	}
	for i, port := range p.Ports {
		a := p.Nodes[i]
		if int(port) >= len(g.Nodes[a].Ports) {
			return fmt.Errorf("%s has no port %d", g.Nodes[a].Name, port)
		}
		if peer := g.Peer(a, int(port)); peer.Node != p.Nodes[i+1] {
			return fmt.Errorf("%s port %d leads to %s, not %s", g.Nodes[a].Name, port,
				g.Nodes[peer.Node].Name, g.Nodes[p.Nodes[i+1]].Name)
		}
	}
	return nil
}

// hostNode maps a host index to its node index with a clear error.
func hostNode(g *topo.Graph, h int) (int, error) {
	if h < 0 || h >= len(g.Hosts) {
		return -1, fmt.Errorf("no host h%d (topology %s has %d hosts)", h, g.Family, len(g.Hosts))
	}
	return g.Hosts[h], nil
}

// checkPorts rejects nodes whose port index does not fit a source-route byte.
func checkPorts(g *topo.Graph) error {
	for i := range g.Nodes {
		if len(g.Nodes[i].Ports) > 256 {
			return fmt.Errorf("%s has %d ports; source routes carry port indices as one byte (max 256)",
				g.Nodes[i].Name, len(g.Nodes[i].Ports))
		}
	}
	return nil
}

// concat joins segments that share their junction node.
func concat(segs []Path) Path {
	var out Path
	for i, s := range segs {
		if i == 0 {
			out.Nodes = append(out.Nodes, s.Nodes...)
		} else {
			out.Nodes = append(out.Nodes, s.Nodes[1:]...)
		}
		out.Ports = append(out.Ports, s.Ports...)
	}
	return out
}
