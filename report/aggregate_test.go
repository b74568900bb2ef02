package report

import (
	"math"
	"strings"
	"testing"
)

// Student t quantiles from standard tables (two-sided 95%: t(0.975, df)).
func TestTQuantileKnownValues(t *testing.T) {
	for _, c := range []struct {
		df   int
		want float64
	}{{1, 12.7062}, {2, 4.3027}, {4, 2.7764}, {9, 2.2622}, {29, 2.0452}, {1000, 1.9623}} {
		if got := TQuantile(0.975, c.df); math.Abs(got-c.want) > 5e-4 {
			t.Errorf("t(0.975, %d) = %.4f, want %.4f", c.df, got, c.want)
		}
	}
	if got := TQuantile(0.95, 4); math.Abs(got-2.1318) > 5e-4 {
		t.Errorf("t(0.95, 4) = %.4f, want 2.1318", got)
	}
}

func TestMeanCI(t *testing.T) {
	c := MeanCI([]float64{1, 2, 3, 4, 5}, 0.95)
	// sd = sqrt(2.5); half = t(0.975, 4) * sd / sqrt(5) = 2.7764 * 0.70711.
	if c.N != 5 || c.Mean != 3 || math.Abs(c.SD-math.Sqrt(2.5)) > 1e-12 || math.Abs(c.Half-1.9632) > 5e-4 {
		t.Errorf("CI of 1..5: %+v", c)
	}
	if c.Lo != c.Mean-c.Half || c.Hi != c.Mean+c.Half {
		t.Errorf("bounds %+v", c)
	}
	// Identical draws: a zero-width interval, not NaN.
	if c := MeanCI([]float64{7, 7, 7}, 0.95); c.Mean != 7 || c.Half != 0 {
		t.Errorf("constant %+v", c)
	}
	// One draw: a mean but no interval.
	if c := MeanCI([]float64{4}, 0.95); c.Mean != 4 || !math.IsNaN(c.Half) {
		t.Errorf("one value %+v", c)
	}
	if c := MeanCI(nil, 0.95); c.N != 0 || !math.IsNaN(c.Mean) {
		t.Errorf("empty %+v", c)
	}
}

func seedRun(name string, seed int64, fct float64, set ...Setting) *Run {
	return &Run{Name: name, Seed: seed, Set: set, Summary: &Summary{FCT: Stats{Avg: fct}}}
}

// Cross-run forms pair runs by seed (and sweep point): the mean of per-seed reductions, not the
// reduction of the means.
func TestExpectationsPairBySeed(t *testing.T) {
	pub := map[string]Expected{"reduction:fct_avg_s:irn": {Value: 50, Unit: "%", Source: "paper"}, "fct_avg_s": {Value: 1, Source: "p"}}
	a1, a2, a3 := seedRun("portfc", 1, 10), seedRun("portfc", 2, 30), seedRun("portfc", 3, 20)
	for _, r := range []*Run{a1, a2, a3} {
		r.Expect = pub
	}
	// irn's seeds listed out of order: pairing is by seed, not position.
	b3, b1, b2 := seedRun("irn", 3, 40), seedRun("irn", 1, 20), seedRun("irn", 2, 40)
	tree := &Tree{Groups: []*Group{{Name: "portfc", Runs: []*Run{a1, a2, a3}}, {Name: "irn", Runs: []*Run{b3, b1, b2}}}}
	es := AggregateExpectations(tree)
	if len(es) != 2 {
		t.Fatalf("%d expectations", len(es))
	}
	red := es[1]
	if red.Metric != "reduction:fct_avg_s:irn" {
		red = es[0]
	}
	// Per seed: 1-10/20 = 50%, 1-30/40 = 25%, 1-20/40 = 50%.
	want := MeanCI([]float64{50, 25, 50}, 0.95)
	if red.N != 3 || math.Abs(red.Mean-want.Mean) > 1e-9 || math.Abs(red.Half-want.Half) > 1e-9 {
		t.Errorf("paired reduction %+v, want mean %g ± %g", red, want.Mean, want.Half)
	}
	if red.Verdict != "paper within CI" {
		t.Errorf("verdict %q", red.Verdict)
	}
	// Reduction of the means would be 1-20/33.3 = 40%: not what is reported.
	if math.Abs(red.Mean-40) < 1 {
		t.Error("reduction of means reported")
	}
	// A missing partner seed is said, not silently skipped.
	tree.Groups[1].Runs = []*Run{b1, b2}
	es = AggregateExpectations(tree)
	for _, e := range es {
		if e.Metric == "reduction:fct_avg_s:irn" && (e.N != 2 || e.Error == "") {
			t.Errorf("missing seed 3: %+v", e)
		}
	}
}

