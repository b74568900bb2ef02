package route

import (
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/lab/topo"
)

func xpander(t *testing.T) *topo.Graph {
	t.Helper()
	return topo.MustBuild("xpander", "switches=32", "degree=7", "hosts_per_switch=2", "seed=3")
}

func newFlowRouter(t *testing.T, g *topo.Graph, alg string, params map[string]string) *VLB {
	t.Helper()
	r, err := New(alg, g, params)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := r.(*VLB)
	if !ok {
		t.Fatalf("%s router is %T, want *VLB", alg, r)
	}
	if _, ok := r.(FlowRouter); !ok {
		t.Fatalf("%s router does not choose paths per flow", alg)
	}
	return v
}

// checkPath fails unless p is a valid, loop-free host path from h<src> to h<dst>.
func checkPath(t *testing.T, g *topo.Graph, p Path, src, dst int) {
	t.Helper()
	if err := p.Validate(g); err != nil {
		t.Fatalf("h%d->h%d: %v (path %s)", src, dst, err, p.Format(g))
	}
	if p.Nodes[0] != g.Hosts[src] || p.Nodes[len(p.Nodes)-1] != g.Hosts[dst] {
		t.Fatalf("h%d->h%d: path %s has the wrong ends", src, dst, p.Format(g))
	}
	seen := map[int]bool{}
	for _, n := range p.Nodes {
		if seen[n] {
			t.Fatalf("h%d->h%d: path %s visits %s twice", src, dst, p.Format(g), g.Nodes[n].Name)
		}
		seen[n] = true
	}
}

func TestVLBPathsValid(t *testing.T) {
	g := xpander(t)
	r := newFlowRouter(t, g, "vlb", map[string]string{"seed": "7"})
	sp, err := Shortest(g)
	if err != nil {
		t.Fatal(err)
	}
	nh := len(g.Hosts)
	var vlbHops, spHops, n int
	for src := 0; src < nh; src++ {
		for dst := 0; dst < nh; dst++ {
			if src == dst {
				continue
			}
			ps, err := r.Paths(src, dst)
			if err != nil {
				t.Fatal(err)
			}
			sameSw := r.f.HostSw[src] == r.f.HostSw[dst]
			if sameSw && len(ps) != 1 {
				t.Fatalf("h%d->h%d share a switch: %d candidate paths, want the direct one", src, dst, len(ps))
			}
			if !sameSw && (len(ps) < 2 || len(ps) > len(r.f.Sw)-2) {
				t.Fatalf("h%d->h%d: %d candidate paths, want 2..%d (one per intermediate)", src, dst, len(ps), len(r.f.Sw)-2)
			}
			for _, p := range ps {
				checkPath(t, g, p, src, dst)
			}
			for id := uint32(1); id <= 4; id++ {
				fr, err := r.FlowRoute(src, dst, id, 1e6)
				if err != nil {
					t.Fatal(err)
				}
				if fr.Table || len(fr.Then.Nodes) > 0 {
					t.Fatalf("vlb flow h%d->h%d uses the tables or a second path: %+v", src, dst, fr)
				}
				checkPath(t, g, fr.Path, src, dst)
				vlbHops += fr.Path.Hops()
				spHops += int(sp.Dist(g.Hosts[src], dst))
				n++
			}
		}
	}
	// A Valiant path is two shortest legs with loops cut: longer than direct on average, at most twice
	// (plus the host links counted once).
	ratio := float64(vlbHops) / float64(spHops)
	if ratio < 1.2 || ratio > 2 {
		t.Fatalf("VLB paths average %.2fx the shortest hop count, want between 1.2 and 2", ratio)
	}
}

func TestVLBIntermediateUniform(t *testing.T) {
	g := xpander(t)
	r := newFlowRouter(t, g, "vlb", nil)
	n := len(r.f.Sw)
	for _, ab := range [][2]int{{0, 1}, {5, 2}, {0, n - 1}, {n - 1, n - 2}} {
		count := make([]int, n)
		const draws = 30000
		for i := uint64(0); i < draws; i++ {
			count[r.Intermediate(ab[0], ab[1], i)]++
		}
		if count[ab[0]] != 0 || count[ab[1]] != 0 {
			t.Fatalf("s%d->s%d: the source or destination ToR was picked as intermediate (%d, %d times)", ab[0], ab[1], count[ab[0]], count[ab[1]])
		}
		want := float64(draws) / float64(n-2)
		for w, c := range count {
			if w != ab[0] && w != ab[1] && (float64(c) < 0.8*want || float64(c) > 1.2*want) {
				t.Fatalf("s%d->s%d: intermediate s%d picked %d times, want about %.0f", ab[0], ab[1], w, c, want)
			}
		}
	}
}

