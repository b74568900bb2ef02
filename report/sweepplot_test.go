package report

import (
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
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

// TestPlotFixes (issue 23): a sweep plot runs along the first axis with more than one value (a
// one-valued --set put every point at one x); y labels carry one unit; a deadlocked or unfinished run's
// CDF carries a warning; a legend too wide for the side goes below the plot; window goodput without a
// window is not a measurement.
func TestPlotFixes(t *testing.T) {
	tr := &Tree{Axes: []ManifestAxis{{"duration", []string{"3ms"}}, {"workload.0.load", []string{"0.3", "0.6"}}}}
	if a := sweepAxis(tr); a == nil || a.Path != "workload.0.load" {
		t.Errorf("sweep axis %v", a)
	}
	if a := sweepAxis(&Tree{Axes: []ManifestAxis{{"duration", []string{"3ms"}}}}); a != nil {
		t.Errorf("a one-valued axis plotted: %v", a)
	}
	for m, want := range map[string]string{"fct_avg_s": "fct_avg (us)", "goodput_aggregate_bps": "goodput_aggregate (Gb/s)", "drops_lossy": "drops_lossy"} {
		if got := axisTitle(m); got != want {
			t.Errorf("axisTitle(%s) = %q, want %q", m, got, want)
		}
	}
	dead := &Run{Name: "ring", Summary: &Summary{Flows: FlowCounts{Total: 8}, Deadlock: Deadlock{Detected: true, AtS: 2.05e-3}}}
	ok := &Run{Name: "fine", Summary: &Summary{Flows: FlowCounts{Total: 8, Completed: 8}}}
	one := func(r *Run) PlotGroup { return PlotGroup{Label: r.Name, Runs: []*Run{r}} }
	if w := cdfWarning([]PlotGroup{one(ok), one(dead)}); !strings.Contains(w, "ring: DEADLOCK at 2.05 ms, 0/8 flows done") {
		t.Errorf("warning %q", w)
	}
	// Seeds of one group: one entry, saying how many seeds deadlocked.
	if w := cdfWarning([]PlotGroup{{Label: "ring", Runs: []*Run{ok, dead, dead}}}); !strings.Contains(w, "ring: DEADLOCK in 2 of 3 seeds, 8/24 flows done") {
		t.Errorf("warning %q", w)
	}
	if w := cdfWarning([]PlotGroup{one(ok)}); w != "" {
		t.Errorf("warning %q for a complete run", w)
	}
	if v, measured := ok.Metric("window_goodput_bps"); measured {
		t.Errorf("window goodput %g measured without a window", v)
	}

	p := plot.New()
	l, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
	p.Add(l)
	for i := 0; i < 3; i++ {
		p.Legend.Add(fmt.Sprintf("spec-name duration=3ms,workload.0.load=0.%d,host.cc=dcqcn seed %d", i, i), l)
	}
	path := filepath.Join(t.TempDir(), "q.png")
	if err := savePlot(p, nil, path); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if h := vg.Length(cfg.Height) * vg.Inch / 96; h <= figureH*1.05 {
		t.Errorf("figure %dx%d px: the wide legend was not moved below the plot", cfg.Width, cfg.Height)
	}
}
