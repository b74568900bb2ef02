package route

import (
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// globalHops counts the path's global links and the distinct groups its switches visit, in order.
func globalHops(g *topo.Graph, p Path) (int, []int) {
	n := 0
	for _, l := range p.Links(g) {
		if l.Class == "global" {
			n++
		}
	}
	var groups []int
	for _, v := range p.Nodes[1 : len(p.Nodes)-1] {
		q := g.Nodes[v].Group
		if len(groups) == 0 || groups[len(groups)-1] != q {
			groups = append(groups, q)
		}
	}
	return n, groups
}

func TestDragonflyCandidates(t *testing.T) {
	for _, arr := range []string{"absolute", "relative"} {
		g := topo.MustBuild("dragonfly", "p=2", "a=4", "h=2", "arrangement="+arr)
		for _, alg := range []string{"ugal", "telemetry"} {
			r, err := New(alg, g, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.(Adaptive).PathSelect() != alg {
				t.Fatalf("%s: PathSelect %q", alg, r.(Adaptive).PathSelect())
			}
			// h0 is in group 0, h(8*q+j) in group q (8 hosts per group).
			for _, dst := range []int{13, 45, 71} {
				ps, err := r.Paths(0, dst)
				if err != nil {
					t.Fatal(err)
				}
				if len(ps) != 8 { // |G|-1: one MIN, seven VAL
					t.Fatalf("%s %s h0->h%d: %d candidates, want 8", arr, alg, dst, len(ps))
				}
				seen := map[int]bool{}
				for i, p := range ps {
					if err := p.Validate(g); err != nil {
						t.Fatal(err)
					}
					hops, groups := globalHops(g, p)
					if i == 0 {
						if hops != 1 || len(groups) != 2 || p.Hops() > 5 {
							t.Fatalf("MIN %s: %d global hops, groups %v", p.Format(g), hops, groups)
						}
						continue
					}
					if hops != 2 || len(groups) != 3 || groups[0] != 0 || groups[2] != dst/8 || p.Hops() > 7 {
						t.Fatalf("VAL %s: %d global hops, groups %v", p.Format(g), hops, groups)
					}
					if seen[groups[1]] {
						t.Fatalf("intermediate group %d twice", groups[1])
					}
					seen[groups[1]] = true
				}
			}
			ps, err := r.Paths(0, 5) // same group: minimal only
			if err != nil || len(ps) != 1 || ps[0].Hops() != 3 {
				t.Fatalf("intra-group: %v %v", ps, err)
			}
		}
	}
}

func TestDragonflyMinimalIsOneGlobalHop(t *testing.T) {
	g := topo.MustBuild("dragonfly", "p=2", "a=4", "h=2")
	m, err := New("minimal", g, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(Adaptive); ok {
		t.Fatal("minimal must be static")
	}
	sh, err := New("shortest", g, nil)
	if err != nil {
		t.Fatal(err)
	}
	twoGlobal := 0
	for dst := 8; dst < 72; dst++ {
		ps, err := m.Paths(0, dst)
		if err != nil || len(ps) != 1 {
			t.Fatalf("h0->h%d: %v %v", dst, ps, err)
		}
		if n, _ := globalHops(g, ps[0]); n != 1 {
			t.Fatalf("minimal %s: %d global hops", ps[0].Format(g), n)
		}
		all, err := sh.Paths(0, dst)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range all {
			if n, _ := globalHops(g, p); n == 2 {
				twoGlobal++
			}
		}
	}
	// Why minimal exists: hop-count ECMP also goes through third groups.
	if twoGlobal == 0 {
		t.Fatal("shortest never takes two global hops on D1; minimal would be redundant")
	}
}

func TestDragonflyRefusesOtherFamiliesAndKeys(t *testing.T) {
	if _, err := New("telemetry", topo.MustBuild("ring", "n=4"), nil); err == nil || !strings.Contains(err.Error(), "dragonfly") {
		t.Fatalf("ring: %v", err)
	}
	g := topo.MustBuild("dragonfly", "p=1", "a=2", "h=1")
	for _, alg := range []string{"ugal", "ugal-periodic", "ugal-pb"} {
		if _, err := New(alg, g, map[string]string{"threshold": "-3"}); err == nil || !strings.Contains(err.Error(), "routing "+alg+": threshold") {
			t.Fatalf("%s: bad threshold: %v", alg, err)
		}
		if _, err := New(alg, g, map[string]string{"lossless_priorities": "9"}); err == nil || !strings.Contains(err.Error(), "lossless_priorities") {
			t.Fatalf("%s: 9 VCs: %v", alg, err)
		}
	}
	if _, err := New("telemetry", g, map[string]string{"k": "3"}); err == nil || !strings.Contains(err.Error(), `"k"`) {
		t.Fatalf("unknown key: %v", err)
	}
	// The h=1 micro-Dragonfly: 3 groups, candidates MIN plus one VAL.
	r, err := New("ugal", g, map[string]string{"threshold": "75000"})
	if err != nil {
		t.Fatal(err)
	}
	if ps, err := r.Paths(0, 2); err != nil || len(ps) != 2 {
		t.Fatalf("micro: %v %v", ps, err)
	}
	if r.(*Dragonfly).ThresholdBytes != 75000 {
		t.Fatal("threshold not kept")
	}
}
