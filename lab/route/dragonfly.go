package route

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// Dragonfly routing (telemetry paper §II-A, §III, §IV-A): the candidate paths of a pair are the minimal path
// (MIN: local hop to the gateway, the global link to the destination group, local hop to the destination
// switch) and one Valiant path through every other group (VAL: l?-g-l?-g-l?), intra-group routing always
// minimal. In the paper's balanced, maximum-size Dragonflies a VAL path is fully determined by its
// intermediate group, so a pair in different groups has |G|-1 candidates; with fewer groups (parallel
// global links) the first global link of each group pair is used, keeping the set at |G|-1.
//
// The choice among the candidates is made at run time by the sending NIC, per connection, which is why
// these routers implement Adaptive: `ugal` decides once, when the flow starts, between MIN and one random
// VAL path from probe-measured path delays (UGAL's rule with path queueing delay as the load); `telemetry`
// is the paper's scheme (start on MIN, probe alternatives, reroute when one is clearly less delayed, keep
// probing round-robin). The policies live in package nodes; here are only the paths.

func init() {
	// ugal decides once per flow, ugal-periodic every 100 data packets, ugal-pb per packet (the
	// telemetry paper's Benchmark): nodes.SelectUGAL, SelectUGALPeriodic, SelectUGALPB.
	for _, name := range []string{"ugal", "ugal-periodic", "ugal-pb"} {
		Register(name, func(g *topo.Graph, params map[string]string) (Router, error) {
			// seed is accepted because the lab passes the spec's seed to every randomized algorithm; the
			// random VAL candidate is drawn by the NIC from its own seed.
			if err := CheckParams(name, params, "threshold", "seed", "lossless_priorities"); err != nil {
				return nil, err
			}
			d, err := NewDragonfly(name, g)
			if err != nil {
				return nil, err
			}
			if err := d.setVCs(params); err != nil {
				return nil, err
			}
			if s, ok := params["threshold"]; ok {
				v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
				if err != nil || v < 0 {
					return nil, fmt.Errorf("routing %s: threshold=%q, want a non-negative size in bytes", name, s)
				}
				d.ThresholdBytes = v
			}
			return d, nil
		})
	}
	// minimal is Dragonfly MIN routing, the paper's ShortestPath baseline: always the direct global link.
	// It differs from `shortest` (ECMP over hop-count-shortest paths), which on a Dragonfly also takes
	// two-global-hop paths through a third group when they are no longer than local-global-local.
	Register("minimal", func(g *topo.Graph, params map[string]string) (Router, error) {
		if err := CheckParams("minimal", params, "lossless_priorities"); err != nil {
			return nil, err
		}
		d, err := NewDragonfly("minimal", g)
		if err != nil {
			return nil, err
		}
		if err := d.setVCs(params); err != nil {
			return nil, err
		}
		return minimalRouter{d}, nil
	})
	Register("telemetry", func(g *topo.Graph, params map[string]string) (Router, error) {
		if err := CheckParams("telemetry", params, "lossless_priorities"); err != nil {
			return nil, err
		}
		d, err := NewDragonfly("telemetry", g)
		if err != nil {
			return nil, err
		}
		return d, d.setVCs(params)
	})
}

// Dragonfly virtual channels (routing.lossless_priorities = V > 1): a frame's lossless class is the
// number of global links it has crossed, so switches raise it by one after every global hop (lab
// classTurns). Classic Dragonfly deadlock avoidance (Kim et al. 2008; the telemetry paper's Fig. 2
// remedy): a channel of class c only waits on channels of class c (a local hop) or c+1 (after a global
// hop), so no cycle closes. MIN crosses at most one global link and needs 2 classes, VAL 3.
func (d *Dragonfly) setVCs(params map[string]string) error {
	v, err := IntParam(d.name, params, "lossless_priorities", 1)
	if err != nil {
		return err
	}
	if v < 1 || v > 8 {
		return fmt.Errorf("routing %s: lossless_priorities=%d, want 1..8 virtual channels", d.name, v)
	}
	d.VCs = v
	return nil
}

// classes gives p its per-hop class (Path.Prio) under VCs > 1: global links crossed so far.
func (d *Dragonfly) classes(p *Path) error {
	if d.VCs <= 1 {
		return nil
	}
	p.Prio = make([]uint8, len(p.Ports))
	c := 0
	for i := range p.Ports {
		if i > 0 && d.g.LinkAt(p.Nodes[i-1], int(p.Ports[i-1])).Class == "global" {
			c++
		}
		if c > d.VCs-1 {
			return fmt.Errorf("routing %s: a path crosses %d global links, lossless_priorities=%d gives %d (VAL needs 3)", d.name, c, d.VCs, d.VCs-1)
		}
		p.Prio[i] = uint8(c)
	}
	return nil
}

// Adaptive is a Router whose flows choose among their candidate paths at run time, at the source NIC:
// Paths lists the candidates (a flow starts on the first), PathSelect names the NIC policy that chooses
// (nodes.Config.PathSelect).
type Adaptive interface {
	Router
	PathSelect() string
}

