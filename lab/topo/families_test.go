package topo

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/graph/path"
	"gonum.org/v1/gonum/graph/simple"
)

func build(t *testing.T, family string, kv ...string) *Graph {
	t.Helper()
	m, err := ParseParams(kv)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Build(family, m)
	if err != nil {
		t.Fatalf("%s %v: %v", family, kv, err)
	}
	if err := g.Validate(); err != nil {
		t.Fatalf("%s %v: invalid: %v", family, kv, err)
	}
	return g
}

func degree(g *Graph, n int) int { return len(g.Nodes[n].Ports) }

// switchNeighbours returns the switch indices (s<i>) adjacent to switch s<i> over switch-switch links.
func switchNeighbours(g *Graph, si int) []int {
	var out []int
	n := g.Switches[si]
	for p := range g.Nodes[n].Ports {
		e := g.Peer(n, p)
		if g.Nodes[e.Node].Kind == Switch {
			out = append(out, g.Nodes[e.Node].Index)
		}
	}
	return out
}

// checkSimpleRegular asserts every switch has exactly d switch neighbours, all distinct, none itself.
func checkSimpleRegular(t *testing.T, g *Graph, d int) {
	t.Helper()
	for si := range g.Switches {
		nb := switchNeighbours(g, si)
		if len(nb) != d {
			t.Fatalf("s%d has %d switch neighbours, want %d", si, len(nb), d)
		}
		seen := map[int]bool{}
		for _, v := range nb {
			if v == si || seen[v] {
				t.Fatalf("s%d: parallel link or self-loop to s%d", si, v)
			}
			seen[v] = true
		}
	}
}

func checkConnected(t *testing.T, g *Graph) {
	t.Helper()
	if st := g.Stats(); !st.Connected || st.Diameter < 0 {
		t.Fatalf("%s %v: not connected: %+v", g.Family, g.Params, st)
	}
}

func TestNDCCountsAndPortRules(t *testing.T) {
	for _, c := range []struct{ n, k int }{{2, 1}, {4, 1}, {8, 1}, {3, 2}, {2, 3}, {5, 0}} {
		g := build(t, "ndc", fmt.Sprintf("n=%d", c.n), fmt.Sprintf("k=%d", c.k))
		hosts := int(math.Pow(float64(c.n), float64(c.k+1)))
		perLayer := hosts / c.n
		if len(g.Hosts) != hosts || len(g.Switches) != (c.k+1)*perLayer || len(g.Links) != hosts*(c.k+1) {
			t.Fatalf("NDC(%d,%d): %d hosts %d switches %d links", c.n, c.k, len(g.Hosts), len(g.Switches), len(g.Links))
		}
		for id, h := range g.Hosts {
			addr := g.Nodes[h].Addr
			v, mul := 0, 1
			for _, d := range addr {
				v += d * mul
				mul *= c.n
			}
			if len(addr) != c.k+1 || v != id {
				t.Fatalf("h%d has address %v", id, addr)
			}
			if degree(g, h) != c.k+1 {
				t.Fatalf("h%d has %d ports", id, degree(g, h))
			}
			for l := 0; l <= c.k; l++ {
				e := g.Peer(h, l)
				sw := g.Nodes[e.Node]
				if sw.Kind != Switch || sw.Layer != l {
					t.Fatalf("h%d port %d goes to %s (layer %d)", id, l, sw.Name, sw.Layer)
				}
				if e.Port != addr[l] {
					t.Fatalf("h%d reaches %s on port %d, want digit a_%d = %d", id, sw.Name, e.Port, l, addr[l])
				}
				if sw.Index != l*perLayer+NDCSwitchID(addr, c.n, l) {
					t.Fatalf("h%d layer %d switch is %s", id, l, sw.Name)
				}
			}
		}
		for si, s := range g.Switches {
			if degree(g, s) != c.n {
				t.Fatalf("s%d has %d ports, want %d", si, degree(g, s), c.n)
			}
			if g.Nodes[s].Layer != si/perLayer {
				t.Fatalf("s%d layer %d", si, g.Nodes[s].Layer)
			}
		}
		// BCube: two hosts share a layer-l switch iff their addresses differ only in digit l.
		share := func(a, b, l int) bool { return g.Peer(g.Hosts[a], l).Node == g.Peer(g.Hosts[b], l).Node }
		for a := 0; a < hosts; a++ {
			for b := a + 1; b < hosts; b++ {
				diff := []int{}
				for i := range g.Nodes[g.Hosts[a]].Addr {
					if g.Nodes[g.Hosts[a]].Addr[i] != g.Nodes[g.Hosts[b]].Addr[i] {
						diff = append(diff, i)
					}
				}
				for l := 0; l <= c.k; l++ {
					want := len(diff) == 1 && diff[0] == l
					if share(a, b, l) != want {
						t.Fatalf("NDC(%d,%d) h%d h%d layer %d: share=%v, addresses differ in %v", c.n, c.k, a, b, l, !want, diff)
					}
				}
			}
		}
		if st := g.Stats(); c.k >= 1 && st.Diameter != 2*(c.k+1) {
			t.Fatalf("NDC(%d,%d) host diameter %d, want %d", c.n, c.k, st.Diameter, 2*(c.k+1))
		}
	}
}

