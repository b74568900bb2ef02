package bound

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// The scheme against gonum's exact simplex on instances the simplex can solve: the certified interval
// [G, Upper] must hold the optimum, and G must be within 1% of it.
func TestSchemeMatchesSimplex(t *testing.T) {
	fcp := topo.MustBuild("fcplus", "switches=16", "s=6", "seed=1", "hosts_per_switch=2")
	f, err := route.NewFabric(fcp)
	if err != nil {
		t.Fatal(err)
	}
	ksp, err := route.New("ksp", fcp, map[string]string{"k": "4"})
	if err != nil {
		t.Fatal(err)
	}
	df, err := route.New("dfksp", fcp, map[string]string{"k": "4", "lossless_priorities": "1"})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name string
		g    *topo.Graph
		r    route.Router
		tm   TM
	}{
		{"petersen uniform", topo.MustBuild("petersen", "hosts=130"), nil, nil},
		{"3x3 torus uniform", topo.MustBuild("torus", "x=3", "y=3", "hosts=90"), nil, nil},
		{"fcplus16 near-worst ksp4", fcp, ksp, NearWorst(f)},
		{"fcplus16 near-worst dfksp1L-4", fcp, df, NearWorst(f)},
		{"fcplus16 permutation ksp4", fcp, ksp, Permutation(f, r)},
		{"fcplus16 random 25% ksp4", fcp, ksp, RandomFraction(f, r, 0.25)},
	}
	for _, c := range cases {
		exact, err := Simplex(c.g, c.r, c.tm)
		if err != nil {
			t.Errorf("%s: simplex: %v", c.name, err)
			continue
		}
		got, err := Throughput(c.g, c.r, c.tm)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Logf("%s: simplex %.5f, scheme [%.5f, %.5f] in %d phases", c.name, exact.G, got.G, got.Upper, got.Phases)
		if got.G > exact.G*(1+1e-6) || got.Upper < exact.G*(1-1e-6) {
			t.Errorf("%s: optimum %.6f outside the certified interval [%.6f, %.6f]", c.name, exact.G, got.G, got.Upper)
		}
		if got.G < 0.99*exact.G {
			t.Errorf("%s: scheme %.6f more than 1%% below the optimum %.6f", c.name, got.G, exact.G)
		}
	}
}

