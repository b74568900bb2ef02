package topo

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Strategy* against the FC+ paper's worked values (s = 18 and 22 are the paper's own choices, v = 4 for
// both; s = 6 and 10 follow Eq. 3 and Eq. 5) and Table IV's alternatives for s = 18.
func TestFCPlusParamsStrategyStar(t *testing.T) {
	for _, c := range []struct{ s, v, k, wantV, ngl int }{
		{6, 0, 4, 3, 2},
		{10, 0, 6, 3, 4},
		{18, 0, 10, 4, 4},
		{22, 0, 12, 4, 5},
		{18, 3, 10, 3, 8},
		{18, 6, 10, 6, 2},
		{18, 10, 10, 10, 1},
	} {
		k, v, ngl, err := FCPlusParams(c.s, c.v)
		if err != nil {
			t.Fatalf("s=%d v=%d: %v", c.s, c.v, err)
		}
		if k != c.k || v != c.wantV || ngl != c.ngl {
			t.Errorf("s=%d v=%d: got k=%d v=%d N_gl=%d, want k=%d v=%d N_gl=%d", c.s, c.v, k, v, ngl, c.k, c.wantV, c.ngl)
		}
	}
	for _, c := range []struct{ s, v int }{{7, 0}, {2, 0}, {18, 2}, {18, 11}, {18, 5}} {
		if _, _, _, err := FCPlusParams(c.s, c.v); err == nil {
			t.Errorf("s=%d v=%d accepted", c.s, c.v)
		}
	}
}

// The builder's wiring against the construction's invariants (FC+ paper §III-A): every ToR uses exactly s
// fabric ports, no two ToRs share two links, each of the k-1 bipartite graphs between adjacent virtual
// layers has exactly N edges, and every ToR pair has an up-down path (one lossless priority suffices).
func TestFCPlusBuilderInvariants(t *testing.T) {
	for _, c := range []struct{ n, s int }{{52, 18}, {100, 22}, {24, 10}} {
		for seed := 1; seed <= 3; seed++ {
			g := MustBuild("fcplus", "switches="+strconv.Itoa(c.n), "s="+strconv.Itoa(c.s), "h=2", "seed="+strconv.Itoa(seed))
			k, _, _, _ := FCPlusParams(c.s, 0)
			if len(g.Switches) != c.n || len(g.Hosts) != 2*c.n {
				t.Fatalf("N=%d s=%d: %d switches, %d hosts", c.n, c.s, len(g.Switches), len(g.Hosts))
			}
			fabric := map[int]int{}
			perLayer := map[int]int{}
			pairs := map[[2]int]bool{}
			for _, l := range g.Links {
				m, ok := strings.CutPrefix(l.Class, "vl")
				if !ok {
					continue
				}
				layer, err := strconv.Atoi(m)
				if err != nil || layer < 1 || layer >= k {
					t.Fatalf("link class %q outside layers 1..%d", l.Class, k-1)
				}
				perLayer[layer]++
				fabric[l.A.Node]++
				fabric[l.B.Node]++
				a, b := l.A.Node, l.B.Node
				if a > b {
					a, b = b, a
				}
				if a == b || pairs[[2]int{a, b}] {
					t.Fatalf("N=%d s=%d seed=%d: a self-loop or parallel link between %d and %d", c.n, c.s, seed, a, b)
				}
				pairs[[2]int{a, b}] = true
			}
			for _, sw := range g.Switches {
				if fabric[sw] != c.s {
					t.Fatalf("N=%d s=%d seed=%d: switch %d has %d fabric links, want s", c.n, c.s, seed, sw, fabric[sw])
				}
			}
			for m := 1; m < k; m++ {
				if perLayer[m] != c.n {
					t.Fatalf("N=%d s=%d seed=%d: %d edges between layers %d and %d, want N", c.n, c.s, seed, perLayer[m], m, m+1)
				}
			}
			if !upDownConnected(g) {
				t.Fatalf("N=%d s=%d seed=%d: a ToR pair has no up-down path", c.n, c.s, seed)
			}
		}
	}
}

// FC with a k whose uniform split is fractional (the FC+ paper's Table III: k = 6 and 8 at s = 18)
// spreads the links evenly and symmetrically, and every ToR still has s fabric links.
func TestFCUnevenSplit(t *testing.T) {
	for _, c := range []struct {
		s, k int
		want []int
	}{{18, 4, []int{3, 3, 3}}, {18, 6, []int{2, 2, 1, 2, 2}}, {18, 8, []int{1, 2, 1, 1, 1, 2, 1}}, {18, 10, []int{1, 1, 1, 1, 1, 1, 1, 1, 1}}} {
		if got := fcSplit(c.s, c.k); !slices.Equal(got, c.want) {
			t.Errorf("s=%d k=%d: split %v, want %v", c.s, c.k, got, c.want)
		}
	}
	for _, k := range []int{6, 8} {
		g := MustBuild("fc", "switches=100", "s=18", "k="+strconv.Itoa(k), "h=1", "seed=2")
		perLayer := map[string]int{}
		fabric := map[int]int{}
		for _, l := range g.Links {
			if strings.HasPrefix(l.Class, "vl") {
				perLayer[l.Class]++
				fabric[l.A.Node]++
				fabric[l.B.Node]++
			}
		}
		for m, d := range fcSplit(18, k) {
			if got := perLayer["vl"+strconv.Itoa(m+1)]; got != 100*d {
				t.Errorf("k=%d: %d links between layers %d and %d, want %d", k, got, m+1, m+2, 100*d)
			}
		}
		for _, sw := range g.Switches {
			if fabric[sw] != 18 {
				t.Fatalf("k=%d: switch %d has %d fabric links, want 18", k, sw, fabric[sw])
			}
		}
	}
	if _, err := Build("fc", map[string]string{"switches": "100", "s": "18", "k": "11", "h": "1"}); err == nil || !strings.Contains(err.Error(), "at most s/2+1") {
		t.Errorf("k=11 at s=18 (a graph without links): err %v, want one naming k", err)
	}
}
