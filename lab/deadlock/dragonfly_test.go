package deadlock

import (
	"testing"

	"github.com/fabriclab/fabriclab/lab/route"
)

// Dragonfly virtual channels (class = global links crossed) make PFC on D1 deadlock-free: with one class
// both MIN alone and MIN+VAL have cyclic buffer dependencies (the telemetry paper's Fig. 2 cycle), with 2
// classes MIN is acyclic, with 3 VAL is too; 2 classes cannot carry VAL's second global hop.
func TestDragonflyVCsBreakCycles(t *testing.T) {
	g := build(t, "dragonfly", map[string]string{"p": "2", "a": "4", "h": "2"})
	hop := ByPriority(func(p route.Path, i int) int {
		if p.Prio != nil {
			return int(p.Prio[i])
		}
		return 0
	})
	for _, tc := range []struct {
		alg, vcs string
		cyclic   bool
	}{
		{"minimal", "1", true},
		{"minimal", "2", false},
		{"telemetry", "1", true},
		{"telemetry", "3", false},
		{"ugal", "3", false},
	} {
		r, err := route.New(tc.alg, g, map[string]string{"lossless_priorities": tc.vcs})
		if err != nil {
			t.Fatal(err)
		}
		pairs, err := route.PairPaths(g, r)
		if err != nil {
			t.Fatal(err)
		}
		var all []route.Path
		for _, ps := range pairs {
			all = append(all, ps...)
		}
		rep := Analyze(g, all, hop)
		if rep.HasCycle() != tc.cyclic {
			t.Errorf("%s with %s classes: cyclic %v, want %v (%d channels, %d edges)", tc.alg, tc.vcs, rep.HasCycle(), tc.cyclic, rep.Channels, rep.Edges)
		}
	}
	r, err := route.New("telemetry", g, map[string]string{"lossless_priorities": "2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := route.PairPaths(g, r); err == nil {
		t.Error("2 classes accepted for VAL paths, which cross two global links")
	}
}
