package route

import (
	"fmt"
	"sync"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// Fabric is the switch-level view of a switch-centric topology that routing algorithms over switches
// (KSP, DF-KSP, up*/down*, smart, VLB, ...) share: switches by position, directed trunk arcs, and where
// each host attaches. Hosts never transit.
type Fabric struct {
	G *topo.Graph
	// Sw[i] is the node index of switch position i (= g.Switches); Pos is the inverse.
	Sw  []int
	Pos map[int]int
	// Out[i] lists the trunk arcs leaving switch i, in port order.
	Out [][]Arc
	// HostSw[h] is the switch position host h hangs off, HostPort[h] the switch port toward it.
	HostSw   []int
	HostPort []uint8
	// Terminals[i] is the number of hosts on switch i (the FC paper's P_i).
	Terminals []int
}

// Arc is one direction of a trunk link: out of switch From on Port toward switch To.
type Arc struct {
	From, To int // switch positions
	Port     uint8
	Link     int
}

// SwPath is a switch-level path as the arcs it crosses; empty for two hosts on one switch.
type SwPath []Arc

// NewFabric builds the switch view; it fails on server-centric fabrics and multi-homed hosts, which the
// switch-level algorithms do not model.
func NewFabric(g *topo.Graph) (*Fabric, error) {
	if ServerCentric(g) {
		return nil, fmt.Errorf("family %s is server-centric (hosts relay); switch-level routing does not apply", g.Family)
	}
	if err := checkPorts(g); err != nil {
		return nil, err
	}
	f := &Fabric{G: g, Sw: g.Switches, Pos: map[int]int{}, Out: make([][]Arc, len(g.Switches)),
		HostSw: make([]int, len(g.Hosts)), HostPort: make([]uint8, len(g.Hosts)), Terminals: make([]int, len(g.Switches))}
	for i, n := range g.Switches {
		f.Pos[n] = i
	}
	for h, hn := range g.Hosts {
		if len(g.Nodes[hn].Ports) != 1 {
			return nil, fmt.Errorf("host %s has %d ports; switch-level routing needs single-homed hosts", g.Nodes[hn].Name, len(g.Nodes[hn].Ports))
		}
		peer := g.Peer(hn, 0)
		i, ok := f.Pos[peer.Node]
		if !ok {
			return nil, fmt.Errorf("host %s is not attached to a switch", g.Nodes[hn].Name)
		}
		f.HostSw[h], f.HostPort[h] = i, uint8(peer.Port)
		f.Terminals[i]++
	}
	for i, n := range g.Switches {
		for p := range g.Nodes[n].Ports {
			peer := g.Peer(n, p)
			if j, ok := f.Pos[peer.Node]; ok {
				f.Out[i] = append(f.Out[i], Arc{From: i, To: j, Port: uint8(p), Link: g.Nodes[n].Ports[p]})
			}
		}
	}
	return f, nil
}

// ArcBetween is the lowest-port arc from switch a to switch b.
func (f *Fabric) ArcBetween(a, b int) (Arc, bool) {
	for _, x := range f.Out[a] {
		if x.To == b {
			return x, true
		}
	}
	return Arc{}, false
}

// FromSwitches turns a switch position sequence into arcs (lowest port between neighbours).
func (f *Fabric) FromSwitches(seq []int) (SwPath, error) {
	p := make(SwPath, 0, len(seq))
	for i := 0; i+1 < len(seq); i++ {
		a, ok := f.ArcBetween(seq[i], seq[i+1])
		if !ok {
			return nil, fmt.Errorf("switches s%d and s%d are not linked", seq[i], seq[i+1])
		}
		p = append(p, a)
	}
	return p, nil
}

// Switches returns the switch positions the path visits, starting at from.
func (p SwPath) Switches(from int) []int {
	out := []int{from}
	for _, a := range p {
		out = append(out, a.To)
	}
	return out
}

// HostPath is the host-level path from host src to host dst over sp (which must start at src's switch
// and end at dst's).
func (f *Fabric) HostPath(src, dst int, sp SwPath) Path {
	g := f.G
	p := Path{Nodes: []int{g.Hosts[src], f.Sw[f.HostSw[src]]}, Ports: []uint8{0}}
	for _, a := range sp {
		p.Nodes = append(p.Nodes, f.Sw[a.To])
		p.Ports = append(p.Ports, a.Port)
	}
	p.Nodes = append(p.Nodes, g.Hosts[dst])
	p.Ports = append(p.Ports, f.HostPort[dst])
	return p
}

// TrunkHops is the number of switch-to-switch links of a host path on a switch-centric fabric.
func TrunkHops(p Path) int {
	if len(p.Ports) < 2 {
		return 0
	}
	return len(p.Ports) - 2
}

// switchRouter adapts a switch-pair path computation to Router: paths are computed once per ordered
// switch pair (every host pair on the same two switches shares them) and cached.
type switchRouter struct {
	name  string
	f     *Fabric
	paths func(a, b int) ([]SwPath, error)

	mu    sync.Mutex
	cache map[[2]int][]SwPath
}

func newSwitchRouter(name string, f *Fabric, paths func(a, b int) ([]SwPath, error)) *switchRouter {
	return &switchRouter{name: name, f: f, paths: paths, cache: map[[2]int][]SwPath{}}
}

func (r *switchRouter) Name() string { return r.name }

// SwitchPaths returns the cached switch-level paths from switch a to switch b.
func (r *switchRouter) SwitchPaths(a, b int) ([]SwPath, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ps, ok := r.cache[[2]int{a, b}]; ok {
		return ps, nil
	}
	var ps []SwPath
	if a == b {
		ps = []SwPath{{}}
	} else {
		var err error
		if ps, err = r.paths(a, b); err != nil {
			return nil, err
		}
		if len(ps) == 0 {
			return nil, fmt.Errorf("routing %s: no path from s%d to s%d", r.name, a, b)
		}
	}
	r.cache[[2]int{a, b}] = ps
	return ps, nil
}

func (r *switchRouter) Paths(src, dst int) ([]Path, error) {
	if err := r.hosts(src, dst); err != nil {
		return nil, err
	}
	sps, err := r.SwitchPaths(r.f.HostSw[src], r.f.HostSw[dst])
	if err != nil {
		return nil, err
	}
	out := make([]Path, len(sps))
	for i, sp := range sps {
		out[i] = r.f.HostPath(src, dst, sp)
	}
	return out, nil
}

func (r *switchRouter) hosts(src, dst int) error { return r.f.checkPair(r.name, src, dst) }

// checkPair refuses a host pair that algorithm alg cannot route on f: a host out of range, or a host to
// itself.
func (f *Fabric) checkPair(alg string, src, dst int) error {
	n := len(f.HostSw)
	if src < 0 || src >= n || dst < 0 || dst >= n {
		return fmt.Errorf("routing %s: host h%d or h%d out of range (topology has %d hosts)", alg, src, dst, n)
	}
	if src == dst {
		return fmt.Errorf("h%d to itself has no path", src)
	}
	return nil
}
