package route

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/iterator"
	"gonum.org/v1/gonum/graph/path"
	"gonum.org/v1/gonum/graph/simple"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// ksp: Yen's k shortest loopless paths between switches by hop count (gonum's YenKShortestPaths), the
// FC+ paper's deadlock-prone baseline KSP-K. dfksp: the FC+ paper's DF-KSP (FC+ paper §III-B): enumerate
// shortest paths in order and keep those with at most lossless_priorities−1 down-up turns in virtual
// layer, until k are kept; each kept path carries its per-hop lossless class (Path.Prio).

// DefaultK is the paths-per-pair default for ksp and dfksp when the spec gives none: the FC+ paper's
// K = 32 (§V-A) scaled down to 8,, which small graphs cannot supply.
const DefaultK = 8

func init() {
	Register("ksp", newKSP)
	Register("dfksp", newDFKSP)
}

// switchGraph is the unweighted simple graph of switch positions gonum's path algorithms run on.
func (f *Fabric) switchGraph() graph.Graph {
	g := simple.NewUndirectedGraph()
	for i := range f.Sw {
		g.AddNode(simple.Node(i))
	}
	for i, arcs := range f.Out {
		for _, a := range arcs {
			if a.To > i && !g.HasEdgeBetween(int64(i), int64(a.To)) {
				g.SetEdge(simple.Edge{F: simple.Node(i), T: simple.Node(a.To)})
			}
		}
	}
	return orderedGraph{g}
}

// orderedGraph lists a node's neighbours in ID order. simple.UndirectedGraph keeps them in a map, and
// Yen's algorithm breaks ties between equal-length paths by the order it meets them: without this the
// same spec chose different k shortest paths from run to run (a DF-KSP all-to-all on FC+ gave three
// different fct.txt in three runs).
type orderedGraph struct{ *simple.UndirectedGraph }

func (g orderedGraph) From(id int64) graph.Nodes {
	ns := graph.NodesOf(g.UndirectedGraph.From(id))
	if len(ns) == 0 {
		return graph.Empty
	}
	slices.SortFunc(ns, func(a, b graph.Node) int { return cmp.Compare(a.ID(), b.ID()) })
	return iterator.NewOrderedNodes(ns)
}

// Yen returns up to k shortest loopless switch paths from a to b, shortest first.
func (f *Fabric) Yen(g graph.Graph, a, b, k int) ([]SwPath, error) {
	seqs := path.YenKShortestPaths(g, k, math.Inf(1), simple.Node(a), simple.Node(b))
	out := make([]SwPath, 0, len(seqs))
	for _, seq := range seqs {
		ids := make([]int, len(seq))
		for i, n := range seq {
			ids[i] = int(n.ID())
		}
		sp, err := f.FromSwitches(ids)
		if err != nil {
			return nil, err
		}
		out = append(out, sp)
	}
	return out, nil
}

func newKSP(g *topo.Graph, params map[string]string) (Router, error) {
	if err := CheckParams("ksp", params, "k"); err != nil {
		return nil, err
	}
	k, err := IntParam("ksp", params, "k", DefaultK)
	if err != nil {
		return nil, err
	}
	f, err := NewFabric(g)
	if err != nil {
		return nil, fmt.Errorf("routing ksp: %w", err)
	}
	sg := f.switchGraph()
	return newSwitchRouter("ksp", f, func(a, b int) ([]SwPath, error) { return f.Yen(sg, a, b, k) }), nil
}

// DFKSP is the dfksp router; LosslessClasses exposes what the switches must apply.
type DFKSP struct {
	*switchRouter
	K, Priorities int
}

