package route

import (
	"fmt"
	"math"
	"testing"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// bruteCounts lists every switch-simple path of the undirected switch graph by depth-first search over
// the trunk arcs and keeps those with at most nlp-1 down-up turns (DownUps, the T_du DF-KSP filters on),
// independently of the class graph the counter walks.
func bruteCounts(f *Fabric, nlp, maxHops int) PathCounts {
	n := len(f.Sw)
	c := PathCounts{Pairs: n * (n - 1), ByHops: make([]int64, n)}
	seen := make([]bool, n)
	var walk func(at int, sp SwPath)
	walk = func(at int, sp SwPath) {
		for _, x := range f.Out[at] {
			if seen[x.To] {
				continue
			}
			p := append(sp[:len(sp):len(sp)], x)
			if f.DownUps(p) <= nlp-1 {
				c.ByHops[len(p)]++
			}
			// A prefix with too many turns can still be cut here: turns never go away as a path grows.
			if f.DownUps(p) <= nlp-1 && (maxHops < 0 || len(p) < maxHops) {
				seen[x.To] = true
				walk(x.To, p)
				seen[x.To] = false
			}
		}
	}
	for a := 0; a < n; a++ {
		seen[a] = true
		walk(a, nil)
		seen[a] = false
	}
	return c
}

func TestCountUpDownPathsMatchesBruteForce(t *testing.T) {
	cases := []struct {
		family string
		kv     []string
	}{
		{"fcplus", []string{"switches=12", "s=6", "seed=1"}},
		{"fcplus", []string{"switches=16", "s=6", "v=4", "seed=2"}},
		{"fcplus", []string{"switches=24", "s=10", "v=3", "seed=3"}},
		{"fc", []string{"switches=12", "s=6", "k=4", "seed=1"}},
		{"fc", []string{"switches=20", "s=6", "k=2", "seed=4"}},
	}
	for _, tc := range cases {
		g := topo.MustBuild(tc.family, append(tc.kv, "hosts_per_switch=1")...)
		f, err := NewFabric(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, nlp := range []int{1, 2} {
			for _, h := range []int{2, 4, -1} {
				if nlp == 2 && h < 0 && len(f.Sw) > 12 {
					continue // 2L paths of any length beyond 12 switches: too many for a unit test
				}
				name := fmt.Sprintf("%s %v nlp=%d maxHops=%d", tc.family, tc.kv, nlp, h)
				got, err := f.CountUpDownPaths(nlp, h)
				if err != nil {
					t.Fatal(err)
				}
				want := bruteCounts(f, nlp, h)
				for i := range max(len(got.ByHops), len(want.ByHops)) {
					var g, w int64
					if i < len(got.ByHops) {
						g = got.ByHops[i]
					}
					if i < len(want.ByHops) {
						w = want.ByHops[i]
					}
					if g != w {
						t.Errorf("%s: %d paths of %d hops, brute force %d", name, g, i, w)
					}
				}
				if got.PerPair(h) <= 0 {
					t.Errorf("%s: no paths counted", name)
				}
			}
		}
	}
}

// A two-layer FC is a bipartite graph whose up-down paths are one link or up-then-down through a top
// virtual switch: s·N one-link paths and d(d−1) two-link ones per top switch of down-degree d = s/2,
// none longer, so the mean per ordered pair is (s + d(d−1))/(N−1) whatever the random wiring.
func TestCountUpDownPathsTwoLayers(t *testing.T) {
	for _, c := range []struct{ n, s int }{{20, 6}, {31, 10}} {
		g := topo.MustBuild("fc", fmt.Sprintf("switches=%d", c.n), fmt.Sprintf("s=%d", c.s), "k=2", "hosts_per_switch=1", "seed=5")
		f, err := NewFabric(g)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.CountUpDownPaths(1, -1)
		if err != nil {
			t.Fatal(err)
		}
		d := c.s / 2
		if got.ByHops[1] != int64(c.n*c.s) || got.ByHops[2] != int64(c.n*d*(d-1)) || len(got.ByHops) > 3 && got.ByHops[3] != 0 {
			t.Errorf("N=%d s=%d: by hops %v, want [0 %d %d]", c.n, c.s, got.ByHops, c.n*c.s, c.n*d*(d-1))
		}
		want := float64(c.s+d*(d-1)) / float64(c.n-1)
		if p := got.PerPair(-1); math.Abs(p-want) > 1e-12 {
			t.Errorf("N=%d s=%d: %.6f paths per pair, want %.6f", c.n, c.s, p, want)
		}
		if p := got.PerPair(1); math.Abs(p-float64(c.s)/float64(c.n-1)) > 1e-12 {
			t.Errorf("N=%d s=%d: %.6f one-link paths per pair, want s/(N-1)", c.n, c.s, p)
		}
	}
	if _, err := (&Fabric{}).CountUpDownPaths(0, 4); err == nil {
		t.Error("0 lossless priorities accepted")
	}
}
