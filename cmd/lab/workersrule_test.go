package main

import (
	"path/filepath"
	"testing"

	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
)

// TestWorkersForecastRule: the default worker count on two processors follows what a split measured on
// the shipped fabrics (docs/performance.md, "Parallel virtual runs"): the incasts, whose windows hold a
// few hundred events, and the short permutations stay on 1 worker; the k=12 and k=16 permutations and the
// Dragonfly(4,8,4) one get 2; one processor always gets 1.
func TestWorkersForecastRule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fabrics of up to 1,280 devices")
	}
	root := filepath.Join("..", "..", "lab", "experiments")
	for _, c := range []struct {
		spec string
		want int
	}{
		{"matched-htsim/incast-k4.yaml", 1},
		{"matched-htsim/incast-k8.yaml", 1},
		{"matched-htsim/incast-k12.yaml", 1},
		{"matched-htsim/perm-k4.yaml", 1},
		{"matched-htsim/perm-k8.yaml", 1},
		{"matched-htsim/perm-k12.yaml", 2},
		{"matched-htsim/perm-k16.yaml", 2},
		{"parallel/dragonfly-d3-perm.yaml", 2},
	} {
		s, err := spec.Load(filepath.Join(root, c.spec))
		if err != nil {
			t.Fatal(err)
		}
		l, err := lab.Build(s)
		if err != nil {
			t.Fatal(err)
		}
		fc := forecastWindows(l)
		t.Logf("%s: %.2f million events, %.0f windows of %v, %.0f events per window", c.spec, fc.events/1e6, fc.windows, fc.lookahead.Duration(), fc.perWindow())
		if got := workersFor(fc, 2); got != c.want {
			t.Errorf("%s: %d workers on 2 processors, want %d", c.spec, got, c.want)
		}
		if got := workersFor(fc, 1); got != 1 {
			t.Errorf("%s: %d workers on 1 processor, want 1", c.spec, got)
		}
	}
}

// TestWorkersForRule: the rule's limits, each binding in turn.
func TestWorkersForRule(t *testing.T) {
	for _, c := range []struct {
		events, windows float64
		procs, want     int
	}{
		{0, 0, 8, 1},            // no flows
		{10.5e6, 36700, 2, 1},   // the k=12 incast: 290 events a window
		{2.8e6, 85, 2, 1},       // the k=8 permutation: too short a run to split
		{24e6, 85, 2, 2},        // fat-tree k=16: as many as the processors
		{24e6, 85, 1, 1},        // one processor
		{24e6, 85, 32, 9},       // 32 processors: 2.5 million events each at most
		{100e6, 20000, 32, 5},   // 5,000 events a window: 1,000 each at most
		{6e6, 6e6 / 1999, 2, 1}, // just under 2,000 a window
	} {
		fc := forecast{events: c.events, windows: c.windows}
		if got := workersFor(fc, c.procs); got != c.want {
			t.Errorf("%.3g events in %.0f windows on %d processors: %d workers, want %d", c.events, c.windows, c.procs, got, c.want)
		}
	}
}