// The PortFC paper's Fig. 6 examples, with its switches 16..23 being our s0..s7.
func TestNDCMatchesPortFCFigure6(t *testing.T) {
	g := build(t, "ndc", "n=4", "k=1")
	name := func(e End) string { return g.Nodes[e.Node].Name }
	h := func(i int) int { return g.Hosts[i] }
	s := func(i int) int { return g.Switches[i] }
	// F1: node 15 -> switch 19 -> node 12 -> switch 20 -> node 0.
	if e := g.Peer(h(15), 0); name(e) != "s3" {
		t.Fatalf("h15 layer 0 is %s, want s3 (paper 19)", name(e))
	}
	if e := g.Peer(s(3), 0); name(e) != "h12" {
		t.Fatalf("s3 port 0 is %s, want h12", name(e))
	}
	if e := g.Peer(h(12), 1); name(e) != "s4" {
		t.Fatalf("h12 layer 1 is %s, want s4 (paper 20)", name(e))
	}
	if e := g.Peer(s(4), 0); name(e) != "h0" {
		t.Fatalf("s4 port 0 is %s, want h0", name(e))
	}
	// "node 15 is the next hop of switch 23", on its port 3; switch 23 connects 3, 7, 11, 15.
	for p, want := range []string{"h3", "h7", "h11", "h15"} {
		if e := g.Peer(s(7), p); name(e) != want {
			t.Fatalf("s7 port %d is %s, want %s", p, name(e), want)
		}
	}
}

func TestNDCRailOnly(t *testing.T) {
	g := build(t, "ndc", "n=4", "k=1", "rail=true")
	for _, l := range g.Links {
		sw := g.Nodes[l.B.Node]
		wantRate, wantClass := 100e9, "rail"
		if sw.Layer == 0 {
			wantRate, wantClass = 160e9, "hbd"
		}
		if l.RateBps != wantRate || l.Class != wantClass {
			t.Fatalf("link to %s (layer %d): %v %q, want %v %q", sw.Name, sw.Layer, l.RateBps, l.Class, wantRate, wantClass)
		}
	}
	g = build(t, "ndc", "n=2", "k=1", "rail=true", "hbd_rate=400Gbps", "rate=25Gbps")
	if g.LinkAt(g.Hosts[0], 0).RateBps != 400e9 || g.LinkAt(g.Hosts[0], 1).RateBps != 25e9 {
		t.Fatal("hbd_rate/rate not applied to layers 0/1")
	}
	plain := build(t, "ndc", "n=2", "k=1")
	if plain.Links[0].Class != "" || plain.Params["hbd_rate"] != "" {
		t.Fatalf("non-rail NDC has class %q, hbd_rate %q", plain.Links[0].Class, plain.Params["hbd_rate"])
	}
}

