package deadlock

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/topo"
)

func build(t *testing.T, family string, params map[string]string) *topo.Graph {
	t.Helper()
	g, err := topo.Build(family, params)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func explicit(t *testing.T, g *topo.Graph, names ...string) route.Path {
	t.Helper()
	p, err := route.ExplicitNames(g, names)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A ring of 4 switches with every flow going two hops clockwise: the classic CBD.
func TestRingClockwiseHasCycle(t *testing.T) {
	g := build(t, "ring", map[string]string{"n": "4"})
	var paths []route.Path
	for i := 0; i < 4; i++ {
		a, b, c := i, (i+1)%4, (i+2)%4
		paths = append(paths, explicit(t, g, name("h", a), name("s", a), name("s", b), name("s", c), name("h", c)))
	}
	r := Analyze(g, paths, PFC(3))
	if !r.HasCycle() || r.Count() != 1 {
		t.Fatalf("want exactly one cycle, got %d: %+v", r.Count(), r.ByPriority)
	}
	c := r.ByPriority[3][0]
	if len(c) != 4 {
		t.Fatalf("cycle %s: want the 4 clockwise switch-to-switch queues", c.String(g))
	}
	for _, ch := range c {
		if g.Nodes[ch.Device].Kind != topo.Switch {
			t.Fatalf("cycle %s passes through a host", c.String(g))
		}
	}
	if !r.Cyclic[3] {
		t.Fatal("Cyclic[3] = false for a cyclic priority")
	}
	if got := c.Names(g)[0]; !strings.HasPrefix(got, "s0:p") || !strings.HasSuffix(got, ":q3") {
		t.Fatalf("cycle names %v: want s0 first, queue 3", c.Names(g))
	}
	// Three of the four flows leave the ring open.
	if r := Analyze(g, paths[:3], PFC(3)); r.HasCycle() {
		t.Fatalf("three flows cannot close the ring, got %v", r.Cycles())
	}
	// A lossy priority has no dependencies at all.
	if r := Analyze(g, paths, Lossless(PFC(3), 4)); r.HasCycle() || r.Edges != 0 {
		t.Fatalf("lossy priority: %d edges, cycles %v", r.Edges, r.Cycles())
	}
}

// Up-down routes in a fat-tree (a tree of trees) never close a cycle, for every pair.
func TestFatTreeShortestAcyclic(t *testing.T) {
	g := build(t, "fattree", map[string]string{"k": "4"})
	tables, err := route.Shortest(g)
	if err != nil {
		t.Fatal(err)
	}
	var paths []route.Path
	for s := range g.Hosts {
		for d := range g.Hosts {
			if s == d {
				continue
			}
			ps, err := tables.Paths(g, s, d, 0)
			if err != nil {
				t.Fatal(err)
			}
			paths = append(paths, ps...)
		}
	}
	r := Analyze(g, paths, PFC(3))
	if r.HasCycle() || r.Cyclic[3] {
		t.Fatalf("fat-tree shortest paths: %d cycles, first %v", r.Count(), r.Cycles()[0].String(g))
	}
	if r.Edges == 0 || r.Channels == 0 {
		t.Fatalf("empty dependency graph (%d channels, %d edges) proves nothing", r.Channels, r.Edges)
	}
}

// ringPaths are the PortFC paper's deadlock ring (PortFC paper §V-F, Fig. 19): on NDC(2,1), four 4-hop
// flows going the same way round the 4-host, 4-switch ring, each pinned through the next host.
func ringPaths(t *testing.T) (*topo.Graph, []route.Path) {
	g := build(t, "ndc", map[string]string{"n": "2", "k": "1"})
	var paths []route.Path
	for _, f := range [][3]int{{0, 3, 1}, {1, 2, 3}, {3, 0, 2}, {2, 1, 0}} {
		p, err := route.Via(g, f[0], f[1], []int{f[2]}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.Hops() != 4 {
			t.Fatalf("h%d->h%d via h%d: %d hops, want 4", f[0], f[1], f[2], p.Hops())
		}
		paths = append(paths, p)
	}
	return g, paths
}

func TestNDCRingPFC(t *testing.T) {
	g, paths := ringPaths(t)
	r := Analyze(g, paths, PFC(3))
	if r.Count() != 1 {
		t.Fatalf("PFC: want the one ring cycle, got %d: %v", r.Count(), r.Cycles())
	}
	c := r.ByPriority[3][0]
	// The ring alternates the four switches' and the four relays' egress queues.
	var sw, hosts int
	for _, ch := range c {
		if g.Nodes[ch.Device].Kind == topo.Switch {
			sw++
		} else {
			hosts++
		}
	}
	if sw != 4 || hosts != 4 {
		t.Fatalf("cycle %s: want 4 switch and 4 relay queues", c.String(g))
	}
	t.Logf("PFC cycle: %s", c.String(g))
}

func TestNDCRingPFCStarAndPortFC(t *testing.T) {
	g, paths := ringPaths(t)
	// PFC* as the engines tag (switches crossed before the device): senders and first switches at tag
	// 0, relays and second switches at tag 1, so P=2 already breaks the ring of four-hop flows.
	for _, P := range []int{2, 3} {
		if r := Analyze(g, paths, PFCStar(P, 3)); r.HasCycle() {
			t.Fatalf("PFC* P=%d: cycles %v", P, r.Cycles()[0].String(g))
		}
	}
	// The paper's reading (every switch raises, relays keep): at P = 2 every queue past the senders is
	// at tag 1 and the ring closes there; P = 3 separates the relays' queues (tag 1) from the second
	// switches' (tag 2) and breaks it.
	if r := Analyze(g, paths, PFCStarEverySwitch(2, 3)); r.Count() != 1 {
		t.Fatalf("PFC* every switch, P=2: %d cycles, want 1", r.Count())
	}
	if r := Analyze(g, paths, PFCStarEverySwitch(3, 3)); r.HasCycle() {
		t.Fatalf("PFC* every switch, P=3: cycles %v", r.Cycles()[0].String(g))
	}
	// P=1 is plain PFC.
	if r := Analyze(g, paths, PFCStar(1, 3)); r.Count() != 1 {
		t.Fatalf("PFC* P=1 should equal PFC, got %d cycles", r.Count())
	}
	r := Analyze(g, paths, PortFC())
	if r.HasCycle() {
		t.Fatalf("PortFC: cycles %v", r.Cycles()[0].String(g))
	}
	// Each 4-hop flow: IHFQ -> DDQ, the relay's RQ passed through (the sender's a-queue is not a vertex).
	if r.Edges != 4 {
		t.Fatalf("PortFC: %d edges, want 4 (one per flow)", r.Edges)
	}
}

// The paper's Fig. 6 worked examples at switch 23 (our s7) toward node 15 and at node 15 toward switch 19
// (our s3), through the analysis-side index rule.
func TestPortFCIndexFig6(t *testing.T) {
	g := build(t, "ndc", map[string]string{"n": "4", "k": "1"})
	m := PortFC()
	q := func(hop int, names ...string) int {
		t.Helper()
		ch, ok := m(g, explicit(t, g, names...), hop)
		if !ok {
			t.Fatalf("%v hop %d not lossless", names, hop)
		}
		return ch.Queue
	}
	// F11 (h11 -> h15) and F16 (h7 -> h15 via s7): destination behind s7's port: DDQ 3.
	if got := q(1, "h11", "s7", "h15"); got != 3 {
		t.Errorf("F11 at s7: queue %d, want DDQ 3", got)
	}
	if got := q(1, "h7", "s7", "h15"); got != 3 {
		t.Errorf("F16 at s7: queue %d, want DDQ 3", got)
	}
	// F12, F13, F14 from h11 relay through h15 and leave s3 by ports 0, 1, 2 (to h12, h13, h14).
	for i, want := range []int{0, 1, 2} {
		dst := name("h", 12+i)
		if got := q(1, "h11", "s7", "h15", "s3", dst); got != want {
			t.Errorf("h11->%s at s7: queue %d, want IHFQ %d", dst, got, want)
		}
	}
	// F15 from h3 also leaves s3 by port 2.
	if got := q(1, "h3", "s7", "h15", "s3", "h14"); got != 2 {
		t.Errorf("F15 at s7: queue %d, want 2", got)
	}
	// Node 15's port toward s3: four-hop via s3 ports 0..2 -> Q0..Q2, two-hop -> Q3..Q5.
	for i := 0; i < 3; i++ {
		relay := name("h", 12+i)
		if got := q(0, "h15", "s3", relay, name("s", 4+i), name("h", i)); got != i {
			t.Errorf("four-hop via %s: queue %d, want %d", relay, got, i)
		}
		if got := q(0, "h15", "s3", relay); got != 3+i {
			t.Errorf("two-hop to %s: queue %d, want %d", relay, got, 3+i)
		}
	}
	// Relay queue is pass-through.
	if got := q(2, "h11", "s7", "h15", "s3", "h12"); got != Through {
		t.Errorf("relay hop: queue %d, want Through", got)
	}
}

// A self-loop (a path that waits on its own channel) and a truncated listing.
func TestCapAndCount(t *testing.T) {
	g := build(t, "ring", map[string]string{"n": "5"})
	var paths []route.Path
	// Every flow goes 3 hops clockwise and 3 counter-clockwise: many overlapping cycles.
	for i := 0; i < 5; i++ {
		cw := []string{name("h", i)}
		ccw := []string{name("h", i)}
		for j := 0; j <= 3; j++ {
			cw = append(cw, name("s", (i+j)%5))
			ccw = append(ccw, name("s", (i-j+5)%5))
		}
		paths = append(paths, explicit(t, g, append(cw, name("h", (i+3)%5))...),
			explicit(t, g, append(ccw, name("h", (i+2)%5))...))
	}
	full := Analyze(g, paths, PFC(0))
	if full.Count() != 2 || full.Truncated {
		t.Fatalf("want the two ring directions, got %d (truncated %v): %v", full.Count(), full.Truncated, full.Cycles())
	}
	capped := AnalyzeWith(g, paths, PFC(0), Options{MaxCycles: 1})
	if capped.Count() != 1 || !capped.Truncated || !capped.Cyclic[0] {
		t.Fatalf("cap 1: count %d truncated %v", capped.Count(), capped.Truncated)
	}
}

func name(prefix string, i int) string { return prefix + itoa(i) }

func itoa(i int) string { return strconv.Itoa(i) }

// TestPortFCNDC42 is PortFC on NDC(4,2) (k = 2, three-port nodes; docs/portfc.md §9). With the lab's
// routes (digit correction, lowest layer first) every path climbs the layers, and a switch queue waits
// only on a switch of a higher layer: no cycle over all 64 x 63 pairs, though six-hop paths make a
// switch's IHFQ group wait on another switch's. BCube's k+1 parallel paths per pair rotate the order, so
// some steps go down a layer; a relay passes IHFQ pauses only down (nodes/portfc.go), so nothing waits
// across such a step, and those paths add no cycle either (their IHFQ after the step is bounded by the
// buffer, not by pauses).
func TestPortFCNDC42(t *testing.T) {
	g := build(t, "ndc", map[string]string{"n": "4", "k": "2"})
	var lowest, parallel []route.Path
	for a := range g.Hosts {
		for b := range g.Hosts {
			if a == b {
				continue
			}
			p, err := route.BCubePath(g, a, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			lowest = append(lowest, p)
			ps, err := route.BCubePaths(g, a, b)
			if err != nil {
				t.Fatal(err)
			}
			parallel = append(parallel, ps...)
		}
	}
	r := Analyze(g, lowest, PortFC())
	if r.HasCycle() {
		t.Fatalf("PortFC, lowest layer first: cycle %s", r.Cycles()[0].String(g))
	}
	// Six-hop paths do give IHFQ -> IHFQ edges: the k > 1 dependency exists and is acyclic.
	var ihfq2ihfq int
	m := PortFC()
	for _, p := range lowest {
		if len(p.Nodes) == 7 {
			c1, _ := m(g, p, 1)
			c3, _ := m(g, p, 3)
			if c1.Queue == 0 && c3.Queue == 0 {
				ihfq2ihfq++
			}
		}
	}
	if ihfq2ihfq != 64*27 {
		t.Fatalf("%d six-hop paths with IHFQ group -> IHFQ group, want 64 x 27", ihfq2ihfq)
	}
	if r := Analyze(g, parallel, PortFC()); r.HasCycle() {
		t.Fatalf("PortFC, BCube's parallel paths: cycle %s", r.Cycles()[0].String(g))
	}
}
