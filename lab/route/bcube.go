package route

import (
	"fmt"
	"sort"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// BCube/NDC digit-correction routing (PortFC paper §III-A, after BCube SIGCOMM'09). A host's Addr holds its
// BCube digits a_0 first; its port l leads to its layer-l switch, which joins the hosts that differ from
// it only in digit l. Correcting digit l means: leave by the layer-l switch, arrive at the host whose
// digit l is the destination's. Every path alternates host, switch, host, ...; the hosts in the middle
// are relays.
//
// Rather than trusting port numbering, each step looks for the port that leads to the right device (a
// layer-l switch, then the host with the wanted address), so a builder that numbers ports differently
// still routes correctly, and a graph that is not a BCube fails with an error naming the device.

// digits returns host h's BCube address and checks it has one.
func digits(g *topo.Graph, node int) ([]int, error) {
	a := g.Nodes[node].Addr
	if len(a) == 0 {
		return nil, fmt.Errorf("%s has no BCube address (topology %s is not NDC/BCube)", g.Nodes[node].Name, g.Family)
	}
	return a, nil
}

// correct moves from host node `from` across its layer-l switch to the host whose address is from's with
// digit l set to v, returning the two hops.
func correct(g *topo.Graph, from, l, v int) (sw int, swPort uint8, next int, nextPort uint8, err error) {
	hostPort := -1
	for p := range g.Nodes[from].Ports {
		s := g.Peer(from, p).Node
		if g.Nodes[s].Kind == topo.Switch && g.Nodes[s].Layer == l {
			hostPort, sw = p, s
			break
		}
	}
	if hostPort < 0 {
		return 0, 0, 0, 0, fmt.Errorf("%s has no layer-%d switch", g.Nodes[from].Name, l)
	}
	want := append([]int(nil), g.Nodes[from].Addr...)
	want[l] = v
	for p := range g.Nodes[sw].Ports {
		h := g.Peer(sw, p).Node
		if g.Nodes[h].Kind == topo.Host && sameAddr(g.Nodes[h].Addr, want) {
			return sw, uint8(p), h, uint8(hostPort), nil
		}
	}
	return 0, 0, 0, 0, fmt.Errorf("%s (layer %d) has no host with address %v", g.Nodes[sw].Name, l, want)
}

func sameAddr(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// walk corrects digits in the given order from host node `start` toward address dst, skipping digits
// that already match, and appends the hops to p.
func walk(g *topo.Graph, p *Path, start int, dst []int, order []int) error {
	cur := start
	for _, l := range order {
		if g.Nodes[cur].Addr[l] == dst[l] {
			continue
		}
		sw, swPort, next, hostPort, err := correct(g, cur, l, dst[l])
		if err != nil {
			return err
		}
		p.Nodes = append(p.Nodes, sw, next)
		p.Ports = append(p.Ports, hostPort, swPort)
		cur = next
	}
	return nil
}

// LowestFirst is the default digit order for k+1 digits: layer 0 first (the order of flow F1 in the
// PortFC paper's Fig. 6: h15 -> layer-0 switch -> h12 -> layer-1 switch -> h0).
func LowestFirst(k1 int) []int {
	o := make([]int, k1)
	for i := range o {
		o[i] = i
	}
	return o
}

// BCubePath corrects the digits of host src toward host dst in the given order (a permutation of
// 0..k; nil = LowestFirst). Digits that already match are skipped, so the path has 2h links for
// Hamming distance h.
func BCubePath(g *topo.Graph, src, dst int, order []int) (Path, error) {
	sn, dn, a, b, err := bcubeEnds(g, src, dst)
	if err != nil {
		return Path{}, err
	}
	if order == nil {
		order = LowestFirst(len(a))
	}
	if err := checkOrder(order, len(a)); err != nil {
		return Path{}, err
	}
	p := Path{Nodes: []int{sn}}
	if err := walk(g, &p, sn, b, order); err != nil {
		return Path{}, err
	}
	if p.Nodes[len(p.Nodes)-1] != dn {
		return Path{}, fmt.Errorf("digit correction from h%d ended at %s, not h%d", src, g.Nodes[p.Nodes[len(p.Nodes)-1]].Name, dst)
	}
	return p, nil
}

// BCubePaths returns BCube's k+1 parallel paths (BuildPathSet). Path i corrects digit i first and then
// the others in descending order modulo k+1: order [i, i-1, ..., i-k]. When src and dst already agree
// in digit i, path i detours: it first moves to the neighbour whose digit i is (a_i+1) mod n, corrects the
// other digits in order [i-1, ..., i-k], and corrects digit i back last (BCube's AltDCRouting). The
// detour keeps the k+1 paths link-disjoint at the price of two extra links. Path i is at index i; use
// SortByHops for shortest first.
func BCubePaths(g *topo.Graph, src, dst int) ([]Path, error) {
	sn, dn, a, b, err := bcubeEnds(g, src, dst)
	if err != nil {
		return nil, err
	}
	k1 := len(a)
	paths := make([]Path, k1)
	for i := 0; i < k1; i++ {
		order := make([]int, k1)
		for j := range order {
			order[j] = ((i-j)%k1 + k1) % k1
		}
		p := Path{Nodes: []int{sn}}
		start := sn
		if a[i] == b[i] {
			// Detour through the layer-i switch to the neighbour with digit i changed; its radix is n.
			n, err := layerRadix(g, sn, i)
			if err != nil {
				return nil, err
			}
			sw, swPort, next, hostPort, err := correct(g, sn, i, (a[i]+1)%n)
			if err != nil {
				return nil, err
			}
			p.Nodes = append(p.Nodes, sw, next)
			p.Ports = append(p.Ports, hostPort, swPort)
			start = next
			order = append(order[1:], i) // others descending from i-1, digit i last
		}
		if err := walk(g, &p, start, b, order); err != nil {
			return nil, err
		}
		if p.Nodes[len(p.Nodes)-1] != dn {
			return nil, fmt.Errorf("digit correction path %d from h%d ended at %s, not h%d", i, src, g.Nodes[p.Nodes[len(p.Nodes)-1]].Name, dst)
		}
		paths[i] = p
	}
	return paths, nil
}

// SortByHops orders paths shortest first, keeping the given order among equals.
func SortByHops(ps []Path) {
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Hops() < ps[j].Hops() })
}