func TestFatTree(t *testing.T) {
	for _, k := range []int{2, 4, 6, 8} {
		g := build(t, "fattree", fmt.Sprintf("k=%d", k))
		if len(g.Hosts) != k*k*k/4 || len(g.Switches) != 5*k*k/4 || len(g.Links) != 3*k*k*k/4 {
			t.Fatalf("k=%d: %d hosts %d switches %d links", k, len(g.Hosts), len(g.Switches), len(g.Links))
		}
		tiers := [3]int{}
		for _, s := range g.Switches {
			n := g.Nodes[s]
			tiers[n.Layer]++
			if degree(g, s) != k {
				t.Fatalf("k=%d: %s (tier %d) degree %d", k, n.Name, n.Layer, degree(g, s))
			}
			for p := range n.Ports {
				o := g.Nodes[g.Peer(s, p).Node]
				switch {
				case o.Kind == Host && n.Layer != 0:
					t.Fatalf("host on tier %d switch %s", n.Layer, n.Name)
				case o.Kind == Switch && abs(o.Layer-n.Layer) != 1:
					t.Fatalf("%s tier %d linked to %s tier %d", n.Name, n.Layer, o.Name, o.Layer)
				case o.Kind == Switch && n.Layer < 2 && o.Layer < 2 && o.Group != n.Group:
					t.Fatalf("edge/agg link across pods: %s-%s", n.Name, o.Name)
				}
			}
		}
		if tiers != [3]int{k * k / 2, k * k / 2, k * k / 4} {
			t.Fatalf("k=%d tiers %v", k, tiers)
		}
		if st := g.Stats(); k >= 4 && st.Diameter != 6 {
			t.Fatalf("k=%d diameter %d", k, st.Diameter)
		}
	}
	// The thesis' 50%-oversubscribed k=16: 32 core switches, aggregation degree 12, 3072 switch ports.
	g := build(t, "fattree", "k=16", "core_fraction=0.5")
	ports, cores := 0, 0
	for _, s := range g.Switches {
		n := g.Nodes[s]
		for p := range n.Ports {
			if g.Nodes[g.Peer(s, p).Node].Kind == Switch {
				ports++
			}
		}
		if n.Layer == 1 && degree(g, s) != 12 {
			t.Fatalf("%s degree %d, want 12", n.Name, degree(g, s))
		}
		if n.Layer == 2 {
			cores++
		}
	}
	if cores != 32 || ports != 3072 {
		t.Fatalf("oversubscribed k=16: %d cores, %d directed switch links", cores, ports)
	}
	// k=4 with one of four cores removed: aggregation up-links differ by at most one, still connected.
	g = build(t, "fattree", "k=4", "core_fraction=0.25")
	lo, hi := 99, 0
	for _, s := range g.Switches {
		if g.Nodes[s].Layer == 1 {
			lo, hi = min(lo, degree(g, s)), max(hi, degree(g, s))
		}
	}
	if len(g.Switches) != 19 || hi-lo != 1 {
		t.Fatalf("k=4 core_fraction=0.25: %d switches, agg degree %d..%d", len(g.Switches), lo, hi)
	}
	checkConnected(t, g)
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func TestJellyfish(t *testing.T) {
	for _, c := range []struct{ n, d int }{{128, 8}, {20, 3}, {12, 2}, {10, 9}, {2, 1}, {50, 7}} {
		var first *Graph
		for seed := 1; seed <= 6; seed++ {
			g := build(t, "jellyfish", fmt.Sprintf("switches=%d", c.n), fmt.Sprintf("degree=%d", c.d),
				"hosts_per_switch=2", fmt.Sprintf("seed=%d", seed))
			if len(g.Switches) != c.n || len(g.Hosts) != 2*c.n || len(g.Links) != c.n*c.d/2+2*c.n {
				t.Fatalf("jellyfish %v seed %d: %d switches %d hosts %d links", c, seed, len(g.Switches), len(g.Hosts), len(g.Links))
			}
			checkSimpleRegular(t, g, c.d)
			checkConnected(t, g)
			if seed == 1 {
				first = g
			}
		}
		again := build(t, "jellyfish", fmt.Sprintf("switches=%d", c.n), fmt.Sprintf("degree=%d", c.d), "hosts_per_switch=2", "seed=1")
		if fmt.Sprint(again.Links) != fmt.Sprint(first.Links) {
			t.Fatalf("jellyfish %v: seed 1 gave two different graphs", c)
		}
	}
	a := build(t, "jellyfish", "switches=40", "degree=4", "seed=1")
	b := build(t, "jellyfish", "switches=40", "degree=4", "seed=2")
	if fmt.Sprint(a.Links) == fmt.Sprint(b.Links) {
		t.Fatal("seeds 1 and 2 gave the same jellyfish")
	}
}

func TestXpander(t *testing.T) {
	for _, c := range []struct{ n, d int }{{216, 11}, {12, 3}, {30, 4}, {5, 4}, {24, 2}} {
		L := c.n / (c.d + 1)
		for seed := 1; seed <= 5; seed++ {
			g := build(t, "xpander", fmt.Sprintf("switches=%d", c.n), fmt.Sprintf("degree=%d", c.d), fmt.Sprintf("seed=%d", seed))
			checkSimpleRegular(t, g, c.d)
			checkConnected(t, g)
			// A lift of K_(d+1): each switch has exactly one neighbour in every other meta-node, none in its own.
			for si, s := range g.Switches {
				u := g.Nodes[s].Group
				if u != si/L {
					t.Fatalf("s%d in meta-node %d, want %d", si, u, si/L)
				}
				per := map[int]int{}
				for _, v := range switchNeighbours(g, si) {
					per[g.Nodes[g.Switches[v]].Group]++
				}
				if per[u] != 0 || len(per) != c.d {
					t.Fatalf("xpander %v seed %d: s%d neighbours by meta-node %v", c, seed, si, per)
				}
			}
		}
	}
}

// groupLinks counts global links between each pair of groups.
func groupLinks(g *Graph) map[[2]int]int {
	out := map[[2]int]int{}
	for _, l := range g.Links {
		if l.Class != "global" {
			continue
		}
		a, b := g.Nodes[l.A.Node].Group, g.Nodes[l.B.Node].Group
		if a > b {
			a, b = b, a
		}
		out[[2]int{a, b}]++
	}
	return out
}

func TestDragonfly(t *testing.T) {
	for _, c := range []struct{ p, a, h int }{{2, 4, 2}, {1, 2, 1}, {3, 6, 3}, {1, 1, 3}} {
		for _, arr := range []string{"absolute", "relative"} {
			g := build(t, "dragonfly", fmt.Sprintf("p=%d", c.p), fmt.Sprintf("a=%d", c.a), fmt.Sprintf("h=%d", c.h), "arrangement="+arr)
			G := c.a*c.h + 1
			if len(g.Switches) != G*c.a || len(g.Hosts) != G*c.a*c.p {
				t.Fatalf("%v %s: %d switches %d hosts", c, arr, len(g.Switches), len(g.Hosts))
			}
			if want := G*c.a*c.p + G*c.a*(c.a-1)/2 + G*(G-1)/2; len(g.Links) != want {
				t.Fatalf("%v %s: %d links, want %d", c, arr, len(g.Links), want)
			}
			pairs := groupLinks(g)
			for a := 0; a < G; a++ {
				for b := a + 1; b < G; b++ {
					if pairs[[2]int{a, b}] != 1 {
						t.Fatalf("%v %s: %d global links between groups %d and %d", c, arr, pairs[[2]int{a, b}], a, b)
					}
				}
			}
			for _, s := range g.Switches {
				n := g.Nodes[s]
				if degree(g, s) != c.p+c.a+c.h-1 {
					t.Fatalf("%s degree %d", n.Name, degree(g, s))
				}
				// Port layout: hosts, locals in peer order, then globals.
				for port := range n.Ports {
					l := g.LinkAt(s, port)
					o := g.Nodes[l.Other(s).Node]
					switch {
					case port < c.p:
						if l.Class != "host" || o.Kind != Host || o.Group != n.Group {
							t.Fatalf("%s port %d: %q to %s", n.Name, port, l.Class, o.Name)
						}
					case port < c.p+c.a-1:
						j := port - c.p
						if j >= n.Addr[1] {
							j++
						}
						if l.Class != "local" || o.Group != n.Group || o.Addr[1] != j {
							t.Fatalf("%s port %d: %q to %s, want local to switch %d of the group", n.Name, port, l.Class, o.Name, j)
						}
					default:
						k := n.Addr[1]*c.h + port - (c.p + c.a - 1)
						want := k
						if arr == "relative" {
							want = (n.Group + k + 1) % G
						} else if k >= n.Group {
							want = k + 1
						}
						if l.Class != "global" || o.Group != want {
							t.Fatalf("%s %s port %d (group port %d): to group %d, want %d", arr, n.Name, port, k, o.Group, want)
						}
					}
				}
			}
			checkConnected(t, g)
			if st := g.Stats(); st.SwitchDiameter != 3 && c.a > 1 {
				t.Fatalf("%v %s: switch diameter %d, want 3 (l-g-l)", c, arr, st.SwitchDiameter)
			}
		}
	}
	// A smaller Dragonfly with parallel global links.
	g := build(t, "dragonfly", "p=1", "a=4", "h=2", "groups=5")
	for pair, n := range groupLinks(g) {
		if n != 2 {
			t.Fatalf("groups=5: %d links between %v, want 2", n, pair)
		}
	}
	if len(groupLinks(g)) != 10 {
		t.Fatalf("groups=5: %d group pairs linked", len(groupLinks(g)))
	}
}

func TestSmallFabrics(t *testing.T) {
	cases := []struct {
		family             string
		kv                 []string
		switches, fabric   int
		deg, switchDiam    int
		switchAvgTimesPair float64 // sum over ordered pairs, to compare exactly
	}{
		{"ring", []string{"n=6"}, 6, 6, 2, 3, 0},
		{"torus", []string{"x=3", "y=3"}, 9, 18, 4, 2, 0},
		{"torus", []string{"x=2", "y=5"}, 10, 15, 3, 3, 0},
		{"petersen", nil, 10, 15, 3, 2, 0},
		{"envelope", nil, 5, 8, -1, 2, 0},
	}
	for _, c := range cases {
		g := build(t, c.family, c.kv...)
		if len(g.Switches) != c.switches || len(g.Hosts) != c.switches || len(g.Links) != c.fabric+c.switches {
			t.Fatalf("%s: %d switches %d hosts %d links", c.family, len(g.Switches), len(g.Hosts), len(g.Links))
		}
		if c.deg > 0 {
			checkSimpleRegular(t, g, c.deg)
		}
		st := g.Stats()
		if st.SwitchDiameter != c.switchDiam || st.Diameter != c.switchDiam+2 {
			t.Fatalf("%s: diameters %d/%d", c.family, st.SwitchDiameter, st.Diameter)
		}
		for _, s := range g.Switches {
			if g.Peer(s, 0).Node != g.Hosts[g.Nodes[s].Index] {
				t.Fatalf("%s: s%d port 0 is not its host", c.family, g.Nodes[s].Index)
			}
		}
	}
	// The FC paper's mean path lengths, normalised over N² switch pairs (self pairs count 0):
	// Petersen 1.5, 2×5 wrapped mesh 1.7, 3×3 torus 1.33.
	for _, c := range []struct {
		family string
		kv     []string
		pbar   float64
	}{{"petersen", nil, 1.5}, {"torus", []string{"x=2", "y=5"}, 1.7}, {"torus", []string{"x=3", "y=3"}, 4.0 / 3}} {
		g := build(t, c.family, c.kv...)
		n := float64(len(g.Switches))
		if got := g.Stats().SwitchAvgShortestPath * (n - 1) / n; math.Abs(got-c.pbar) > 1e-9 {
			t.Fatalf("%s %v: p̄ %.4f, want %.4f", c.family, c.kv, got, c.pbar)
		}
	}
	// Envelope = wheel: hub s4 joined to all rim switches, rim is a 4-cycle.
	g := build(t, "envelope", "hosts_per_switch=0")
	if len(switchNeighbours(g, 4)) != 4 {
		t.Fatal("envelope hub s4 does not reach all four rim switches")
	}
	for i := 0; i < 4; i++ {
		nb := fmt.Sprint(switchNeighbours(g, i))
		want := fmt.Sprint(sortedInts((i+1)%4, (i+3)%4, 4))
		if fmt.Sprint(sortedInts(switchNeighbours(g, i)...)) != want {
			t.Fatalf("envelope s%d neighbours %s, want %s", i, nb, want)
		}
	}
	// hosts= spreads evenly, lower-numbered switches first.
	g = build(t, "ring", "n=5", "hosts=7")
	per := make([]int, 5)
	for _, h := range g.Hosts {
		per[g.Nodes[g.Peer(h, 0).Node].Index]++
	}
	if fmt.Sprint(per) != "[2 2 1 1 1]" {
		t.Fatalf("hosts=7 over 5 switches: %v", per)
	}
	if _, ok := g.Params["hosts_per_switch"]; ok {
		t.Fatal("Params keep hosts_per_switch when hosts= was given")
	}
}

func sortedInts(v ...int) []int {
	out := append([]int{}, v...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestBadParamsNameTheParam(t *testing.T) {
	cases := []struct {
		family string
		kv     []string
		param  string
		reason string
	}{
		{"ndc", []string{"n=1", "k=1"}, "n", "at least 2"},
		{"ndc", []string{"k=1"}, "n", "required"},
		{"ndc", []string{"n=4", "k=x"}, "k", "integer"},
		{"ndc", []string{"n=4", "k=1", "m=3"}, "m", "valid: delay, hbd_rate, k, n, rail, rate"},
		{"ndc", []string{"n=4", "k=1", "hbd_rate=1Gbps"}, "hbd_rate", "rail=true"},
		{"ndc", []string{"n=4", "k=1", "rate=fast"}, "rate", "rate"},
		{"ndc", []string{"n=4", "k=1", "delay=5"}, "delay", "unit"},
		{"ndc", []string{"n=1000", "k=3"}, "k", "more than"},
		{"fattree", []string{"k=5"}, "k", "even"},
		{"fattree", []string{"k=4", "core_fraction=1"}, "core_fraction", "[0,1)"},
		{"fattree", []string{"k=4", "core_fraction=0.9"}, "core_fraction", "removes all"},
		{"jellyfish", []string{"switches=10", "degree=10"}, "degree", "less than switches"},
		{"jellyfish", []string{"switches=9", "degree=3"}, "degree", "odd"},
		{"jellyfish", []string{"switches=8", "degree=1"}, "degree", "cannot connect"},
		{"jellyfish", []string{"switches=1", "degree=1"}, "switches", "at least 2"},
		{"jellyfish", []string{"switches=8", "degree=3", "seed=abc"}, "seed", "integer"},
		{"jellyfish", []string{"switches=8", "degree=3", "hosts=4", "hosts_per_switch=2"}, "hosts", "not both"},
		{"xpander", []string{"switches=10", "degree=3"}, "switches", "multiple of degree+1 = 4"},
		{"xpander", []string{"switches=4", "degree=4"}, "degree", "less than switches"},
		{"dragonfly", []string{"p=2", "a=4", "h=2", "groups=4"}, "groups", "evenly"},
		{"dragonfly", []string{"p=2", "a=4", "h=2", "groups=10"}, "groups", "at most"},
		{"dragonfly", []string{"p=2", "a=4", "h=0"}, "h", "at least 1"},
		{"dragonfly", []string{"p=2", "a=4", "h=2", "arrangement=diagonal"}, "arrangement", "absolute or relative"},
		{"ring", []string{"n=2"}, "n", "at least 3"},
		{"torus", []string{"x=1", "y=3"}, "x", "at least 2"},
		{"petersen", []string{"hosts_per_switch=-1"}, "hosts_per_switch", "at least 0"},
		{"envelope", []string{"n=3"}, "n", "unknown parameter"},
		{"randomtree", nil, "switches", "required"},
		{"randomtree", []string{"switches=1"}, "switches", "at least 2"},
		{"randomtree", []string{"switches=12", "ports=8", "hosts=100"}, "ports", "s0 has 9 hosts: no port left"},
		{"randomtree", []string{"switches=4", "ports=0"}, "ports", "at least 1"},
		{"randomtree", []string{"switches=4", "ports=2", "hosts_per_switch=1"}, "ports", "no tree of 4 switches fits"},
		{"randomtree", []string{"switches=4", "seed=x"}, "seed", "integer"},
		{"randomtree", []string{"switches=4", "degree=3"}, "degree", "unknown parameter"},
		{"chordal", []string{"switches=4", "clique_min=3", "clique_max=2"}, "clique_max", "at least clique_min=3"},
		{"chordal", []string{"switches=4", "clique_min=0"}, "clique_min", "at least 1"},
		{"chordal", []string{"switches=4", "ports=many"}, "ports", "integer"},
		{"chordal", []string{"switches=5", "ports=2", "hosts_per_switch=1"}, "ports", "no chordal graph of 5 switches fits"},
		{"file", nil, "path", "required"},
		{"file", []string{"path=/nonexistent/topo.json"}, "path", "no such file"},
	}
	for _, c := range cases {
		m, _ := ParseParams(c.kv)
		_, err := Build(c.family, m)
		var pe *ParamError
		if !errors.As(err, &pe) {
			t.Fatalf("%s %v: error %v, want a ParamError", c.family, c.kv, err)
		}
		if pe.Param != c.param || !strings.Contains(err.Error(), c.reason) || !strings.Contains(err.Error(), c.param) {
			t.Fatalf("%s %v: %q (param %s), want param %s and %q", c.family, c.kv, err, pe.Param, c.param, c.reason)
		}
	}
	if _, err := Build("hypercube", nil); err == nil || !strings.Contains(err.Error(), "dragonfly") {
		t.Fatalf("unknown family: %v", err)
	}
	if _, err := ParseParams([]string{"n=1", "n=2"}); err == nil {
		t.Fatal("repeated key accepted")
	}
	if _, err := ParseParams([]string{"n"}); err == nil {
		t.Fatal("word without = accepted")
	}
}

func TestFamiliesListed(t *testing.T) {
	want := "chordal dragonfly envelope fattree fc fcplus file jellyfish ndc petersen randomtree ring torus xpander"
	if got := strings.Join(Families(), " "); got != want {
		t.Fatalf("Families() = %s", got)
	}
	for _, f := range Families() {
		keys := strings.Join(FamilyKeys(f), " ")
		if !strings.Contains(keys, "rate") || !strings.Contains(keys, "delay") {
			t.Fatalf("%s keys %s lack rate/delay", f, keys)
		}
	}
}

// Stats against gonum's all-pairs shortest paths.
func TestStatsAgainstGonum(t *testing.T) {
	for _, g := range []*Graph{
		MustBuild("ndc", "n=3", "k=1"), MustBuild("fattree", "k=4", "core_fraction=0.5"),
		MustBuild("jellyfish", "switches=16", "degree=3", "hosts=20"), MustBuild("dragonfly", "p=1", "a=2", "h=1"),
		MustBuild("envelope", "hosts=0"),
	} {
		ug := simple.NewUndirectedGraph()
		for i := range g.Nodes {
			ug.AddNode(simple.Node(i))
		}
		for _, l := range g.Links {
			ug.SetEdge(ug.NewEdge(simple.Node(l.A.Node), simple.Node(l.B.Node)))
		}
		all := path.DijkstraAllPaths(ug)
		over := func(set []int) (int, float64) {
			mx, sum, n := 0.0, 0.0, 0.0
			for _, a := range set {
				for _, b := range set {
					if a != b {
						w := all.Weight(int64(a), int64(b))
						mx, sum, n = math.Max(mx, w), sum+w, n+1
					}
				}
			}
			return int(mx), sum / n
		}
		st := g.Stats()
		hosts := g.Hosts
		if len(hosts) == 0 {
			hosts = g.Switches
		}
		hd, ha := over(hosts)
		sd, sa := over(g.Switches)
		if st.Diameter != hd || math.Abs(st.AvgShortestPath-ha) > 1e-9 || st.SwitchDiameter != sd || math.Abs(st.SwitchAvgShortestPath-sa) > 1e-9 {
			t.Fatalf("%s %v: stats %+v, gonum host %d/%.4f switch %d/%.4f", g.Family, g.Params, st, hd, ha, sd, sa)
		}
	}
}

// Xpander by repeated lifts and incremental expansion (expander thesis §2.2.2): XP(256,12) (256 is not
// a multiple of 13) and 2,2,2,2-lifts of K_13 are 12-regular and connected, with the thesis' link count.
func TestXpanderLiftsAndGrowth(t *testing.T) {
	for _, tc := range []map[string]string{
		{"switches": "256", "degree": "12", "hosts_per_switch": "4"},
		{"switches": "208", "degree": "12", "lifts": "2,2,2,2", "hosts_per_switch": "1"},
		{"switches": "210", "degree": "12", "lifts": "2x2x2x2", "hosts_per_switch": "1"},
	} {
		g, err := Build("xpander", tc)
		if err != nil {
			t.Fatalf("%v: %v", tc, err)
		}
		n, _ := strconv.Atoi(tc["switches"])
		fabric := 0
		for _, s := range g.Switches {
			deg := 0
			for p := range g.Nodes[s].Ports {
				if g.Nodes[g.Peer(s, p).Node].Kind == Switch {
					deg++
				}
			}
			if deg != 12 {
				t.Fatalf("%v: %s has degree %d", tc, g.Nodes[s].Name, deg)
			}
			fabric += deg
		}
		if len(g.Switches) != n || !g.Stats().Connected {
			t.Fatalf("%v: %d switches, connected %v", tc, len(g.Switches), g.Stats().Connected)
		}
		if n == 256 && fabric != 3072 {
			t.Fatalf("XP(256,12): %d directed fabric links, the thesis has 3072", fabric)
		}
	}
	if _, err := Build("xpander", map[string]string{"switches": "100", "degree": "12", "lifts": "2,2,2,2"}); err == nil {
		t.Error("lifts beyond switches accepted")
	}
}

// Without server links (the thesis' ToR-endpoint mode) a host link carries its switch's whole fabric
// capacity, so it never binds; with them (the default) it runs at the fabric rate.
func TestWithoutServerLinks(t *testing.T) {
	for _, fam := range []struct {
		name string
		kv   map[string]string
	}{
		{"fattree", map[string]string{"k": "4"}},
		{"xpander", map[string]string{"switches": "16", "degree": "3", "hosts_per_switch": "2"}},
	} {
		for _, off := range []bool{false, true} {
			kv := map[string]string{}
			for k, v := range fam.kv {
				kv[k] = v
			}
			if off {
				kv["server_links"] = "false"
			}
			g, err := Build(fam.name, kv)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range g.Hosts {
				l := g.LinkAt(h, 0)
				s := g.Peer(h, 0).Node
				fabric := 0.0
				for p := range g.Nodes[s].Ports {
					if g.Nodes[g.Peer(s, p).Node].Kind == Switch {
						fabric += g.LinkAt(s, p).RateBps
					}
				}
				want := 100e9
				if off {
					want = fabric
				}
				if l.RateBps != want {
					t.Fatalf("%s server_links=%v: h%d link %g b/s, want %g", fam.name, !off, h, l.RateBps, want)
				}
			}
		}
	}
}

// TestBuildWithinRefusesFromParameters: topologies beyond the device limit are refused from their
// parameters before a node is allocated (fat-tree k=200 took 8-14 s and 2 GB to be refused after it
// was built; a 2-million-switch Jellyfish ran past 20 s), and families without an estimate stop
// building at the limit.
func TestBuildWithinRefusesFromParameters(t *testing.T) {
	for _, tc := range []struct {
		family string
		kv     []string
	}{
		{"fattree", []string{"k=200"}},
		{"jellyfish", []string{"switches=2000000", "degree=4"}},
		{"xpander", []string{"switches=2000000", "degree=4"}},
		{"dragonfly", []string{"p=100000", "a=4", "h=2"}},
		{"ndc", []string{"n=10", "k=4"}},
	} {
		m, err := ParseParams(tc.kv)
		if err != nil {
			t.Fatal(err)
		}
		var tm *TooManyDevices
		if _, err := BuildWithin(tc.family, m, 100000); !errors.As(err, &tm) || tm.Estimate <= 100000 {
			t.Errorf("%s %v: %v", tc.family, tc.kv, err)
		}
	}
	// Past the limit by the estimate, or by the builder where a family has none.
	var tm *TooManyDevices
	if _, err := BuildWithin("ring", map[string]string{"n": "100"}, 50); !errors.As(err, &tm) {
		t.Errorf("ring n=100 within 50 devices: %v", err)
	}
	if _, err := BuildWithin("petersen", nil, 5); !errors.As(err, &tm) || tm.Estimate != 0 {
		t.Errorf("petersen within 5 devices (no estimator: the builder's limit): %v", err)
	}
	if g, err := BuildWithin("fattree", map[string]string{"k": "4"}, 100000); err != nil || len(g.Nodes) != 36 {
		t.Errorf("fat-tree k=4: %v", err)
	}
}
