package route

import (
	"cmp"
	"math"
	"slices"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/iterator"
	"gonum.org/v1/gonum/graph/path"
	"gonum.org/v1/gonum/graph/simple"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// upDownGraph is the FC+ paper's directed virtual up-down graph for DF-KSP with one lossless priority
// (FC+ paper §III-C): every path in it is an up-down path, so Yen's k shortest paths on it are FC+(1L-K)'s
// paths directly, with no filtering and no restart (filtering undirected paths needed K_2 >> K: at N=52,
// s=18, K=32 it took 38 s for 100 pairs and did not finish all pairs in 35 minutes).
//
// A state is (switch, the virtual layer the packet is in, phase up|down); start states (one per switch,
// no layer yet) have no incoming arcs, sink states (one per switch) no outgoing ones, so a path from
// start(a) to sink(b) is a path from a to b that transits only through switches. An arc out of state
// (u, L, ph) over trunk arc x leaves from layer t (an intra-switch move L -> t first: up only while
// still in the up phase, down switches to the down phase) and lands in layer h (up only in the up
// phase). The state path fixes the physical path one to one; a path revisiting a switch in another
// state is dropped.
type upDownGraph struct {
	f     *Fabric
	g     orderedDirected
	state map[[4]int]int64 // (switch, layer, phase, class) -> node id
	sw    []int            // node id -> switch position (-1 for none)
	start []int64
	sink  []int64
	arc   map[[2]int64]Arc // state arc -> the trunk arc it crosses
}

func newUpDownGraph(f *Fabric) *upDownGraph { return newClassGraph(f, 1) }

// newClassGraph generalises the up-down graph to DF-KSP with nlp lossless priorities: a state also
// carries the path's class, which rises by one at a down-up turn (up after down), up to nlp-1. Yen on
// it gives DF-KSP's K shortest paths with at most nlp-1 down-up turns directly (FC+ paper §III-B), with
// no filter and no restart.
func newClassGraph(f *Fabric, nlp int) *upDownGraph {
	g := f.G
	u := &upDownGraph{f: f, g: orderedDirected{simple.NewDirectedGraph()}, state: map[[4]int]int64{}, arc: map[[2]int64]Arc{}}
	node := func(sw int) int64 {
		id := int64(len(u.sw))
		u.sw = append(u.sw, sw)
		u.g.AddNode(simple.Node(id))
		return id
	}
	for i := range f.Sw {
		u.start = append(u.start, node(i))
		u.sink = append(u.sink, node(i))
	}
	get := func(sw, layer, phase, class int) int64 {
		k := [4]int{sw, layer, phase, class}
		if id, ok := u.state[k]; ok {
			return id
		}
		id := node(sw)
		u.state[k] = id
		u.g.SetEdge(simple.Edge{F: simple.Node(id), T: simple.Node(u.sink[sw])})
		return id
	}
	type st struct{ sw, layer, phase, class int } // layer 0: start
	seen := map[st]bool{}
	var queue []st
	for i := range f.Sw {
		queue = append(queue, st{i, 0, 0, 0})
		seen[st{i, 0, 0, 0}] = true
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		from := u.start[s.sw]
		if s.layer != 0 {
			from = get(s.sw, s.layer, s.phase, s.class)
		}
		for _, x := range f.Out[s.sw] {
			t := topo.VLayerOfPort(g, f.Sw[x.From], int(x.Port))
			peer := g.Peer(f.Sw[x.From], int(x.Port))
			h := topo.VLayerOfPort(g, peer.Node, peer.Port)
			ph, cls := s.phase, s.class
			// move applies one layer move (+1 up, -1 down); false if it needs a class above nlp-1.
			move := func(m int) bool {
				switch {
				case m > 0 && ph == 1:
					if cls+1 > nlp-1 {
						return false
					}
					cls, ph = cls+1, 0
				case m < 0:
					ph = 1
				}
				return true
			}
			if s.layer != 0 && !move(sign(t-s.layer)) {
				continue
			}
			if !move(sign(h - t)) {
				continue
			}
			next := st{x.To, h, ph, cls}
			to := get(next.sw, next.layer, next.phase, next.class)
			u.g.SetEdge(simple.Edge{F: simple.Node(from), T: simple.Node(to)})
			u.arc[[2]int64{from, to}] = x
			if !seen[next] {
				seen[next] = true
				queue = append(queue, next)
			}
		}
	}
	return u
}

// paths returns up to k up-down switch paths from a to b, shortest first.
func (u *upDownGraph) paths(a, b, k int) []SwPath {
	var out []SwPath
	for want := k; ; want *= 2 {
		out = out[:0]
		seqs := path.YenKShortestPaths(u.g, want, math.Inf(1), simple.Node(u.start[a]), simple.Node(u.sink[b]))
		for _, seq := range seqs {
			var sp SwPath
			visited := map[int]bool{a: true}
			ok := true
			for i := 0; i+2 < len(seq); i++ { // the last arc enters the sink
				x := u.arc[[2]int64{seq[i].ID(), seq[i+1].ID()}]
				if visited[x.To] {
					ok = false
					break
				}
				visited[x.To] = true
				sp = append(sp, x)
			}
			if ok {
				out = append(out, sp)
				if len(out) == k {
					return out
				}
			}
		}
		if len(seqs) < want || want >= 8*k {
			return out
		}
	}
}

// orderedDirected lists a node's successors in ID order, so Yen's ties break the same way every run.
type orderedDirected struct{ *simple.DirectedGraph }

func (g orderedDirected) From(id int64) graph.Nodes {
	ns := graph.NodesOf(g.DirectedGraph.From(id))
	if len(ns) == 0 {
		return graph.Empty
	}
	slices.SortFunc(ns, func(a, b graph.Node) int { return cmp.Compare(a.ID(), b.ID()) })
	return iterator.NewOrderedNodes(ns)
}