func TestVLBDeterministicBySeed(t *testing.T) {
	g := xpander(t)
	a := newFlowRouter(t, g, "vlb", map[string]string{"seed": "5"})
	b := newFlowRouter(t, g, "vlb", map[string]string{"seed": "5"})
	c := newFlowRouter(t, g, "vlb", map[string]string{"seed": "6"})
	differ := 0
	for id := uint32(1); id <= 200; id++ {
		src, dst := int(id)%len(g.Hosts), (int(id)*7+3)%len(g.Hosts)
		if src == dst {
			continue
		}
		pa, _ := a.FlowRoute(src, dst, id, 1)
		pb, _ := b.FlowRoute(src, dst, id, 1)
		pc, _ := c.FlowRoute(src, dst, id, 1)
		if !pa.Path.Equal(pb.Path) {
			t.Fatalf("seed 5 twice: flow %d took %s and %s", id, pa.Path.Format(g), pb.Path.Format(g))
		}
		if !pa.Path.Equal(pc.Path) {
			differ++
		}
	}
	if differ < 100 {
		t.Fatalf("seeds 5 and 6 differ on %d of ~200 flows, want most", differ)
	}
	pa, _ := a.Paths(0, 9)
	pb, _ := c.Paths(0, 9)
	if len(pa) != len(pb) {
		t.Fatalf("Paths depends on the seed: %d vs %d candidates", len(pa), len(pb))
	}
	for i := range pa {
		if !pa[i].Equal(pb[i]) {
			t.Fatalf("Paths depends on the seed at candidate %d", i)
		}
	}
}

func TestHybridSwitchesAfterThreshold(t *testing.T) {
	g := xpander(t)
	h := newFlowRouter(t, g, "hybrid", map[string]string{"threshold": "50000", "seed": "2"})
	v := newFlowRouter(t, g, "vlb", map[string]string{"seed": "2"})
	src, dst := 0, len(g.Hosts)-1
	small, err := h.FlowRoute(src, dst, 1, 50000)
	if err != nil {
		t.Fatal(err)
	}
	if !small.Table || len(small.Then.Nodes) != 0 {
		t.Fatalf("a 50000 B flow with Q=50000 must stay on the tables, got %+v", small)
	}
	for id := uint32(1); id < 50; id++ {
		big, err := h.FlowRoute(src, dst, id, 50001)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := v.FlowRoute(src, dst, id, 50001)
		if !big.Table || big.After != 50000 || !big.Then.Equal(want.Path) {
			t.Fatalf("flow %d: hybrid = %+v, want tables then the vlb path %s after 50000 B", id, big, want.Path.Format(g))
		}
		checkPath(t, g, big.Path, src, dst)
		if TrunkHops(big.Path) != int(h.dist[h.f.HostSw[src]][h.f.HostSw[dst]]) {
			t.Fatalf("hybrid's first path %s is not a shortest path", big.Path.Format(g))
		}
	}
	def := newFlowRouter(t, g, "hybrid", nil)
	if def.Threshold != 100_000 {
		t.Fatalf("hybrid default threshold %d, want the thesis' 100 KB", def.Threshold)
	}
	ps, _ := h.Paths(src, dst)
	if !ps[0].Equal(directPath(t, h, src, dst)) {
		t.Fatalf("hybrid's first candidate is not the direct path")
	}
}

func directPath(t *testing.T, h *VLB, src, dst int) Path {
	t.Helper()
	fr, err := h.FlowRoute(src, dst, 1, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return fr.Path
}

func TestCutLoops(t *testing.T) {
	// 0 -> 1 -> 2 -> 1 -> 3: the detour to 2 goes.
	p := SwPath{{From: 0, To: 1}, {From: 1, To: 2}, {From: 2, To: 1}, {From: 1, To: 3}}
	got := cutLoops(0, p).Switches(0)
	if len(got) != 3 || got[1] != 1 || got[2] != 3 {
		t.Fatalf("cutLoops = %v, want [0 1 3]", got)
	}
	// Back through the source: 0 -> 1 -> 0 -> 2.
	got = cutLoops(0, SwPath{{From: 0, To: 1}, {From: 1, To: 0}, {From: 0, To: 2}}).Switches(0)
	if len(got) != 2 || got[1] != 2 {
		t.Fatalf("cutLoops = %v, want [0 2]", got)
	}
}

func TestVLBErrors(t *testing.T) {
	g := xpander(t)
	for _, c := range []struct {
		alg    string
		params map[string]string
		want   string
	}{
		{"vlb", map[string]string{"threshold": "1"}, `unknown key "threshold"`},
		{"vlb", map[string]string{"seed": "-1"}, "seed"},
		{"hybrid", map[string]string{"threshold": "0"}, "threshold"},
		{"hybrid", map[string]string{"threshold": "10KB"}, "threshold"},
	} {
		_, err := New(c.alg, g, c.params)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s %v: error %v, want one naming %q", c.alg, c.params, err, c.want)
		}
	}
	if _, err := New("vlb", ndc(2, 1), nil); err == nil || !strings.Contains(err.Error(), "server-centric") {
		t.Fatalf("vlb on NDC: error %v, want it refused as server-centric", err)
	}
}
