package report

import (
	"math"
	"os"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

// regressTree is a tree of one group "s" with one run per seed, FCT avg and lossless drops as given.
func regressTree(seeds []int64, fct []float64, lossless []int) *Tree {
	g := &Group{Name: "s"}
	for i, s := range seeds {
		sum := &Summary{FCT: Stats{Avg: fct[i], P99: 2 * fct[i]}, Drops: Drops{Lossless: lossless[i]}, Pauses: Pauses{Sent: 100},
			Fidelity: Fidelity{Reason: notMonitored}}
		g.Runs = append(g.Runs, &Run{Name: "s", Seed: s, Summary: sum})
		g.Seeds = append(g.Seeds, s)
	}
	return &Tree{Groups: []*Group{g}}
}

func change(t *testing.T, rg *Regression, metric string) MetricChange {
	t.Helper()
	for _, c := range rg.Changes {
		if c.Metric == metric {
			return c
		}
	}
	t.Fatalf("no %s in %+v", metric, rg.Changes)
	return MetricChange{}
}

func TestCompareTreesIdenticalIsEquivalent(t *testing.T) {
	a := regressTree([]int64{1, 2, 3}, []float64{1, 1.2, 0.9}, []int{0, 0, 0})
	b := regressTree([]int64{1, 2, 3}, []float64{1, 1.2, 0.9}, []int{0, 0, 0})
	rg, err := CompareTrees(a, b, RegressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rg.Failed || rg.Counts[VerdictEquivalent] != len(rg.Changes) {
		t.Fatalf("identical trees: %+v", rg.Counts)
	}
	if c := change(t, rg, "fct_avg_s"); !c.Paired || *c.RatioLo != 1 || *c.RatioHi != 1 {
		t.Fatalf("fct_avg_s %+v", c)
	}
}

func TestCompareTreesPairedShiftIsChanged(t *testing.T) {
	a := regressTree([]int64{1, 2, 3}, []float64{1, 1.2, 0.9}, []int{0, 0, 0})
	b := regressTree([]int64{1, 2, 3}, []float64{1.2, 1.4, 1.1}, []int{0, 0, 0})
	rg, _ := CompareTrees(a, b, RegressOptions{})
	c := change(t, rg, "fct_avg_s")
	if c.Verdict != VerdictChanged || !rg.Failed {
		t.Fatalf("+20%% in every seed: %+v", c)
	}
	if !strings.Contains(RegressSummary(rg), "REGRESSION") {
		t.Fatal(RegressSummary(rg))
	}
	// Declared expected upward: not a failure; declared downward: still one.
	rg, _ = CompareTrees(a, b, RegressOptions{Expected: map[string]int{"fct_avg_s": 1, "fct_p99_s": 1}})
	if c := change(t, rg, "fct_avg_s"); c.Verdict != VerdictExpected || rg.Failed {
		t.Fatalf("expected up: %+v failed=%v", c, rg.Failed)
	}
	rg, _ = CompareTrees(a, b, RegressOptions{Expected: map[string]int{"fct_avg_s": -1}})
	if c := change(t, rg, "fct_avg_s"); c.Verdict != VerdictChanged {
		t.Fatalf("expected down: %+v", c)
	}
	// A margin wider than the change: equivalent.
	rg, _ = CompareTrees(a, b, RegressOptions{Margins: map[string]float64{"fct_avg_s": 0.5}})
	if c := change(t, rg, "fct_avg_s"); c.Verdict != VerdictEquivalent {
		t.Fatalf("50%% margin: %+v", c)
	}
}

func TestCompareTreesZeroCountBreaks(t *testing.T) {
	a := regressTree([]int64{1, 2, 3}, []float64{1, 1, 1}, []int{0, 0, 0})
	b := regressTree([]int64{1, 2, 3}, []float64{1, 1, 1}, []int{0, 1, 0})
	rg, _ := CompareTrees(a, b, RegressOptions{})
	if c := change(t, rg, "drops_lossless"); c.Verdict != VerdictZeroBroken || !rg.Failed {
		t.Fatalf("one lossless drop in one seed: %+v", c)
	}
}

func TestCompareTreesDisjointSeedsUnpaired(t *testing.T) {
	a := regressTree([]int64{1, 2, 3, 4, 5}, []float64{1, 1.3, 0.8, 1.1, 0.9}, []int{0, 0, 0, 0, 0})
	b := regressTree([]int64{6, 7, 8, 9, 10}, []float64{1.2, 0.85, 1.0, 0.95, 1.1}, []int{0, 0, 0, 0, 0})
	rg, _ := CompareTrees(a, b, RegressOptions{})
	c := change(t, rg, "fct_avg_s")
	if c.Paired || c.Verdict != VerdictUndecided || c.SeedsToDecide == 0 || rg.Failed {
		t.Fatalf("noise over disjoint seeds: %+v", c)
	}
}

func TestCompareTreesNoCommonSpec(t *testing.T) {
	a := regressTree([]int64{1}, []float64{1}, []int{0})
	b := regressTree([]int64{1}, []float64{1}, []int{0})
	b.Groups[0].Name = "other"
	if _, err := CompareTrees(a, b, RegressOptions{}); err == nil || !strings.Contains(err.Error(), "no spec is in both") {
		t.Fatalf("err %v", err)
	}
}

// mustCompare compares and wants the given exit status, with every word of want in the summary.
func mustCompare(t *testing.T, a, b *Tree, opts RegressOptions, exit int, want ...string) *Regression {
	t.Helper()
	rg, err := CompareTrees(a, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	sum := RegressSummary(rg)
	if got := RegressExit(rg); got != exit {
		t.Fatalf("exit %d, want %d:\n%s", got, exit, sum)
	}
	for _, w := range want {
		if !strings.Contains(sum, w) {
			t.Fatalf("summary lacks %q:\n%s", w, sum)
		}
	}
	return rg
}

// No pass on missing data (issue 35): each way NEW can lack what BASE has makes the comparison exit 1
// naming the run, where it used to pass with "no change beyond the margins".
func TestCompareTreesMissingRunsCannotPass(t *testing.T) {
	seeds, fct, zero := []int64{1, 2, 3}, []float64{1, 1.2, 0.9}, []int{0, 0, 0}
	// Identical trees pass (the control).
	mustCompare(t, regressTree(seeds, fct, zero), regressTree(seeds, fct, zero), RegressOptions{}, RegressPass, "no change beyond")
	// Two of three NEW runs gone (deleted run directories whose manifest no longer lists them).
	b := regressTree(seeds, fct, zero)
	b.Groups[0].Runs, b.Groups[0].Seeds = b.Groups[0].Runs[:1], b.Groups[0].Seeds[:1]
	mustCompare(t, regressTree(seeds, fct, zero), b, RegressOptions{}, RegressCannot, "NEW lacks s seed 2", "NEW lacks s seed 3", "CANNOT DECIDE")
	// A run the manifest lists that could not be read (a truncated summary.json): LoadTrees skips it.
	b = regressTree(seeds[:2], fct[:2], zero[:2])
	b.Skipped = []string{"new/s-seed3: unreadable (new/s-seed3/summary.json: unexpected end of JSON input)"}
	mustCompare(t, regressTree(seeds, fct, zero), b, RegressOptions{}, RegressCannot, "NEW run new/s-seed3: unreadable", "NEW lacks s seed 3")
	// An unreadable BASE run is no better.
	a := regressTree(seeds, fct, zero)
	a.Skipped = []string{"base/s-seed4: failed (refused)"}
	mustCompare(t, a, regressTree(seeds, fct, zero), RegressOptions{}, RegressCannot, "BASE run base/s-seed4: failed")
	// A whole spec missing from NEW.
	a = regressTree(seeds, fct, zero)
	extra := regressTree(seeds, fct, zero).Groups[0]
	extra.Name = "t"
	a.Groups = append(a.Groups, extra)
	mustCompare(t, a, regressTree(seeds, fct, zero), RegressOptions{}, RegressCannot, "BASE t (3 runs) has no counterpart in NEW")
	// Disjoint seeds are an unpaired comparison by design, but need as many runs.
	b = regressTree([]int64{7, 8}, fct[:2], zero[:2])
	mustCompare(t, regressTree(seeds, fct, zero), b, RegressOptions{}, RegressCannot, "NEW has 2 runs of s, BASE 3")
	// A change is decided evidence even when something else is missing: it fails (exit 3).
	b = regressTree(seeds[:2], []float64{2, 2.2}, zero[:2])
	mustCompare(t, regressTree(seeds, fct, zero), b, RegressOptions{}, RegressChanged, "REGRESSION", "MISSING: NEW lacks s seed 3")
}

// A value that is not finite gets no verdict: 1e308 in every seed makes the mean +Inf; in one seed, the
// relative difference overflows.
func TestCompareTreesNotFinite(t *testing.T) {
	seeds, zero := []int64{1, 2, 3}, []int{0, 0, 0}
	a := regressTree(seeds, []float64{1e308, 1e308, 1e308}, zero)
	b := regressTree(seeds, []float64{1e308, 1e308, 1e308}, zero)
	rg := mustCompare(t, a, b, RegressOptions{}, RegressCannot, "fct_avg_s: the mean over seeds is not finite", "s seed 1")
	if c := change(t, rg, "fct_avg_s"); c.Verdict != VerdictNotFinite {
		t.Fatalf("%+v", c)
	}
	a = regressTree(seeds, []float64{1e-3, 1e-3, 1e-3}, zero)
	b = regressTree(seeds, []float64{1e-3, 1e308, 1e-3}, zero)
	rg, _ = CompareTrees(a, b, RegressOptions{})
	if c := change(t, rg, "fct_avg_s"); c.Verdict != VerdictNotFinite || !rg.Undecidable() && !rg.Failed {
		t.Fatalf("%+v", c)
	}
	if len(rg.Missing) == 0 {
		t.Fatalf("no missing: %s", RegressSummary(rg))
	}
	// An Inf read back (a summary built in Go, or a reader that accepts it) names the run.
	b = regressTree(seeds, []float64{1e-3, 1e-3, 1e-3}, zero)
	b.Groups[0].Runs[2].Summary.FCT.Avg = math.Inf(1)
	b.Groups[0].Runs[2].Dir = "new/s-seed3"
	mustCompare(t, a, b, RegressOptions{}, RegressCannot, "NEW new/s-seed3 is +Inf")
}

// Most metrics undecided: the verdict is "not decided" (exit 1), not "no change".
func TestCompareTreesMostlyUndecided(t *testing.T) {
	g := func(seeds []int64, scale float64) *Tree {
		tr := regressTree(seeds, []float64{1, 1.5, 0.6, 1.3, 0.7}, []int{0, 0, 0, 0, 0})
		for i, r := range tr.Groups[0].Runs {
			s := r.Summary
			x := scale * []float64{1, 1.5, 0.6, 1.3, 0.7}[(i+int(seeds[0]))%5]
			s.FCT = Stats{Avg: x, P50: x, P95: x, P99: x, P999: x}
			s.Slowdown = Stats{Avg: x, P50: x, P99: x}
			s.Pauses.Sent = int(100 * x)
		}
		return tr
	}
	rg := mustCompare(t, g([]int64{1, 2, 3, 4, 5}, 1), g([]int64{6, 7, 8, 9, 10}, 1.02), RegressOptions{}, RegressCannot, "verdict: not decided")
	if !rg.NotDecided {
		t.Fatal(RegressSummary(rg))
	}
}

// Trees that differ by a setting pair by spec name when each side has one point per spec, or by
// --pair, and say what differs.
func TestCompareTreesAcrossSetting(t *testing.T) {
	seeds, fct, zero := []int64{1, 2, 3}, []float64{1, 1.2, 0.9}, []int{0, 0, 0}
	a := regressTree(seeds, fct, zero)
	b := regressTree(seeds, []float64{2, 2.4, 1.8}, zero)
	b.Groups[0].Set = []Setting{{Path: "switch.xoff", Value: "12bdp"}}
	rg := mustCompare(t, a, b, RegressOptions{}, RegressChanged, "fct_avg_s: CHANGED")
	if len(rg.Pairs) != 1 || !strings.Contains(rg.Pairs[0], "s ~ s switch.xoff=12bdp: switch.xoff (the spec's) -> 12bdp") {
		t.Fatalf("pairs %q", rg.Pairs)
	}
	// Two points per spec on a side: no guess, BASE is missing its counterpart; --pair says which.
	b2 := regressTree(seeds, fct, zero)
	b2.Groups[0].Set = []Setting{{Path: "switch.xoff", Value: "3bdp"}}
	b.Groups = append(b.Groups, b2.Groups[0])
	if _, err := CompareTrees(a, b, RegressOptions{}); err == nil || !strings.Contains(err.Error(), "BASE s (3 runs) has no counterpart") {
		t.Fatalf("two points of s in NEW paired by guess: %v", err)
	}
	p, err := SplitPair("s=s switch.xoff=3bdp", a, b)
	if err != nil || p != [2]string{"s", "s switch.xoff=3bdp"} {
		t.Fatalf("split %v %v", p, err)
	}
	rg = mustCompare(t, a, b, RegressOptions{Pairs: [][2]string{p}}, RegressPass)
	if len(rg.OnlyIn) != 1 || rg.OnlyIn[0] != "NEW only: s switch.xoff=12bdp" {
		t.Fatalf("only in %q", rg.OnlyIn)
	}
	if _, err := SplitPair("s=nosuch", a, b); err == nil || !strings.Contains(err.Error(), `NEW has no group "nosuch"`) {
		t.Fatalf("bad pair: %v", err)
	}
}

func TestParseRegressFlags(t *testing.T) {
	m, err := ParseMarginFlags([]string{"fct_p99_s=20%", "class.incast.fct_avg_s=0.1"})
	if err != nil || m["fct_p99_s"] != 0.2 || m["class.incast.fct_avg_s"] != 0.1 {
		t.Fatalf("%v %v", m, err)
	}
	for _, bad := range []string{"fct_p99_s", "nope=5%", "fct_p99_s=-1", "fct_p99_s=x"} {
		if _, err := ParseMarginFlags([]string{bad}); err == nil {
			t.Errorf("--margin %s accepted", bad)
		}
	}
	if _, err := ParseExpectFlags([]string{"fct_avg_s=sideways"}); err == nil {
		t.Error("--expect sideways accepted")
	}
	if o := (RegressOptions{Margins: m}); o.MarginOf("class.x.fct_p99_s") != 0.2 || o.MarginOf("fct_avg_s") != 0.05 {
		t.Errorf("margins %v %v", o.MarginOf("class.x.fct_p99_s"), o.MarginOf("fct_avg_s"))
	}
}

// The verdicts use intervals that are 95% together (Bonferroni over the metrics with an interval);
// PerMetric gives each its own 95%, narrower.
func TestCompareTreesFamilywise(t *testing.T) {
	a := regressTree([]int64{1, 2, 3, 4, 5}, []float64{1, 1.3, 0.8, 1.1, 0.9}, []int{0, 0, 0, 0, 0})
	b := regressTree([]int64{1, 2, 3, 4, 5}, []float64{1.2, 1.4, 1.1, 1.2, 1.0}, []int{0, 0, 0, 0, 0})
	fw, _ := CompareTrees(a, b, RegressOptions{})
	pm, _ := CompareTrees(a, b, RegressOptions{PerMetric: true})
	if fw.Metrics < 2 || fw.Each != 1-0.05/float64(fw.Metrics) || pm.Each != 0.95 {
		t.Fatalf("levels: family-wise m=%d each %v; per metric %v", fw.Metrics, fw.Each, pm.Each)
	}
	f, p := change(t, fw, "fct_avg_s"), change(t, pm, "fct_avg_s")
	if !(*f.RatioLo < *p.RatioLo && *f.RatioHi > *p.RatioHi) {
		t.Fatalf("family-wise CI [%v, %v] not wider than per-metric [%v, %v]", *f.RatioLo, *f.RatioHi, *p.RatioLo, *p.RatioHi)
	}
}

// Same seeds on both sides: a flow whose outcome differs from the same seed's BASE run is a change of
// behaviour (the virtual backend repeats a seed exactly), whatever the means do.
func TestCompareTreesIdentity(t *testing.T) {
	rows := func(fct ...float64) []FlowRow {
		var out []FlowRow
		for i, f := range fct {
			out = append(out, FlowRow{ID: uint32(i + 1), FCTS: f, Completed: true})
		}
		return out
	}
	a := regressTree([]int64{1, 2}, []float64{1, 1}, []int{0, 0})
	b := regressTree([]int64{1, 2}, []float64{1, 1}, []int{0, 0})
	for i := range a.Groups[0].Runs {
		a.Groups[0].Runs[i].Rows = rows(1, 2, 3)
		b.Groups[0].Runs[i].Rows = rows(1, 2, 3)
	}
	rg, _ := CompareTrees(a, b, RegressOptions{})
	if c := change(t, rg, IdentityMetric); c.Verdict != VerdictEquivalent || rg.Failed {
		t.Fatalf("identical flows: %+v", c)
	}
	b.Groups[0].Runs[1].Rows = rows(1, 2.001, 3)
	rg, _ = CompareTrees(a, b, RegressOptions{})
	if c := change(t, rg, IdentityMetric); c.Verdict != VerdictChanged || c.NewCount != 1 || !rg.Failed {
		t.Fatalf("one flow differs: %+v", c)
	}
	rg, _ = CompareTrees(a, b, RegressOptions{Expected: map[string]int{IdentityMetric: 1}})
	if c := change(t, rg, IdentityMetric); c.Verdict != VerdictExpected || rg.Failed {
		t.Fatalf("declared intended: %+v", c)
	}
	// Disjoint seeds: no identity check.
	b.Groups[0].Runs[0].Seed, b.Groups[0].Runs[1].Seed = 7, 8
	rg, _ = CompareTrees(a, b, RegressOptions{})
	for _, c := range rg.Changes {
		if c.Metric == IdentityMetric {
			t.Fatalf("identity over disjoint seeds: %+v", c)
		}
	}
}

// The compare plot puts ratios on a log axis (a 3.5x change stands as far from 1 as 1/3.5) and draws
// flows_differing beside them.
func TestRegressPlotsLogAndIdentity(t *testing.T) {
	rows := func(fct ...float64) []FlowRow {
		var out []FlowRow
		for i, f := range fct {
			out = append(out, FlowRow{ID: uint32(i + 1), FCTS: f, Completed: true})
		}
		return out
	}
	a := regressTree([]int64{1, 2, 3}, []float64{1, 1.2, 0.9}, []int{0, 0, 0})
	b := regressTree([]int64{1, 2, 3}, []float64{3.5, 4.2, 3.15}, []int{0, 0, 0})
	for i := range a.Groups[0].Runs {
		a.Groups[0].Runs[i].Rows = rows(1, 2, 3)
		b.Groups[0].Runs[i].Rows = rows(3.5, 2, 3)
	}
	rg, err := CompareTrees(a, b, RegressOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var fails []MetricChange
	for _, c := range rg.Changes {
		if c.Ratio != nil {
			fails = append(fails, c)
		}
	}
	p, err := regressPlot("s", fails, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Y.Scale.(plot.LogScale); !ok || p.Y.Max < 3.5 || p.Y.Min > 0.8 {
		t.Fatalf("y axis %T [%v, %v]", p.Y.Scale, p.Y.Min, p.Y.Max)
	}
	dir := t.TempDir()
	files, err := WriteRegressPlots(dir, rg)
	if err != nil || len(files) != 2 {
		t.Fatalf("%v %v", files, err)
	}
	svg, err := os.ReadFile(files[1])
	if err != nil || !strings.Contains(string(svg), "flows differing: changed") || !strings.Contains(string(svg), "33%, 3 seeds") {
		t.Fatalf("svg lacks the flows_differing panel (%v): %s", err, svg)
	}
}

// A metric one tree measured and the other did not (a window goodput that fell to 0 reads as not
// measured) is no pass: it is named as missing and the comparison cannot decide.
func TestCompareTreesMetricOnOneSide(t *testing.T) {
	seeds, fct, zero := []int64{1, 2, 3}, []float64{1e-3, 1e-3, 1e-3}, []int{0, 0, 0}
	a, b := regressTree(seeds, fct, zero), regressTree(seeds, fct, zero)
	for _, r := range a.Groups[0].Runs {
		r.Summary.WindowGoodputBps = 1e9
	}
	rg := mustCompare(t, a, b, RegressOptions{}, RegressCannot, "window_goodput_bps: measured in BASE only")
	if c := change(t, rg, "window_goodput_bps"); c.Verdict != VerdictOneSide {
		t.Fatalf("%+v", c)
	}
}
