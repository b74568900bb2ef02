// Package deadlock is the static deadlock analysis of a lab: from the routes, build the channel (buffer)
// dependency graph — an edge from the egress queue a lossless frame waits in to the egress queue it waits
// in next — and report its cycles. A cycle of lossless channels is a possible deadlock (CBD, Dally and
// Seitz); no cycle means the routes cannot deadlock under the flow-control mode the Mapper describes.
//
// What a "channel" is depends on the flow-control mode, so the mode comes in as a Mapper: PFC puts every
// frame of a priority in one queue per egress port (ByPriority, PFC), PFC* raises the priority with each
// switch hop (PFCStar), PortFC picks a queue from where the frame goes next (PortFC).
package deadlock

import (
	"fmt"
	"sort"
	"strings"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/simple"
	gtopo "gonum.org/v1/gonum/graph/topo"

	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// Channel is an egress queue: the buffer a lossless frame waits in at Device (a graph node index) before
// leaving by Port. Queue is the priority (PFC, PFC*) or the queue index (PortFC).
type Channel struct{ Device, Port, Queue int }

// Through is the Queue a Mapper returns, with lossless=true, for a hop whose buffer never pauses on its
// own but passes its downstream's pauses upstream (a PortFC relay queue: never paused, while the relay
// forwards the DDQ pause to the switch feeding it). Such a hop is not a vertex: the channel before it
// depends directly on the channel after it.
const Through = -1

// Mixed is the ByPriority key of cycles whose channels are not all in one queue/priority.
const Mixed = -1

// Name is the channel as records and the runtime monitor spell it: "s0:p1:q3".
func (c Channel) Name(g *topo.Graph) string {
	dev := fmt.Sprintf("n%d", c.Device)
	if g != nil && c.Device >= 0 && c.Device < len(g.Nodes) {
		dev = g.Nodes[c.Device].Name
	}
	return fmt.Sprintf("%s:p%d:q%d", dev, c.Port, c.Queue)
}

func (c Channel) less(d Channel) bool {
	if c.Device != d.Device {
		return c.Device < d.Device
	}
	if c.Port != d.Port {
		return c.Port < d.Port
	}
	return c.Queue < d.Queue
}

// Mapper says which channel the frame of path p occupies at hop (device p.Nodes[hop], egress port
// p.Ports[hop]), and whether that channel is lossless (it can be paused, so its upstream waits on it).
// A lossy hop breaks the dependency chain: whatever feeds it can always drain, by dropping.
type Mapper func(g *topo.Graph, p route.Path, hop int) (ch Channel, lossless bool)

// Cycle is an elementary cycle of the dependency graph, each channel waiting on the next and the last on
// the first. It starts at its smallest channel (Device, Port, Queue order).
type Cycle []Channel

// Names spells the cycle's channels, e.g. ["s0:p1:q3", "h1:p1:q3", ...].
func (c Cycle) Names(g *topo.Graph) []string {
	out := make([]string, len(c))
	for i, ch := range c {
		out[i] = ch.Name(g)
	}
	return out
}

// String is the cycle as "s0:p1:q3 -> h1:p1:q3 -> ... -> s0:p1:q3".
func (c Cycle) String(g *topo.Graph) string {
	if len(c) == 0 {
		return ""
	}
	return strings.Join(append(c.Names(g), c[0].Name(g)), " -> ")
}

// key is the priority/queue a cycle lives in, or Mixed.
func (c Cycle) key() int {
	for _, ch := range c[1:] {
		if ch.Queue != c[0].Queue {
			return Mixed
		}
	}
	return c[0].Queue
}

// DefaultMaxCycles caps the cycles Analyze lists: elementary cycles grow exponentially with the graph
// (a Jellyfish under KSP has millions), and a handful already names the problem.
const DefaultMaxCycles = 10000

// Options tune AnalyzeWith.
type Options struct {
	// MaxCycles caps the cycles listed (0 = DefaultMaxCycles). Whether any cycle exists is always exact.
	MaxCycles int
}

// Report is the analysis of one set of routes under one Mapper.
type Report struct {
	// Channels and Edges count the dependency graph's vertices (lossless channels) and distinct edges.
	Channels, Edges int
	// ByPriority groups the cycles by the queue/priority their channels share (Mixed when they differ),
	// each list sorted. With Truncated set, the lists are a prefix of the full set.
	ByPriority map[int][]Cycle
	// Truncated says MaxCycles was reached: more cycles exist than are listed.
	Truncated bool
	// Cyclic lists, per priority/queue, whether the priority's own sub-graph (edges between channels
	// of that queue only) has any cycle. Exact even when the listing is truncated; Mixed cycles do not
	// set it.
	Cyclic map[int]bool
}

// HasCycle reports whether the routes can deadlock under the mapped flow control.
func (r Report) HasCycle() bool {
	for _, cs := range r.ByPriority {
		if len(cs) > 0 {
			return true
		}
	}
	return false
}

// Count is the number of cycles listed across all priorities.
func (r Report) Count() int {
	n := 0
	for _, cs := range r.ByPriority {
		n += len(cs)
	}
	return n
}

// Cycles lists every listed cycle, priorities in increasing order (Mixed first).
func (r Report) Cycles() []Cycle {
	keys := make([]int, 0, len(r.ByPriority))
	for k := range r.ByPriority {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var out []Cycle
	for _, k := range keys {
		out = append(out, r.ByPriority[k]...)
	}
	return out
}

// Analyze builds the channel dependency graph of paths under m and lists its elementary cycles, at most
// DefaultMaxCycles of them.
func Analyze(g *topo.Graph, paths []route.Path, m Mapper) Report {
	return AnalyzeWith(g, paths, m, Options{})
}

// AnalyzeWith is Analyze with options.
func AnalyzeWith(g *topo.Graph, paths []route.Path, m Mapper, o Options) Report {
	if o.MaxCycles <= 0 {
		o.MaxCycles = DefaultMaxCycles
	}
	d := Dependencies(g, paths, m)
	r := Report{Channels: len(d.Channels), Edges: d.Edges(), ByPriority: map[int][]Cycle{}, Cyclic: map[int]bool{}}

	cycles, truncated := d.cycles(o.MaxCycles)
	r.Truncated = truncated
	for _, c := range cycles {
		k := c.key()
		r.ByPriority[k] = append(r.ByPriority[k], c)
	}
	for k := range r.ByPriority {
		sortCycles(r.ByPriority[k])
	}
	for q, has := range d.cyclicQueues() {
		r.Cyclic[q] = has
	}
	return r
}

// Graph is a channel dependency graph: vertices are channels, Succ[i] the channels channel i waits on.
type Graph struct {
	Channels []Channel
	Succ     [][]int
}

// Edges counts the graph's edges.
func (d *Graph) Edges() int {
	n := 0
	for _, s := range d.Succ {
		n += len(s)
	}
	return n
}

// Dependencies builds the channel dependency graph of paths under m: for each path, an edge from every
// lossless hop's channel to the next lossless hop's channel, skipping Through hops, broken by lossy
// hops. Channels are numbered in order of first appearance, so the graph is deterministic for a given
// path order.
//
// The sending host's own queue (hop 0) is left out: it is fed by the application, never by the network,
// so nothing waits on it and it cannot be on a cycle — and at a host that also relays, it is a different
// buffer from the relay queue a Mapper may give the same (device, port, priority).
func Dependencies(g *topo.Graph, paths []route.Path, m Mapper) *Graph {
	d := &Graph{}
	ids := map[Channel]int{}
	seen := map[[2]int]bool{}
	id := func(c Channel) int {
		i, ok := ids[c]
		if !ok {
			i = len(d.Channels)
			ids[c] = i
			d.Channels = append(d.Channels, c)
			d.Succ = append(d.Succ, nil)
		}
		return i
	}
	for _, p := range paths {
		prev := -1
		for hop := 1; hop < len(p.Ports); hop++ {
			ch, lossless := m(g, p, hop)
			switch {
			case !lossless:
				prev = -1
			case ch.Queue == Through:
				// keep prev: the channel before waits on the one after
			default:
				cur := id(ch)
				if prev >= 0 && !seen[[2]int{prev, cur}] {
					seen[[2]int{prev, cur}] = true
					d.Succ[prev] = append(d.Succ[prev], cur)
				}
				prev = cur
			}
		}
	}
	return d
}

// directed is the dependency graph as a gonum graph, optionally only the edges keep allows.
func (d *Graph) directed(keep func(a, b int) bool) *simple.DirectedGraph {
	dg := simple.NewDirectedGraph()
	for i := range d.Channels {
		dg.AddNode(simple.Node(int64(i)))
	}
	for a, succ := range d.Succ {
		for _, b := range succ {
			if a == b || (keep != nil && !keep(a, b)) {
				continue // gonum's simple graphs reject self-loops; cycles() handles them
			}
			dg.SetEdge(simple.Edge{F: simple.Node(int64(a)), T: simple.Node(int64(b))})
		}
	}
	return dg
}

// cyclicQueues reports, for every queue value present, whether the edges within that queue form a
// cycle (a strongly connected component of two or more channels, or a self-loop).
func (d *Graph) cyclicQueues() map[int]bool {
	out := map[int]bool{}
	for _, c := range d.Channels {
		out[c.Queue] = false
	}
	for a, succ := range d.Succ {
		for _, b := range succ {
			if a == b {
				out[d.Channels[a].Queue] = true
			}
		}
	}
	dg := d.directed(func(a, b int) bool { return d.Channels[a].Queue == d.Channels[b].Queue })
	for _, scc := range gtopo.TarjanSCC(dg) {
		if len(scc) > 1 {
			out[d.Channels[scc[0].ID()].Queue] = true
		}
	}
	return out
}

// cycles lists up to max elementary cycles: Johnson's algorithm, run only inside gonum's strongly
// connected components (no cycle leaves one), stopping at the cap. gonum's own DirectedCyclesIn has no
// cap, and the count can be exponential.
func (d *Graph) cycles(max int) ([]Cycle, bool) {
	var out []Cycle
	emit := func(ids []int) bool {
		c := make(Cycle, len(ids))
		for i, v := range ids {
			c[i] = d.Channels[v]
		}
		out = append(out, canonical(c))
		return len(out) < max
	}
	for a, succ := range d.Succ {
		for _, b := range succ {
			if a == b && !emit([]int{a}) {
				return out, true
			}
		}
	}
	sccs := gtopo.TarjanSCC(d.directed(nil))
	for _, scc := range sccs {
		if len(scc) < 2 {
			continue
		}
		if !johnson(d, scc, emit) {
			return out, true
		}
	}
	return out, false
}

// johnson enumerates the elementary cycles within one strongly connected component (Johnson 1975),
// calling emit for each; it stops and returns false when emit does.
func johnson(d *Graph, scc []graph.Node, emit func([]int) bool) bool {
	// Re-index the component densely, vertices in increasing id, so "cycles whose least vertex is s"
	// are found once each.
	vs := make([]int, len(scc))
	for i, n := range scc {
		vs[i] = int(n.ID())
	}
	sort.Ints(vs)
	local := make(map[int]int, len(vs))
	for i, v := range vs {
		local[v] = i
	}
	adj := make([][]int, len(vs))
	for i, v := range vs {
		for _, w := range d.Succ[v] {
			if j, ok := local[w]; ok && j != i {
				adj[i] = append(adj[i], j)
			}
		}
	}
	n := len(vs)
	blocked := make([]bool, n)
	bset := make([]map[int]bool, n)
	var stack []int
	stopped := false
	var unblock func(u int)
	unblock = func(u int) {
		blocked[u] = false
		for w := range bset[u] {
			delete(bset[u], w)
			if blocked[w] {
				unblock(w)
			}
		}
	}
	var circuit func(v, s int) bool
	circuit = func(v, s int) bool {
		found := false
		stack = append(stack, v)
		blocked[v] = true
		for _, w := range adj[v] {
			if stopped {
				break
			}
			if w < s {
				continue
			}
			if w == s {
				ids := make([]int, len(stack))
				for i, x := range stack {
					ids[i] = vs[x]
				}
				if !emit(ids) {
					stopped = true
				}
				found = true
			} else if !blocked[w] && circuit(w, s) {
				found = true
			}
		}
		if found {
			unblock(v)
		} else {
			for _, w := range adj[v] {
				if w >= s {
					bset[w][v] = true
				}
			}
		}
		stack = stack[:len(stack)-1]
		return found
	}
	for s := 0; s < n && !stopped; s++ {
		for i := s; i < n; i++ {
			blocked[i] = false
			bset[i] = map[int]bool{}
		}
		circuit(s, s)
	}
	return !stopped
}

// canonical rotates c to start at its smallest channel.
func canonical(c Cycle) Cycle {
	m := 0
	for i := range c {
		if c[i].less(c[m]) {
			m = i
		}
	}
	return append(append(Cycle{}, c[m:]...), c[:m]...)
}

func sortCycles(cs []Cycle) {
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k] != b[k] {
				return a[k].less(b[k])
			}
		}
		return len(a) < len(b)
	})
}