// The answer carries its proof: the loads fit the capacities and route G times every demand; the
// lengths give back the dual bound.
func TestSchemeCertificate(t *testing.T) {
	g := topo.MustBuild("fcplus", "switches=16", "s=6", "seed=2", "hosts_per_switch=3")
	f, _ := route.NewFabric(g)
	tm := NearWorst(f)
	m, err := Instance(f, tm, hostRate(g), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Solve()
	if err != nil {
		t.Fatal(err)
	}
	for e, x := range res.Loads {
		if x > m.Cap[e]*(1+1e-9) {
			t.Errorf("arc %d carries %g > capacity %g", e, x, m.Cap[e])
		}
	}
	// Net outflow at each switch is G times its demand out minus in.
	net := make([]float64, m.Nodes)
	for e, x := range res.Loads {
		net[m.From[e]] += x
		net[m.To[e]] -= x
	}
	for a := range tm {
		want := 0.0
		for b := range tm[a] {
			want += res.G * (tm[a][b] - tm[b][a])
		}
		if math.Abs(net[a]-want) > 1e-6*(1+math.Abs(want)) {
			t.Errorf("s%d: net outflow %g, want G x demand %g", a, net[a], want)
		}
	}
	ub, err := m.DualBound(res.Lengths)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(ub-res.Upper) > 1e-9*ub || res.Upper < res.G {
		t.Errorf("certificate gives %g, result says %g (G %g)", ub, res.Upper, res.G)
	}
	if e6 := Eq6(f, tm, hostRate(g)); res.G > e6*(1+1e-9) {
		t.Errorf("G %g above Eq. (6) %g", res.G, e6)
	}
}

// The Hungarian method finds the longest matching brute force finds.
func TestNearWorstIsLongestMatching(t *testing.T) {
	g := topo.MustBuild("fcplus", "switches=8", "s=6", "seed=1", "hosts_per_switch=1")
	f, _ := route.NewFabric(g)
	d := hops(f)
	tm := NearWorst(f)
	got := 0
	for a := range tm {
		for b, x := range tm[a] {
			if x > 0 {
				got += d[a][b]
			}
		}
	}
	best := 0
	for _, p := range perms(len(f.Sw)) {
		s, ok := 0, true
		for a, b := range p {
			ok = ok && a != b
			s += d[a][b]
		}
		if ok && s > best {
			best = s
		}
	}
	if got != best {
		t.Errorf("near-worst total distance %d, longest derangement %d", got, best)
	}
}

// The Fibre Channel paper's analytic bound, against values worked out from its §2.5 formulas (c = 16).
func TestFibreChannelAnalytic(t *testing.T) {
	for _, c := range []struct {
		s, n int
		want float64
	}{{10, 130, 0.1538}, {10, 100, 0.5}, {9, 100, 0.3564}, {12, 100, 0.7702}, {7, 100, 0.0784}, {15, 150, 0.4091}, {15, 212, 0.0717}} {
		a, err := AnalyticBound(c.s, 16, c.n)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(a.Bound-c.want) > 1e-4 {
			t.Errorf("S=%d N=%d: bound %.4f (path %.4f, cut %.4f), want %.4f", c.s, c.n, a.Bound, a.PathLength, a.Cut, c.want)
		}
	}
	// And the LP never beats it: Petersen N=130 meets it.
	g := topo.MustBuild("petersen", "hosts=130")
	f, _ := route.NewFabric(g)
	a, _ := FibreChannelBound(f)
	res, _ := Throughput(g, nil, nil)
	if res.G > a.Bound*(1+1e-6) || a.C != 16 {
		t.Errorf("petersen: LP %.4f above analytic %.4f (c=%d)", res.G, a.Bound, a.C)
	}
}

// The Fibre Channel paper's port identity and cut (Fibre Channel paper §2.6): on every fabric 2L + N
// equals the ports in use, which is cS when every switch fills its c ports; and the min-degree cut the
// analytic bound uses, N(c - ⌈N/S⌉) / (⌈N/S⌉(N - ⌈N/S⌉)), equals the general per-switch cut
// N·s_i / (n_i(N - n_i)) at the switch with the most terminals when s_i = c - n_i.
func TestFibreChannelPortsIdentity(t *testing.T) {
	type fab struct{ family, args string }
	var fabs []fab
	for seed := 1; seed <= 3; seed++ {
		fabs = append(fabs, fab{"jellyfish", fmt.Sprintf("switches=12 degree=7 hosts=100 seed=%d", seed)},
			fab{"jellyfish", fmt.Sprintf("switches=12 degree=8 hosts=96 seed=%d", seed)})
	}
	fabs = append(fabs, fab{"petersen", "hosts=130"}, fab{"petersen", "hosts=100"}, fab{"torus", "x=3 y=3 hosts=108"})
	for _, c := range fabs {
		g := topo.MustBuild(c.family, strings.Fields(c.args)...)
		f, err := route.NewFabric(g)
		if err != nil {
			t.Fatal(err)
		}
		trunks, n, ports, full := 0, 0, 0, true
		cmax := 0
		for i, sw := range f.Sw {
			trunks += len(f.Out[i])
			n += f.Terminals[i]
			p := len(g.Nodes[sw].Ports)
			ports += p
			cmax = max(cmax, p)
		}
		for _, sw := range f.Sw {
			full = full && len(g.Nodes[sw].Ports) == cmax
		}
		L := trunks / 2 // each trunk is two arcs
		if 2*L+n != ports {
			t.Errorf("%s %s: 2L + N = %d, ports in use %d", c.family, c.args, 2*L+n, ports)
		}
		if full && 2*L+n != cmax*len(f.Sw) {
			t.Errorf("%s %s: every switch has c = %d ports but 2L + N = %d != cS = %d", c.family, c.args, cmax, 2*L+n, cmax*len(f.Sw))
		}
		a, err := FibreChannelBound(f)
		if err != nil {
			t.Fatal(err)
		}
		ni := 0
		for _, p := range f.Terminals {
			ni = max(ni, p)
		}
		r := (n + len(f.Sw) - 1) / len(f.Sw)
		general := float64(n) * float64(a.C-ni) / float64(ni*(n-ni))
		if ni == r && math.Abs(general-a.Cut) > 1e-12 {
			t.Errorf("%s %s: general cut %.6f at n_i = %d, min-degree form %.6f", c.family, c.args, general, ni, a.Cut)
		}
		if ni != r {
			t.Errorf("%s %s: the busiest switch has %d terminals, ⌈N/S⌉ = %d (hosts not spread evenly)", c.family, c.args, ni, r)
		}
	}
}