func newDFKSP(g *topo.Graph, params map[string]string) (Router, error) {
	if err := CheckParams("dfksp", params, "k", "lossless_priorities"); err != nil {
		return nil, err
	}
	k, err := IntParam("dfksp", params, "k", DefaultK)
	if err != nil {
		return nil, err
	}
	nlp, err := IntParam("dfksp", params, "lossless_priorities", 1)
	if err != nil {
		return nil, err
	}
	if nlp > 8 {
		return nil, fmt.Errorf("routing dfksp: lossless_priorities=%d, at most 8 priorities exist", nlp)
	}
	f, err := NewFabric(g)
	if err != nil {
		return nil, fmt.Errorf("routing dfksp: %w", err)
	}
	layered := false
	for _, arcs := range f.Out {
		for _, a := range arcs {
			layered = layered || topo.VLayerOfPort(g, f.Sw[a.From], int(a.Port)) > 0
		}
	}
	if !layered {
		return nil, fmt.Errorf("routing dfksp needs a virtual-layer topology (family fc or fcplus), got %s", g.Family)
	}
	// Yen directly on the class graph (updownksp.go): every path it lists has at most nlp-1 down-up
	// turns, so nothing is filtered and nothing restarted. Filtering Yen's undirected enumeration (before)
	// needed K_2 >> K and took 38 s for 100 pairs at N=52, s=18, K=32 with one priority.
	r := &DFKSP{K: k, Priorities: nlp}
	cg := newClassGraph(f, nlp)
	r.switchRouter = newSwitchRouter("dfksp", f, func(a, b int) ([]SwPath, error) { return cg.paths(a, b, k), nil })
	return r, nil
}

// Paths adds each path's per-hop lossless class.
func (r *DFKSP) Paths(src, dst int) ([]Path, error) {
	ps, err := r.switchRouter.Paths(src, dst)
	if err != nil {
		return nil, err
	}
	for i := range ps {
		sps, _ := r.SwitchPaths(r.f.HostSw[src], r.f.HostSw[dst])
		cls := r.f.Classes(sps[i])
		ps[i].Prio = make([]uint8, len(ps[i].Ports))
		for h, c := range cls {
			ps[i].Prio[h+1] = c
		}
		// The last hop (switch to host) stays in the class the packet arrived in.
		if len(cls) > 0 {
			ps[i].Prio[len(ps[i].Prio)-1] = cls[len(cls)-1]
		}
	}
	return ps, nil
}

// layerMoves returns, for each arc of sp, the signs of the intra-switch move before it (0 when the arc
// leaves the virtual switch the packet arrived on) and of the link itself (+1 up, −1 down).
func (f *Fabric) layerMoves(sp SwPath) (intra, link []int) {
	g := f.G
	prev := 0
	for _, a := range sp {
		tail := topo.VLayerOfPort(g, f.Sw[a.From], int(a.Port))
		peer := g.Peer(f.Sw[a.From], int(a.Port))
		head := topo.VLayerOfPort(g, peer.Node, peer.Port)
		intra = append(intra, sign(tail-prev)*btoi(prev != 0))
		link = append(link, sign(head-tail))
		prev = head
	}
	return intra, link
}

// DownUps is T_du: how often the path's virtual layer goes down and then up again, counting intra-switch
// moves (FC+ paper §III-B).
func (f *Fabric) DownUps(sp SwPath) int {
	n := 0
	for _, c := range f.Classes(sp) {
		n = max(n, int(c))
	}
	return n
}

// Classes is the lossless class of each arc of sp: it starts at 0 and rises by one at every down-up
// turn; the turn is local to one switch, so the class of the arc leaving it is known from (in-port,
// out-port) (FC+ paper §III-D).
func (f *Fabric) Classes(sp SwPath) []uint8 {
	intra, link := f.layerMoves(sp)
	out := make([]uint8, len(sp))
	cls, last := uint8(0), 0
	move := func(m int) {
		if m == 0 {
			return
		}
		if last < 0 && m > 0 {
			cls++
		}
		last = m
	}
	for i := range sp {
		move(intra[i])
		move(link[i])
		out[i] = cls
	}
	return out
}

func sign(x int) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FilterDepth is K_2 of the FC+ paper's Table II for the switch pair (a, b): how many of Yen's
// shortest paths on the undirected switch graph, in length order, a filtering DF-KSP reads to keep k
// with at most nlp-1 down-up turns. ok is false when the first limit paths hold fewer than k (the depth
// is then above limit). g is f's switch graph (SwitchGraph), built once for many pairs.
func (f *Fabric) FilterDepth(g graph.Graph, a, b, k, nlp, limit int) (depth int, ok bool, err error) {
	all, err := f.Yen(g, a, b, limit)
	if err != nil {
		return 0, false, err
	}
	kept := 0
	for i, sp := range all {
		if f.DownUps(sp) <= nlp-1 {
			if kept++; kept == k {
				return i + 1, true, nil
			}
		}
	}
	return len(all), false, nil
}

// SwitchGraph is f's undirected switch graph, for FilterDepth.
func (f *Fabric) SwitchGraph() graph.Graph { return f.switchGraph() }