// Dragonfly is the ugal and telemetry router: the MIN path first, then the VAL paths by intermediate
// group number.
type Dragonfly struct {
	name string
	g    *topo.Graph
	f    *Fabric
	// ThresholdBytes is UGAL's bias T (routing.threshold), in bytes of queue at the host link rate; -1:
	// the NIC's default.
	ThresholdBytes int64
	// VCs is the number of virtual channels (lossless classes) paths are given (setVCs); 1: none.
	VCs int

	groups int
	group  []int // switch position -> group
	// gate[q][r] is the first global link from group q to group r: the switch position in q that holds
	// it and the switch position in r at its far end (-1, -1 where q == r).
	gate [][][2]int
}

// NewDragonfly binds the Dragonfly candidate sets to g, which must be a dragonfly topology.
func NewDragonfly(name string, g *topo.Graph) (*Dragonfly, error) {
	if g.Family != "dragonfly" {
		return nil, fmt.Errorf("routing %s needs a dragonfly topology (its candidate paths go through intermediate groups), got family %s", name, g.Family)
	}
	f, err := NewFabric(g)
	if err != nil {
		return nil, fmt.Errorf("routing %s: %w", name, err)
	}
	d := &Dragonfly{name: name, g: g, f: f, ThresholdBytes: -1, group: make([]int, len(f.Sw))}
	for i, n := range f.Sw {
		d.group[i] = g.Nodes[n].Group
		d.groups = max(d.groups, d.group[i]+1)
	}
	d.gate = make([][][2]int, d.groups)
	for q := range d.gate {
		d.gate[q] = make([][2]int, d.groups)
		for r := range d.gate[q] {
			d.gate[q][r] = [2]int{-1, -1}
		}
	}
	// Arcs in switch-position then port order, so "first" is the lowest switch and port: with parallel
	// global links (groups < a·h+1) every pair still has one fixed gateway.
	for i, arcs := range f.Out {
		for _, a := range arcs {
			q, r := d.group[i], d.group[a.To]
			if q != r && d.gate[q][r][0] < 0 {
				d.gate[q][r] = [2]int{a.From, a.To}
			}
		}
	}
	for q := 0; q < d.groups; q++ {
		for r := 0; r < d.groups; r++ {
			if q != r && d.gate[q][r][0] < 0 {
				return nil, fmt.Errorf("routing %s: group %d has no global link to group %d", name, q, r)
			}
		}
	}
	return d, nil
}

func (d *Dragonfly) Name() string       { return d.name }
func (d *Dragonfly) PathSelect() string { return d.name }

// Groups is the number of Dragonfly groups.
func (d *Dragonfly) Groups() int { return d.groups }

// Paths returns MIN, then VAL through every group other than the source's and destination's, in group
// order; a pair inside one group has only its minimal path.
func (d *Dragonfly) Paths(src, dst int) ([]Path, error) {
	if _, err := hostNode(d.g, src); err != nil {
		return nil, err
	}
	if _, err := hostNode(d.g, dst); err != nil {
		return nil, err
	}
	if src == dst {
		return nil, fmt.Errorf("h%d to itself has no path", src)
	}
	s, t := d.f.HostSw[src], d.f.HostSw[dst]
	gs, gt := d.group[s], d.group[t]
	min, err := d.path(src, dst, s, t)
	if err != nil {
		return nil, err
	}
	out := []Path{min}
	if err := d.classes(&out[0]); err != nil {
		return nil, err
	}
	if gs == gt {
		return out, nil
	}
	for gi := 0; gi < d.groups; gi++ {
		if gi == gs || gi == gt {
			continue
		}
		// Into the intermediate group by its link from gs; Valiant routing continues minimally from the
		// switch where that link lands to gi's gateway toward gt (telemetry paper §II-A).
		p, err := d.path(src, dst, s, d.gate[gs][gi][1], t)
		if err != nil {
			return nil, err
		}
		if err := d.classes(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// path is the host-to-host path through the given switch positions, with minimal (one-hop, full-mesh)
// intra-group legs and the global hop toward the destination group inserted where the sequence leaves a
// group; consecutive repeats collapse (a source switch that is itself the gateway).
func (d *Dragonfly) path(src, dst int, sws ...int) (Path, error) {
	var seq []int
	add := func(p int) {
		if len(seq) == 0 || seq[len(seq)-1] != p {
			seq = append(seq, p)
		}
	}
	for i, p := range sws {
		if i > 0 {
			prev := seq[len(seq)-1]
			if d.group[prev] != d.group[p] {
				// Leaving a group toward p's: through that pair's gateway, unless the caller named it.
				gw := d.gate[d.group[prev]][d.group[p]]
				add(gw[0])
				add(gw[1])
			}
		}
		add(p)
	}
	nodes := []int{d.g.Hosts[src]}
	for _, p := range seq {
		nodes = append(nodes, d.f.Sw[p])
	}
	nodes = append(nodes, d.g.Hosts[dst])
	return Explicit(d.g, nodes)
}

// minimalRouter offers only the MIN path; it is static (not Adaptive).
type minimalRouter struct{ d *Dragonfly }

func (m minimalRouter) Name() string { return "minimal" }
func (m minimalRouter) Paths(src, dst int) ([]Path, error) {
	d := *m.d
	d.VCs = 0 // VAL candidates are computed and dropped: only MIN's classes must fit
	ps, err := d.Paths(src, dst)
	if err != nil {
		return nil, err
	}
	p := ps[0]
	return []Path{p}, m.d.classes(&p)
}