func TestPairedRunBySweepPoint(t *testing.T) {
	lo, hi := Setting{"workload.0.load", "0.3"}, Setting{"workload.0.load", "0.7"}
	r := seedRun("portfc", 1, 10, hi)
	all := []*Run{r, seedRun("irn", 1, 20, lo), seedRun("irn", 1, 40, hi), seedRun("pfc", 1, 5)}
	if o, err := pairedRun(all, r, "irn"); err != nil || o.Summary.FCT.Avg != 40 {
		t.Errorf("same point: %v %v", o, err)
	}
	// An unswept baseline pairs with every point.
	if o, err := pairedRun(all, r, "pfc"); err != nil || o.Summary.FCT.Avg != 5 {
		t.Errorf("unswept partner: %v %v", o, err)
	}
	other := seedRun("portfc", 1, 10, Setting{"workload.0.load", "0.5"})
	if _, err := pairedRun(all, other, "irn"); err == nil {
		t.Error("ambiguous partner accepted")
	}
	if _, err := pairedRun(all, seedRun("portfc", 9, 1), "irn"); err == nil {
		t.Error("missing seed accepted")
	}
}

func TestCheckMetricName(t *testing.T) {
	for _, ok := range []string{"fct_avg_s", "throughput_bps", "class.incast.goodput_per_flow_all_bps",
		"reduction:fct_p99_s:irn", "ratio:goodput_per_flow_completed_bps:pfcstar", "ratio:class.web.fct_avg_s:irn"} {
		if err := CheckMetricName(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"avg_fct_reduction_vs_irn", "reduction:fct_avg_s", "speedup:fct_avg_s:irn",
		"ratio:nope:irn", "class.web.ecn_marks", "reduction:fct_avg_s:"} {
		if err := CheckMetricName(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if err := CheckExpect(map[string]Expected{"fct_avg_s": {}, "bogus": {}}); err == nil || err.Error()[:13] != "expect.bogus:" {
		t.Errorf("CheckExpect: %v", err)
	}
}

func TestPairedCIAndSummariesCI(t *testing.T) {
	mk := func(fcts ...float64) []*Summary {
		var ss []*Summary
		for _, f := range fcts {
			ss = append(ss, &Summary{FCT: Stats{Avg: f}})
		}
		return ss
	}
	a, b := mk(10, 30, 20), mk(20, 40, 40)
	want := MeanCI([]float64{50, 25, 50}, 0.95)
	if c, err := PairedCI(a, b, "fct_avg_s", "reduction"); err != nil || c.Mean != want.Mean || c.Half != want.Half {
		t.Errorf("reduction %+v %v", c, err)
	}
	if c, err := PairedCI(a, b, "fct_avg_s", "ratio"); err != nil || math.Abs(c.Mean-(0.5+0.75+0.5)/3) > 1e-12 {
		t.Errorf("ratio %+v %v", c, err)
	}
	if _, err := PairedCI(a, b[:2], "fct_avg_s", "ratio"); err == nil {
		t.Error("unpaired accepted")
	}
	if _, err := PairedCI(a, mk(1, 0, 1), "fct_avg_s", "ratio"); err == nil {
		t.Error("zero baseline accepted")
	}
	if c, err := SummariesCI(a, "fct_avg_s"); err != nil || c.Mean != 20 || c.N != 3 {
		t.Errorf("SummariesCI %+v %v", c, err)
	}
	if _, err := SummariesCI(a, "nope"); err == nil {
		t.Error("unknown metric accepted")
	}
}

// A claim of 0 retransmissions is a count: one seed with 2.2e5 of them breaks it, although the
// t-interval over the two seeds (0 and 2.2e5) reaches below 0 and would call 0 "within CI".
func TestZeroClaimIsACount(t *testing.T) {
	pub := map[string]Expected{"retransmissions": {Value: 0, Source: "G1"}, "deadlocks": {Value: 0, Source: "III-D"}}
	a, b := seedRun("portfc", 1, 1), seedRun("portfc", 2, 1)
	b.Summary.Retransmissions = 220000
	a.Expect, b.Expect = pub, pub
	es := AggregateExpectations(&Tree{Groups: []*Group{{Name: "portfc", Runs: []*Run{a, b}}}})
	got := map[string]AggExpectation{}
	for _, e := range es {
		got[e.Metric] = e
	}
	if r := got["retransmissions"]; !r.ZeroClaimBroken() || r.Verdict != "BROKEN: non-zero in 1 of 2 seeds (2.2e+05 in all)" {
		t.Errorf("retransmissions verdict %q", r.Verdict)
	}
	if d := got["deadlocks"]; d.ZeroClaimBroken() || d.Verdict != "0 in every seed (2)" {
		t.Errorf("deadlocks verdict %q", d.Verdict)
	}
	if IsZeroClaim("fct_avg_s", 0) || !IsZeroClaim("drops_lossless", 0) || IsZeroClaim("drops_lossless", 1) {
		t.Error("IsZeroClaim")
	}
}

// Two trees of the same specs kept apart (lab report --apart): each tree's cross-run forms pair within
// the tree, and the groups are labelled by it.
func TestApartTreesPairWithinTheirTree(t *testing.T) {
	pub := map[string]Expected{"reduction:fct_avg_s:irn": {Value: 50, Source: "paper"}}
	var groups []*Group
	for _, c := range []struct {
		tree     string
		portfc   float64
		irn      float64
		wantMean float64
	}{{"base", 10, 20, 50}, {"new", 15, 20, 25}} {
		p, i := seedRun("portfc", 1, c.portfc), seedRun("irn", 1, c.irn)
		p.Tree, i.Tree, p.Expect = c.tree, c.tree, pub
		groups = append(groups, &Group{Name: "portfc", Tree: c.tree, Runs: []*Run{p}}, &Group{Name: "irn", Tree: c.tree, Runs: []*Run{i}})
	}
	es := AggregateExpectations(&Tree{Groups: groups})
	if len(es) != 2 || es[0].Group != "portfc [base]" || es[0].Mean != 50 || es[1].Group != "portfc [new]" || es[1].Mean != 25 {
		t.Fatalf("%+v", es)
	}
}

// A scheme that deadlocked has FCTs of the flows that finished before the deadlock only: a row
// judging its FCT, or pairing with it, says so in its verdict; a count row (deadlocks) and a run that
// did not deadlock do not.
func TestExpectationsFlagDeadlockedFCT(t *testing.T) {
	pub := map[string]Expected{"reduction:fct_avg_s:pfc": {Value: 50, Source: "p"}, "fct_avg_s": {Value: 1, Source: "p"}}
	a1, a2 := seedRun("portfc", 1, 10), seedRun("portfc", 2, 12)
	p1, p2 := seedRun("pfc", 1, 5), seedRun("pfc", 2, 6)
	a1.Expect, a2.Expect, p1.Expect, p2.Expect = pub, pub, map[string]Expected{"fct_avg_s": {Value: 1}, "deadlocks": {Value: 0}}, map[string]Expected{"fct_avg_s": {Value: 1}, "deadlocks": {Value: 0}}
	for _, r := range []*Run{a1, a2, p1, p2} {
		r.Summary.Flows = FlowCounts{Total: 100, Completed: 100}
	}
	p1.Summary.Deadlock.Detected, p1.Summary.Flows.Completed = true, 40
	p2.Summary.Deadlock.Detected, p2.Summary.Flows.Completed = true, 44
	es := AggregateExpectations(&Tree{Groups: []*Group{{Name: "portfc", Runs: []*Run{a1, a2}}, {Name: "pfc", Runs: []*Run{p1, p2}}}})
	got := map[string]string{}
	for _, e := range es {
		got[e.Group+" "+e.Metric] = e.Verdict
	}
	want := "pfc DEADLOCKED in 2 of 2 seeds (42.0% of flows finished; only they count)"
	for _, k := range []string{"portfc reduction:fct_avg_s:pfc", "pfc fct_avg_s"} {
		if !strings.Contains(got[k], want) {
			t.Errorf("%s: verdict %q does not flag the deadlock", k, got[k])
		}
	}
	for _, k := range []string{"portfc fct_avg_s", "pfc deadlocks"} {
		if strings.Contains(got[k], "DEADLOCK") {
			t.Errorf("%s: verdict %q flags a deadlock it has nothing to do with", k, got[k])
		}
	}
}

// The per-group table names the groups that deadlocked, right under the seed counts; a tree where none
// did has no such row.
func TestAggregateTableFlagsDeadlock(t *testing.T) {
	a, p := seedRun("portfc", 1, 10), seedRun("pfc", 1, 5)
	p.Summary.Deadlock.Detected = true
	tb := AggregateTable(&Tree{Groups: []*Group{{Name: "portfc", Runs: []*Run{a}}, {Name: "pfc", Runs: []*Run{p}}}})
	if len(tb.Rows) < 2 || tb.Rows[1][0] != "DEADLOCKED seeds (FCTs: finished flows only)" || tb.Rows[1][1] != "-" || tb.Rows[1][2] != "DEADLOCK 1/1" {
		t.Fatalf("rows %v", tb.Rows[:min(2, len(tb.Rows))])
	}
	p.Summary.Deadlock.Detected = false
	tb = AggregateTable(&Tree{Groups: []*Group{{Name: "portfc", Runs: []*Run{a}}, {Name: "pfc", Runs: []*Run{p}}}})
	for _, r := range tb.Rows {
		if strings.HasPrefix(r[0], "DEADLOCKED") {
			t.Errorf("a deadlock row without a deadlock: %v", r)
		}
	}
}
