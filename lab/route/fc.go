package route

import (
	"fmt"
	"sort"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// fc is the FC paper's routing baseline as the FC+ paper describes it (FC+ paper §II-C): up-down
// paths only (one lossless priority), pairwise edge-disjoint, as many as a maximum flow finds: unit
// capacity on every directed trunk arc of the directed up-down graph (updownksp.go), augmenting paths
// by BFS, then the flow decomposed into paths, shortest first, at most max_paths of them. A greedy
// choice from Yen's order (before) found 5.45 paths per pair at N=100 where the max-flow count is
// larger.
func init() { Register("fc", newFC) }

// DefaultFCPaths caps fc's paths per pair: above any switch's trunk degree in the papers' sets (s <= 22),
// so the max flow decides.
const DefaultFCPaths = 64

func newFC(g *topo.Graph, params map[string]string) (Router, error) {
	if err := CheckParams("fc", params, "max_paths"); err != nil {
		return nil, err
	}
	limit, err := IntParam("fc", params, "max_paths", DefaultFCPaths)
	if err != nil {
		return nil, err
	}
	f, err := NewFabric(g)
	if err != nil {
		return nil, fmt.Errorf("routing fc: %w", err)
	}
	layered := false
	for _, arcs := range f.Out {
		for _, a := range arcs {
			layered = layered || topo.VLayerOfPort(g, f.Sw[a.From], int(a.Port)) > 0
		}
	}
	if !layered {
		return nil, fmt.Errorf("routing fc needs a virtual-layer topology (family fc or fcplus), got %s", g.Family)
	}
	net := newDisjointNet(newUpDownGraph(f))
	return newSwitchRouter("fc", f, func(a, b int) ([]SwPath, error) {
		ps := net.paths(a, b)
		if len(ps) > limit {
			ps = ps[:limit]
		}
		return ps, nil
	}), nil
}

// disjointNet is the up-down graph as a flow network: every state arc crossing trunk arc x goes
// through x's own unit-capacity edge, so a flow is a set of paths no two of which share a directed trunk
// arc. Node ids: the up-down graph's states, then one in/out pair per directed trunk arc.
type disjointNet struct {
	u     *upDownGraph
	n     int
	edges []fedge
	adj   [][]int
	arcOf map[int]Arc // unit edge index -> trunk arc
}

type fedge struct {
	to, cap, flow int
	rev           int
}

func newDisjointNet(u *upDownGraph) *disjointNet {
	d := &disjointNet{u: u, n: len(u.sw), arcOf: map[int]Arc{}}
	d.adj = make([][]int, d.n)
	add := func(a, b, c int) int {
		d.edges = append(d.edges, fedge{to: b, cap: c, rev: len(d.edges) + 1}, fedge{to: a, cap: 0, rev: len(d.edges)})
		d.adj[a] = append(d.adj[a], len(d.edges)-2)
		d.adj[b] = append(d.adj[b], len(d.edges)-1)
		return len(d.edges) - 2
	}
	node := func() int {
		d.adj = append(d.adj, nil)
		d.n++
		return d.n - 1
	}
	type key struct{ link, from int }
	in, out := map[key]int{}, map[key]int{}
	// Visit state arcs in a fixed order so the network (and the decomposition) is the same every run.
	type sarc struct {
		from, to int64
		x        Arc
	}
	var sarcs []sarc
	for k, x := range u.arc {
		sarcs = append(sarcs, sarc{k[0], k[1], x})
	}
	sort.Slice(sarcs, func(i, j int) bool {
		return sarcs[i].from < sarcs[j].from || sarcs[i].from == sarcs[j].from && sarcs[i].to < sarcs[j].to
	})
	const inf = 1 << 30
	for _, s := range sarcs {
		k := key{s.x.Link, s.x.From}
		if _, ok := in[k]; !ok {
			in[k], out[k] = node(), node()
			d.arcOf[add(in[k], out[k], 1)] = s.x
		}
		add(int(s.from), in[k], inf)
		add(out[k], int(s.to), inf)
	}
	// State -> sink arcs; states come after the start and sink nodes.
	for id := 2 * len(u.start); id < len(u.sw); id++ {
		add(id, int(u.sink[u.sw[id]]), inf)
	}
	return d
}

// paths is a maximum set of trunk-arc-disjoint up-down paths from a to b, shortest first; a decomposed
// path that revisits a switch (possible in another layer) is left out.
func (d *disjointNet) paths(a, b int) []SwPath {
	for i := range d.edges {
		d.edges[i].flow = 0
	}
	s, t := int(d.u.start[a]), int(d.u.sink[b])
	prev := make([]int, d.n)
	for {
		for i := range prev {
			prev[i] = -1
		}
		prev[s] = -2
		q := []int{s}
		for len(q) > 0 && prev[t] == -1 {
			v := q[0]
			q = q[1:]
			for _, ei := range d.adj[v] {
				e := &d.edges[ei]
				if e.cap-e.flow > 0 && prev[e.to] == -1 {
					prev[e.to] = ei
					q = append(q, e.to)
				}
			}
		}
		if prev[t] == -1 {
			break
		}
		for v := t; v != s; {
			ei := prev[v]
			d.edges[ei].flow++
			d.edges[d.edges[ei].rev].flow--
			v = d.edges[d.edges[ei].rev].to
		}
	}
	var out []SwPath
	for {
		var sp SwPath
		v := s
		for v != t {
			next := -1
			for _, ei := range d.adj[v] {
				if ei%2 == 0 && d.edges[ei].flow > 0 {
					next = ei
					break
				}
			}
			if next < 0 {
				break
			}
			d.edges[next].flow--
			if x, ok := d.arcOf[next]; ok {
				sp = append(sp, x)
			}
			v = d.edges[next].to
		}
		if v != t {
			break
		}
		seen := map[int]bool{a: true}
		ok := true
		for _, x := range sp {
			ok = ok && !seen[x.To]
			seen[x.To] = true
		}
		if ok {
			out = append(out, sp)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) < len(out[j]) })
	return out
}
