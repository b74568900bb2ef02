package route

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// ndc builds NDC(n,k) by hand the way the topology builder documents it: hosts h<i> with i the BCube
// address read as a base-n number (i = sum a_l n^l), switches grouped by layer (layer l, then the host
// address without digit l read as a base-n number), host port l to its layer-l switch, switch port index
// = the host's digit a_l.
func ndc(n, k int) *topo.Graph {
	b := topo.NewBuilder("ndc", map[string]string{"n": itoa(n), "k": itoa(k)}, 100e9, clock.Microsecond)
	nh := 1
	for i := 0; i <= k; i++ {
		nh *= n
	}
	hosts := make([]int, nh)
	for i := range hosts {
		hosts[i] = b.AddHost()
		a := make([]int, k+1)
		for l, x := 0, i; l <= k; l, x = l+1, x/n {
			a[l] = x % n
		}
		b.G.Nodes[hosts[i]].Addr = a
	}
	per := nh / n
	for l := 0; l <= k; l++ {
		sw := make([]int, per)
		for j := range sw {
			sw[j] = b.AddSwitch()
			b.G.Nodes[sw[j]].Layer = l
		}
		for i, h := range hosts {
			// Switch id = address without digit l; hosts visited in index order so that the switch's
			// port index equals digit a_l.
			a := b.G.Nodes[h].Addr
			id, m := 0, 1
			for d := 0; d <= k; d++ {
				if d == l {
					continue
				}
				id += a[d] * m
				m *= n
			}
			_ = i
			b.Connect(h, sw[id])
		}
	}
	return b.G
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

// leafSpine: 2 leaves, 2 spines, 2 hosts per leaf. h0,h1 on s0; h2,h3 on s1; spines s2, s3.
func leafSpine() *topo.Graph {
	b := topo.NewBuilder("leafspine", nil, 100e9, clock.Microsecond)
	h := []int{b.AddHost(), b.AddHost(), b.AddHost(), b.AddHost()}
	l0, l1, s2, s3 := b.AddSwitch(), b.AddSwitch(), b.AddSwitch(), b.AddSwitch()
	b.Connect(h[0], l0) // l0 port 0
	b.Connect(h[1], l0) // l0 port 1
	b.Connect(h[2], l1)
	b.Connect(h[3], l1)
	b.Connect(l0, s2) // l0 port 2
	b.Connect(l0, s3) // l0 port 3
	b.ConnectWith(l1, s2, 40e9, 2*clock.Microsecond, "")
	b.Connect(l1, s3)
	return b.G
}

func sw(g *topo.Graph, i int) int { return g.Switches[i] }

func TestNDCPaperExampleLowestFirst(t *testing.T) {
	g := ndc(4, 1)
	if len(g.Hosts) != 16 || len(g.Switches) != 8 {
		t.Fatalf("NDC(4,1) helper: %d hosts %d switches", len(g.Hosts), len(g.Switches))
	}
	p, err := BCubePath(g, 15, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Format(g); got != "h15 s3 h12 s4 h0" {
		t.Fatalf("h15->h0 lowest first = %q, want h15 s3 h12 s4 h0", got)
	}
	// h15 leaves by port 0 (layer 0); s3 reaches h12 (a0=0) on port 0; h12 leaves by port 1 (layer 1);
	// s4 reaches h0 (a1=0) on port 0.
	if want := []uint8{0, 0, 1, 0}; !reflect.DeepEqual(p.Route(), want) {
		t.Fatalf("route %v, want %v", p.Route(), want)
	}
	if err := p.Validate(g); err != nil {
		t.Fatal(err)
	}
	if rel := p.Relays(g); len(rel) != 1 || g.Nodes[rel[0]].Name != "h12" {
		t.Fatalf("relays %v", rel)
	}
	// The other order goes through the layer-1 switch of position 3 (s7) and relay h3.
	q, err := BCubePath(g, 15, 0, []int{1, 0})
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Format(g); got != "h15 s7 h3 s0 h0" {
		t.Fatalf("h15->h0 layer 1 first = %q", got)
	}
	if p.Equal(q) {
		t.Fatal("the two orders gave the same path")
	}
}

func TestBCubePathsParallel(t *testing.T) {
	g := ndc(4, 1)
	ps, err := BCubePaths(g, 15, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Format(g) != "h15 s3 h12 s4 h0" || ps[1].Format(g) != "h15 s7 h3 s0 h0" {
		t.Fatalf("paths %v", formats(g, ps))
	}
	// A 2-hop pair (differ in digit 0 only): path 0 is direct, path 1 detours through layer 1 and
	// shares no link with path 0.
	ps, err = BCubePaths(g, 1, 2) // h1=(1,0), h2=(2,0)
	if err != nil {
		t.Fatal(err)
	}
	if ps[0].Format(g) != "h1 s0 h2" {
		t.Fatalf("direct path %q", ps[0].Format(g))
	}
	// Detour: h1 -> s5 (layer 1, position 1) -> h5=(1,1) -> s1 (unit 1) -> h6=(2,1) -> s6 -> h2.
	if ps[1].Format(g) != "h1 s5 h5 s1 h6 s6 h2" {
		t.Fatalf("detour path %q", ps[1].Format(g))
	}
	for _, p := range ps {
		if err := p.Validate(g); err != nil {
			t.Fatal(err)
		}
	}
	if shared := sharedLinks(g, ps[0], ps[1]); shared != 0 {
		t.Fatalf("parallel paths share %d links", shared)
	}
	// Every pair of NDC(3,2): k+1 = 3 valid, pairwise link-disjoint paths.
	g3 := ndc(3, 2)
	for s := range g3.Hosts {
		for d := range g3.Hosts {
			if s == d {
				continue
			}
			ps, err := BCubePaths(g3, s, d)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != 3 {
				t.Fatalf("h%d->h%d: %d paths", s, d, len(ps))
			}
			for i := range ps {
				if err := ps[i].Validate(g3); err != nil {
					t.Fatalf("h%d->h%d path %d: %v", s, d, i, err)
				}
				for j := i + 1; j < len(ps); j++ {
					if sharedLinks(g3, ps[i], ps[j]) != 0 {
						t.Fatalf("h%d->h%d paths %d,%d share links: %v", s, d, i, j, formats(g3, ps))
					}
				}
			}
		}
	}
}

func sharedLinks(g *topo.Graph, a, b Path) int {
	in := map[*topo.Link]bool{}
	for _, l := range a.Links(g) {
		in[l] = true
	}
	n := 0
	for _, l := range b.Links(g) {
		if in[l] {
			n++
		}
	}
	return n
}

func formats(g *topo.Graph, ps []Path) []string {
	var s []string
	for _, p := range ps {
		s = append(s, p.Format(g))
	}
	return s
}

func TestBCubeErrors(t *testing.T) {
	g := ndc(2, 1)
	if _, err := BCubePath(g, 0, 0, nil); err == nil {
		t.Error("src == dst accepted")
	}
	if _, err := BCubePath(g, 0, 9, nil); err == nil || !strings.Contains(err.Error(), "h9") {
		t.Errorf("bad host: %v", err)
	}
	if _, err := BCubePath(g, 0, 3, []int{0, 0}); err == nil || !strings.Contains(err.Error(), "permutation") {
		t.Errorf("bad order: %v", err)
	}
	if _, err := BCubePath(leafSpine(), 0, 3, nil); err == nil || !strings.Contains(err.Error(), "BCube address") {
		t.Errorf("non-BCube graph: %v", err)
	}
	if _, err := New("bcube", leafSpine(), nil); err == nil {
		t.Error("bcube router accepted a leaf-spine")
	}
}

func TestShortestLeafSpineECMP(t *testing.T) {
	g := leafSpine()
	tb, err := Shortest(g)
	if err != nil {
		t.Fatal(err)
	}
	if tb.HostTransit {
		t.Fatal("leaf-spine must not transit hosts")
	}
	l0, l1, s2, s3 := sw(g, 0), sw(g, 1), sw(g, 2), sw(g, 3)
	// Leaf 0 toward a remote host: both uplinks (ports 2, 3); toward a local host: that host's port only.
	if got := tb.Ports(l0, 2); !reflect.DeepEqual(got, []uint8{2, 3}) {
		t.Errorf("l0 -> h2: %v", got)
	}
	if got := tb.Ports(l0, 1); !reflect.DeepEqual(got, []uint8{1}) {
		t.Errorf("l0 -> h1: %v", got)
	}
	// Spines: one down port each.
	if got := tb.Ports(s2, 3); !reflect.DeepEqual(got, []uint8{1}) {
		t.Errorf("s2 -> h3: %v", got)
	}
	if got := tb.Ports(s3, 0); !reflect.DeepEqual(got, []uint8{0}) {
		t.Errorf("s3 -> h0: %v", got)
	}
	if got := tb.Ports(l1, 0); !reflect.DeepEqual(got, []uint8{2, 3}) {
		t.Errorf("l1 -> h0: %v", got)
	}
	// Hosts: one port; nothing at the destination itself.
	if got := tb.Ports(g.Hosts[0], 3); !reflect.DeepEqual(got, []uint8{0}) {
		t.Errorf("h0 -> h3: %v", got)
	}
	if got := tb.Ports(g.Hosts[3], 3); len(got) != 0 {
		t.Errorf("h3 -> h3: %v", got)
	}
	if d := tb.Dist(g.Hosts[0], 3); d != 4 {
		t.Errorf("dist h0->h3 = %d, want 4", d)
	}
	ps, err := tb.Paths(g, 0, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := formats(g, ps); !reflect.DeepEqual(got, []string{"h0 s0 s2 s1 h3", "h0 s0 s3 s1 h3"}) {
		t.Errorf("paths %v", got)
	}
	// Path characteristics: the s2-s1 link is 40G, 2us.
	if bn := ps[0].Bottleneck(g); bn != 40e9 {
		t.Errorf("bottleneck %g", bn)
	}
	if d := ps[0].Delay(g); d != 5*clock.Microsecond {
		t.Errorf("delay %v", d)
	}
	if rs := ps[1].Rates(g); !reflect.DeepEqual(rs, []float64{100e9, 100e9, 100e9, 100e9}) {
		t.Errorf("rates %v", rs)
	}
	// Pick follows the tables and stays on a shortest path whatever the entropy; both spines get used.
	seen := map[string]bool{}
	for e := uint32(0); e < 64; e++ {
		p, err := tb.Pick(g, 0, 3, e)
		if err != nil {
			t.Fatal(err)
		}
		if p.Hops() != 4 || p.Validate(g) != nil {
			t.Fatalf("pick %q", p.Format(g))
		}
		seen[p.Format(g)] = true
	}
	if len(seen) != 2 {
		t.Errorf("ECMP pick used %d paths, want 2", len(seen))
	}
}

// A host attached to both leaves must not bridge them on a switch-centric fabric.
func TestShortestNoHostTransitSwitchCentric(t *testing.T) {
	b := topo.NewBuilder("leafspine", nil, 100e9, clock.Microsecond)
	h0, h1, h2 := b.AddHost(), b.AddHost(), b.AddHost()
	l0, l1, sp := b.AddSwitch(), b.AddSwitch(), b.AddSwitch()
	b.Connect(h0, l0)
	b.Connect(h1, l1)
	b.Connect(h2, l0) // h2 dual-homed: port 0 to l0, port 1 to l1
	b.Connect(h2, l1)
	b.Connect(l0, sp)
	b.Connect(l1, sp)
	g := b.G
	tb, err := Shortest(g)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := tb.Paths(g, 0, 1, 0)
	if got := formats(g, ps); !reflect.DeepEqual(got, []string{"h0 s0 s2 s1 h1"}) {
		t.Errorf("switch-centric paths %v", got)
	}
	// Dual-homed host: both ports reach h0? Only port 0 is shortest (2 links vs 4).
	if got := tb.Ports(h2, 0); !reflect.DeepEqual(got, []uint8{0}) {
		t.Errorf("h2 -> h0 first hops %v", got)
	}
	// With transit allowed the host becomes an equal-cost bridge.
	tt, _ := ShortestWith(g, true)
	ps, _ = tt.Paths(g, 0, 1, 0)
	if got := formats(g, ps); !reflect.DeepEqual(got, []string{"h0 s0 h2 s1 h1", "h0 s0 s2 s1 h1"}) {
		t.Errorf("transit paths %v", got)
	}
}

func TestShortestNDC(t *testing.T) {
	g := ndc(4, 1)
	tb, err := Shortest(g)
	if err != nil {
		t.Fatal(err)
	}
	if !tb.HostTransit {
		t.Fatal("NDC hosts relay")
	}
	// A 4-hop pair: both first hops are shortest (multi-homed host), and the two shortest paths are the
	// two digit-correction orders.
	if got := tb.Ports(g.Hosts[15], 0); !reflect.DeepEqual(got, []uint8{0, 1}) {
		t.Errorf("h15 -> h0 first hops %v", got)
	}
	ps, err := tb.Paths(g, 15, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := formats(g, ps); !reflect.DeepEqual(got, []string{"h15 s3 h12 s4 h0", "h15 s7 h3 s0 h0"}) {
		t.Errorf("paths %v", got)
	}
	// A 2-hop pair: one first hop.
	if got := tb.Ports(g.Hosts[1], 2); !reflect.DeepEqual(got, []uint8{0}) {
		t.Errorf("h1 -> h2 first hops %v", got)
	}
	// The shortest router lists the same paths, and exposes the tables.
	r, err := New("shortest", g, nil)
	if err != nil {
		t.Fatal(err)
	}
	rp, _ := r.Paths(15, 0)
	if len(rp) != 2 || !rp[0].Equal(ps[0]) {
		t.Errorf("router paths %v", formats(g, rp))
	}
	if r.(Forwarder).Tables() == nil {
		t.Error("shortest has no tables")
	}
}

func TestRegistry(t *testing.T) {
	names := Names()
	if !sort.StringsAreSorted(names) || !slices.Contains(names, "bcube") || !slices.Contains(names, "shortest") {
		t.Errorf("names %v", names)
	}
	g := ndc(4, 1)
	if _, err := New("nope", g, nil); err == nil || !strings.Contains(err.Error(), "bcube, ") {
		t.Errorf("unknown algorithm: %v", err)
	}
	if _, err := New("shortest", g, map[string]string{"k": "3"}); err == nil || !strings.Contains(err.Error(), `"k"`) {
		t.Errorf("unknown key: %v", err)
	}
	if _, err := New("shortest", g, map[string]string{"max_paths": "0"}); err == nil {
		t.Error("max_paths=0 accepted")
	}
	r, err := New("shortest", g, map[string]string{"max_paths": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if ps, _ := r.Paths(15, 0); len(ps) != 1 {
		t.Errorf("max_paths=1 gave %d", len(ps))
	}
	bc, err := New("bcube", g, nil)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := bc.Paths(15, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := formats(g, ps); !reflect.DeepEqual(got, []string{"h15 s3 h12 s4 h0", "h15 s7 h3 s0 h0"}) {
		t.Errorf("bcube paths %v", got)
	}
	// Differ in digit 1 only: the direct path (layer 1) comes first, the detour after.
	ps, _ = bc.Paths(1, 5)
	if ps[0].Format(g) != "h1 s5 h5" || len(ps) != 2 || ps[1].Hops() != 6 {
		t.Errorf("bcube 2-hop paths %v", formats(g, ps))
	}
}

func TestVia(t *testing.T) {
	g := ndc(4, 1)
	// Pin h15 -> h0 through h3 (the layer-1-first relay): h15 -> s7 -> h3 -> s0 -> h0.
	p, err := Via(g, 15, 0, []int{3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Format(g) != "h15 s7 h3 s0 h0" || p.Validate(g) != nil {
		t.Fatalf("via h3: %q", p.Format(g))
	}
	bc, _ := New("bcube", g, nil)
	q, err := Via(g, 15, 0, []int{12}, bc)
	if err != nil {
		t.Fatal(err)
	}
	if q.Format(g) != "h15 s3 h12 s4 h0" || !reflect.DeepEqual(q.Route(), []uint8{0, 0, 1, 0}) {
		t.Fatalf("via h12: %q %v", q.Format(g), q.Route())
	}
	// Without relays, Via is the segment itself; with a nil alg a 4-hop pair would need a host, so the
	// switch-only segment fails clearly.
	if _, err := Via(g, 15, 0, nil, nil); err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("switch-only 4-hop: %v", err)
	}
	if _, err := Via(g, 15, 0, []int{15}, nil); err == nil {
		t.Error("relay equal to src accepted")
	}
	if _, err := Via(g, 15, 0, []int{99}, nil); err == nil || !strings.Contains(err.Error(), "h99") {
		t.Errorf("bad relay: %v", err)
	}
}

func TestExplicit(t *testing.T) {
	g := ndc(4, 1)
	p, err := ExplicitNames(g, []string{"h15", "s3", "h12", "s4", "h0"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := BCubePath(g, 15, 0, nil)
	if !p.Equal(want) {
		t.Fatalf("explicit %v != bcube %v", p, want)
	}
	_, err = ExplicitNames(g, []string{"h15", "s4", "h0"})
	if err == nil || !strings.Contains(err.Error(), "h15 and s4 are not linked") {
		t.Errorf("unlinked: %v", err)
	}
	_, err = ExplicitNames(g, []string{"h15", "s3"})
	if err == nil || !strings.Contains(err.Error(), "s3 is a switch") {
		t.Errorf("switch end: %v", err)
	}
	if _, err := ExplicitNames(g, []string{"h15", "s3", "hx"}); err == nil || !strings.Contains(err.Error(), "hx") {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := Explicit(g, []int{g.Hosts[0]}); err == nil {
		t.Error("one-device path accepted")
	}
	bad := Path{Nodes: []int{g.Hosts[15], sw(g, 3), g.Hosts[0]}, Ports: []uint8{0, 0}}
	if err := bad.Validate(g); err == nil || !strings.Contains(err.Error(), "leads to h12, not h0") {
		t.Errorf("validate: %v", err)
	}
}

// The family builders must agree with the hand-built graphs these tests reason about.
func TestBuiltTopologies(t *testing.T) {
	g, err := topo.Build("ndc", map[string]string{"n": "4", "k": "1"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := BCubePath(g, 15, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := BCubePath(ndc(4, 1), 15, 0, nil)
	if p.Format(g) != "h15 s3 h12 s4 h0" || !reflect.DeepEqual(p.Route(), want.Route()) {
		t.Errorf("built NDC(4,1): %q %v", p.Format(g), p.Route())
	}
	r, err := New("bcube", g, nil)
	if err != nil {
		t.Fatal(err)
	}
	for s := range g.Hosts {
		for d := range g.Hosts {
			if s == d {
				continue
			}
			ps, err := r.Paths(s, d)
			if err != nil || len(ps) != 2 {
				t.Fatalf("h%d->h%d: %v %d", s, d, err, len(ps))
			}
			for _, p := range ps {
				if err := p.Validate(g); err != nil {
					t.Fatalf("h%d->h%d: %v", s, d, err)
				}
			}
		}
	}

	// Fat-tree k=4: 4 shortest paths between pods, 2 within a pod across edges, 1 under one edge.
	ft, err := topo.Build("fattree", map[string]string{"k": "4"})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Shortest(ft)
	if err != nil {
		t.Fatal(err)
	}
	last := len(ft.Hosts) - 1
	for _, c := range []struct{ src, dst, paths, hops int }{{0, last, 4, 6}, {0, 2, 2, 4}, {0, 1, 1, 2}} {
		ps, err := tb.Paths(ft, c.src, c.dst, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != c.paths || ps[0].Hops() != c.hops {
			t.Errorf("fat-tree h%d->h%d: %d paths of %d hops, want %d of %d", c.src, c.dst, len(ps), ps[0].Hops(), c.paths, c.hops)
		}
	}
}

// Equal-length paths are many on a random regular graph, and which k of them Yen returns must not depend
// on map order: the same spec has to give the same routes, run after run.
func TestKSPIsDeterministic(t *testing.T) {
	g := topo.MustBuild("fcplus", "switches=8", "s=6", "seed=1", "hosts_per_switch=2")
	for _, alg := range []struct{ name, k, nlp string }{{"ksp", "4", ""}, {"dfksp", "4", "2"}} {
		var first string
		for i := 0; i < 5; i++ {
			params := map[string]string{"k": alg.k}
			if alg.nlp != "" {
				params["lossless_priorities"] = alg.nlp
			}
			r, err := New(alg.name, g, params)
			if err != nil {
				t.Fatal(err)
			}
			pairs, err := PairPaths(g, r)
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprint(pairs)
			if i == 0 {
				first = got
			} else if got != first {
				t.Fatalf("%s: build %d chose other paths than build 0", alg.name, i)
			}
		}
	}
}

// Dist walks the tables; it must give every node's breadth-first distance to every host under the same
// rules (only switches, and hosts on server-centric fabrics, in the middle), -1 where the host is cut off.
func TestDistIsBreadthFirst(t *testing.T) {
	ft := topo.MustBuild("fattree", "k=4")
	for _, tc := range []struct {
		name string
		g    *topo.Graph
	}{
		{"fattree k=4", ft},
		{"fattree k=4, h0's cable and two of s0's uplinks cut", WithoutLinks(ft, map[int]bool{
			ft.Nodes[ft.Hosts[0]].Ports[0]: true, ft.Nodes[ft.Switches[0]].Ports[2]: true, ft.Nodes[ft.Switches[0]].Ports[3]: true})},
		{"ndc n=4 k=1", topo.MustBuild("ndc", "n=4", "k=1")},
	} {
		g := tc.g
		tb, err := Shortest(g)
		if err != nil {
			t.Fatal(err)
		}
		unreachable := 0
		for d, dn := range g.Hosts {
			want := make([]int, len(g.Nodes))
			for i := range want {
				want[i] = -1
			}
			want[dn] = 0
			for q := []int{dn}; len(q) > 0; q = q[1:] {
				u := q[0]
				if u != dn && g.Nodes[u].Kind == topo.Host && !tb.HostTransit {
					continue
				}
				for p := range g.Nodes[u].Ports {
					if v := g.Peer(u, p).Node; want[v] < 0 && v != dn {
						want[v] = want[u] + 1
						q = append(q, v)
					}
				}
			}
			for n := range g.Nodes {
				if got := tb.Dist(n, d); got != want[n] {
					t.Fatalf("%s: Dist(%s, h%d) = %d, breadth-first %d", tc.name, g.Nodes[n].Name, d, got, want[n])
				}
				if want[n] < 0 {
					unreachable++
				}
			}
		}
		if strings.Contains(tc.name, "cut") != (unreachable > 0) {
			t.Fatalf("%s: %d unreachable (node, host) pairs", tc.name, unreachable)
		}
	}
}
