package bound

import (
	"math"
	"testing"

	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// Golden values of the Fibre Channel paper (its §2.2 and §3.2), c = 16 ports per switch.
func TestFibreChannelGoldens(t *testing.T) {
	cases := []struct {
		name   string
		family string
		kv     []string
		want   float64
	}{
		{"petersen N=130", "petersen", []string{"hosts=130"}, 0.153846},
		{"2x5 wrapped mesh N=130", "torus", []string{"x=2", "y=5", "hosts=130"}, 0.128205},
		{"3x3 torus N=108", "torus", []string{"x=3", "y=3", "hosts=108"}, 0.25},
		{"3x3 torus N=90", "torus", []string{"x=3", "y=3", "hosts=90"}, 0.30},
		{"4-cycle N=56", "ring", []string{"n=4", "hosts=56"}, 1.0 / 7},
	}
	for _, c := range cases {
		g := topo.MustBuild(c.family, c.kv...)
		res, err := Simplex(g, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if math.Abs(res.G-c.want) > 1e-4 {
			t.Errorf("%s: LP g = %.6f, want %.6f", c.name, res.G, c.want)
		}
	}
}

// Best up*/down* on the 4-cycle is 0.8 of unrestricted: the switch opposite the root cannot relay.
func TestUpDownFourCycle(t *testing.T) {
	g := topo.MustBuild("ring", "n=4", "hosts=56")
	f, err := route.NewFabric(g)
	if err != nil {
		t.Fatal(err)
	}
	best := 0.0
	for root := 0; root < 4; root++ {
		for _, id := range perms(4) {
			u := route.NewUpDown(f, root, id)
			res, err := Simplex(g, route.TurnRouter("updown", u.Turns, 64), nil)
			if err != nil {
				t.Fatal(err)
			}
			best = math.Max(best, res.G)
		}
	}
	if math.Abs(best-0.8/7) > 1e-4 {
		t.Errorf("best up*/down* = %.6f, want %.6f (0.8 of 1/7)", best, 0.8/7)
	}
}

func perms(n int) [][]int {
	if n == 1 {
		return [][]int{{0}}
	}
	var out [][]int
	for _, p := range perms(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}
