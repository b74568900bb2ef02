package dynamic

import (
	"math"
	"testing"
	"time"
)

// near fails unless got rounds to want at the thesis' printed precision (tol = half its last digit).
func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.6g, thesis %g (±%g)", what, got, want, tol)
	}
}

// Thesis §3.3.3: n = 578, d_server = 24, d_network = {1/2, 2/3, 1}·25, i.e. dynamic ports at δ = 2,
// 1.5, 1 static ones, give 0.521 / 0.694 / 1.042.
func TestPerfectThesis(t *testing.T) {
	for _, c := range []struct{ delta, want float64 }{{2, 0.521}, {1.5, 0.694}, {1, 1.042}} {
		got, err := Perfect(25/c.delta, 24)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "perfect", got, c.want, 0.0005)
	}
	if _, err := Perfect(0, 24); err == nil {
		t.Error("Perfect(0, 24) accepted")
	}
}

// Appendix C's d* is the Cerf bound for XP(256,12) (2.388) and, at n = 578, r = 25,
// puts 25 nodes at distance 1 and the other 552 at distance 2.
func TestMooreBound(t *testing.T) {
	m, err := MooreBound(256, 12)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "d*(256,12)", m.DStar, 2.388, 0.0005)
	if m.K != 3 || m.Rest != 111 {
		t.Errorf("d*(256,12): K=%d R=%d, want 3 and 255-12-132 = 111", m.K, m.Rest)
	}
	m, _ = MooreBound(578, 25)
	if m.K != 2 || m.Rest != 552 || m.DStar != 1129.0/577 {
		t.Errorf("d*(578,25) = %+v, want K=2 R=552 d*=1129/577", m)
	}
	// A complete graph: every other node at distance 1.
	if m, _ := MooreBound(13, 12); m.DStar != 1 {
		t.Errorf("d*(K13) = %g, want 1", m.DStar)
	}
	for _, bad := range [][2]int{{12, 12}, {10, 1}, {1, 0}} {
		if _, err := MooreBound(bad[0], bad[1]); err == nil {
			t.Errorf("MooreBound(%d, %d) accepted", bad[0], bad[1])
		}
	}
}

// The restricted bound per active fraction (derived from Appendix C; the thesis plots
// it in Fig 3.4 without printing values): n = round(x·578), r = 25, s = 24.
func TestRestrictedThesis(t *testing.T) {
	for _, c := range []struct{ x, want float64 }{
		{1.0, 0.532}, {0.7, 0.537}, {0.5, 0.544}, {0.3, 0.562}, {0.2, 0.584}, {0.1, 0.667},
	} {
		n, err := ActiveNodes(578, c.x)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := Restricted(n, 25, 24)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "restricted", got, c.want, 0.0005)
	}
	if _, err := ActiveNodes(578, 0); err == nil {
		t.Error("fraction 0 accepted")
	}
	if _, _, err := Restricted(578, 25, 0); err == nil {
		t.Error("0 servers per node accepted")
	}
}

// Appendix B's two examples (Figure 4a and 4b of its reference [24]).
func TestEqualCostFatTreeThesis(t *testing.T) {
	ft, err := EqualCostFatTree(578, 49, 13872)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "N_bottom", ft.Bottom, 356.827, 0.0005)
	near(t, "N_agg", ft.Agg, 147.449, 0.0005)
	near(t, "x", ft.X, 0.2066, 0.00005)
	near(t, "t", ft.Throughput, 0.2604, 0.00005)
	near(t, "total", ft.Bottom+ft.Agg+ft.Core, 578, 1e-9)
	ft, _ = EqualCostFatTree(512, 18, 4096)
	near(t, "N_bottom", ft.Bottom, 298.667, 0.0005)
	near(t, "N_agg", ft.Agg, 142.222, 0.0005)
	near(t, "x", ft.X, 0.2381, 0.00005)
	near(t, "t", ft.Throughput, 0.3125, 0.00005)
	if _, err := EqualCostFatTree(10, 4, 40); err == nil {
		t.Error("40 servers on 10 4-port switches accepted")
	}
}

// Appendix A's ProjecToR example: t_change 12 µs, t_transmit 120 µs, n = 1001, 10 Gb/s, k = r = 25.
// KB and MB are 10^3 and 10^6 bytes (499500 · 150 bytes = 74.925 MB in the thesis).
func TestAppendixAThesis(t *testing.T) {
	r := Rounds{Change: 12 * time.Microsecond, Transmit: 120 * time.Microsecond, N: 1001, K: 25, R: 25, Link: 10e9}
	full, err := r.FullCoupling()
	if err != nil {
		t.Fatal(err)
	}
	near(t, "full ratio_active", full.RatioActive, 0.9090909, 5e-8)
	near(t, "full alpha_real Gb/s", full.AlphaReal/1e9, 9.090909, 5e-7)
	near(t, "full alpha_queue Gb/s", full.AlphaQueue/1e9, 0.00036363636, 5e-12)
	near(t, "full build-up KB", full.BuildUp/1e3, 6, 1e-9)
	near(t, "full consumed KB", full.Consumed/1e3, 6, 1e-9)
	near(t, "full max MB", full.TotalMax/1e6, 74.94, 0.005)
	near(t, "full min MB", full.TotalMin/1e6, 74.925, 0.0005)

	one, err := r.OneByOne()
	if err != nil {
		t.Fatal(err)
	}
	near(t, "one-by-one ratio_active", one.RatioActive, 0.99636363, 5e-8)
	near(t, "one-by-one alpha_queue Gb/s", one.AlphaQueue/1e9, 0.00039854545, 5e-12)
	near(t, "one-by-one build-up KB", one.BuildUp/1e3, 6.576, 0.0005)
	near(t, "one-by-one consumed KB", one.Consumed/1e3, 6.576, 0.0005)
	near(t, "one-by-one max MB", one.TotalMax/1e6, 80.16, 0.005)
	near(t, "one-by-one min MB", one.TotalMin/1e6, 80.145, 0.0005)

	fan, err := r.FanOut()
	if err != nil {
		t.Fatal(err)
	}
	near(t, "fan-out ratio_active", fan.RatioActive, 0.9090909, 5e-8)
	near(t, "fan-out build-up B", fan.BuildUp, 240, 1e-6)
	near(t, "fan-out consumed B", fan.Consumed, 240, 1e-6)
	near(t, "fan-out max MB", fan.TotalMax/1e6, 2.939, 0.0005)
	near(t, "fan-out min MB", fan.TotalMin/1e6, 2.925, 0.0005)

	// The equilibrium each section proves: a queue's build-up is what its visit drains.
	for _, b := range []Buffering{full, one, fan} {
		near(t, b.Strategy+" build-up - consumed", b.BuildUp-b.Consumed, 0, 1e-9)
	}
	bad := r
	bad.N = 1000
	if _, err := bad.FanOut(); err == nil {
		t.Error("fan-out with (n-1) mod r != 0 accepted")
	}
	bad = r
	bad.Transmit = 0
	if _, err := bad.FullCoupling(); err == nil {
		t.Error("zero transmit time accepted")
	}
}