// layerRadix is the port count of host node's layer-l switch: the BCube n.
func layerRadix(g *topo.Graph, node, l int) (int, error) {
	for p := range g.Nodes[node].Ports {
		s := g.Peer(node, p).Node
		if g.Nodes[s].Kind == topo.Switch && g.Nodes[s].Layer == l {
			return len(g.Nodes[s].Ports), nil
		}
	}
	return 0, fmt.Errorf("%s has no layer-%d switch", g.Nodes[node].Name, l)
}

func bcubeEnds(g *topo.Graph, src, dst int) (sn, dn int, a, b []int, err error) {
	if sn, err = hostNode(g, src); err != nil {
		return
	}
	if dn, err = hostNode(g, dst); err != nil {
		return
	}
	if src == dst {
		err = fmt.Errorf("h%d to itself has no path", src)
		return
	}
	if err = checkPorts(g); err != nil {
		return
	}
	if a, err = digits(g, sn); err != nil {
		return
	}
	if b, err = digits(g, dn); err != nil {
		return
	}
	if len(a) != len(b) {
		err = fmt.Errorf("h%d has %d digits but h%d has %d", src, len(a), dst, len(b))
	}
	return
}

func checkOrder(order []int, k1 int) error {
	if len(order) != k1 {
		return fmt.Errorf("digit order %v: want a permutation of 0..%d", order, k1-1)
	}
	seen := make([]bool, k1)
	for _, l := range order {
		if l < 0 || l >= k1 || seen[l] {
			return fmt.Errorf("digit order %v: want a permutation of 0..%d", order, k1-1)
		}
		seen[l] = true
	}
	return nil
}
