package report

import (
	"strings"
	"testing"
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
