package report

import (
	"os"
	"path/filepath"
	"testing"
)

func TestNumericValue(t *testing.T) {
	for v, want := range map[string]float64{"0.3": 0.3, "100KB": 1e5, "10Gbps": 1e10, "10us": 1e-5, "7": 7} {
		if got, ok := numericValue(v); !ok || got != want {
			t.Errorf("%s = %g, %v; want %g", v, got, ok, want)
		}
	}
	if _, ok := numericValue("dcqcn"); ok {
		t.Error("dcqcn read as a number")
	}
}

// TestWriteSweepPlots: a tree with a numeric sweep, one with a categorical sweep, and one with seeds
// but no sweep each give their plots; one run per group and no sweep gives none.
func TestWriteSweepPlots(t *testing.T) {
	group := func(name string, set []Setting, fcts ...float64) *Group {
		g := &Group{Name: name, Set: set}
		for i, f := range fcts {
			g.Runs = append(g.Runs, &Run{Name: name, Seed: int64(i + 1), Set: set,
				Summary: &Summary{FCT: Stats{Avg: f}, Flows: FlowCounts{Total: 2, Completed: 2}}})
		}
		return g
	}
	load := func(v string) []Setting { return []Setting{{"workload.0.load", v}} }
	cc := func(v string) []Setting { return []Setting{{"host.cc", v}} }
	for _, c := range []struct {
		name  string
		tree  *Tree
		files []string
	}{
		{"numeric", &Tree{Axes: []ManifestAxis{{"workload.0.load", []string{"0.3", "0.7"}}},
			Groups: []*Group{group("a", load("0.3"), 1e-6, 2e-6), group("a", load("0.7"), 3e-6, 5e-6), group("b", load("0.3"), 1e-6, 1e-6)}},
			[]string{"sweep_fct_avg_s.png", "sweep_fct_avg_s.svg"}},
		{"categorical", &Tree{Axes: []ManifestAxis{{"host.cc", []string{"dcqcn", "none"}}},
			Groups: []*Group{group("a", cc("dcqcn"), 1e-6, 2e-6), group("a", cc("none"), 3e-6, 5e-6)}},
			[]string{"sweep_fct_avg_s.png"}},
		{"seeds", &Tree{Groups: []*Group{group("a", nil, 1e-6, 2e-6, 3e-6), group("b", nil, 2e-6, 2e-6)}},
			[]string{"seeds_fct_avg_s.png", "seeds_fct_avg_s.svg"}},
		{"single runs", &Tree{Groups: []*Group{group("a", nil, 1e-6), group("b", nil, 2e-6)}}, nil},
	} {
		dir := t.TempDir()
		files, err := WriteSweepPlots(dir, c.tree, []string{"fct_avg_s"})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(c.files) == 0 && len(files) != 0 {
			t.Errorf("%s: wrote %v", c.name, files)
		}
		for _, f := range c.files {
			if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
				t.Errorf("%s: %s: %v", c.name, f, err)
			}
		}
	}
	if _, err := WriteSweepPlots(t.TempDir(), &Tree{}, []string{"nope"}); err == nil {
		t.Error("unknown metric plotted")
	}
}
