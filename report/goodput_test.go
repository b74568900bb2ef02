package report

import (
	"strings"
	"testing"
)

// The sample log at D=1000 in paper units: flow 2 1 MB over [1, 101] us, flow 1 1000 B over [0, 2] us,
// flow 4 4000 B over [2, 6] us, flow 3 5000 B from 5 us, unfinished with 2000 B acknowledged; the run
// ends at 200 us.
func TestGoodputDefinitions(t *testing.T) {
	s := Summarize(sampleLog(), Meta{Dilation: 1000, Duration: 200000 * us, Scheduled: 6})
	g := s.Goodput
	if v, _ := SummaryMetric(s, "flows_scheduled"); s.Flows != (FlowCounts{Total: 4, Completed: 3, Scheduled: 6}) || v != 6 {
		t.Errorf("flows %+v", s.Flows)
	}
	want := Goodput{
		PerFlowAllBps:         (1e6*8/100e-6 + 1000*8/2e-6 + 2000*8/195e-6 + 4000*8/4e-6) / 4,
		PerFlowCompletedBps:   (1e6*8/100e-6 + 1000*8/2e-6 + 4000*8/4e-6) / 3,
		AggregateBps:          1_007_000 * 8 / 200e-6, // flow 3 is unfinished: the window runs to the end
		AggregateCompletedBps: 1_005_000 * 8 / 101e-6,
		DeliveredBytes:        1_007_000,
		WindowS:               200e-6,
		Flows:                 4,
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"per flow, all", g.PerFlowAllBps, want.PerFlowAllBps},
		{"per flow, completed", g.PerFlowCompletedBps, want.PerFlowCompletedBps},
		{"aggregate", g.AggregateBps, want.AggregateBps},
		{"aggregate, completed", g.AggregateCompletedBps, want.AggregateCompletedBps},
		{"window", g.WindowS, want.WindowS},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
	if g.DeliveredBytes != want.DeliveredBytes || g.Flows != 4 {
		t.Errorf("delivered %d flows %d", g.DeliveredBytes, g.Flows)
	}
	// The older fields are the completed-only readings.
	if s.ThroughputBps != g.AggregateCompletedBps || s.AvgFlowGoodputBps != g.PerFlowCompletedBps {
		t.Errorf("throughput_bps %g / avg_flow_goodput_bps %g differ from their goodput readings", s.ThroughputBps, s.AvgFlowGoodputBps)
	}
	// Per class: incast is flow 1 (complete) and flow 3 (unfinished).
	inc := s.Classes["incast"].Goodput
	if !near(inc.PerFlowAllBps, (1000*8/2e-6+2000*8/195e-6)/2) || !near(inc.PerFlowCompletedBps, 1000*8/2e-6) ||
		!near(inc.AggregateBps, 3000*8/200e-6) || !near(inc.AggregateCompletedBps, 1000*8/2e-6) {
		t.Errorf("incast goodput %+v", inc)
	}
	// A class whose flows all completed: its window ends at its last finish, not the run's end.
	def := s.Classes["default"].Goodput
	if !near(def.AggregateBps, 4000*8/4e-6) || def.AggregateBps != def.AggregateCompletedBps {
		t.Errorf("default class goodput %+v", def)
	}
	r := &Run{Summary: s}
	for name, want := range map[string]float64{
		"goodput_per_flow_all_bps":              g.PerFlowAllBps,
		"goodput_per_flow_completed_bps":        g.PerFlowCompletedBps,
		"avg_flow_goodput_bps":                  g.PerFlowCompletedBps,
		"goodput_aggregate_bps":                 g.AggregateBps,
		"throughput_bps":                        g.AggregateCompletedBps,
		"class.incast.goodput_per_flow_all_bps": inc.PerFlowAllBps,
		"class.incast.throughput_bps":           inc.AggregateCompletedBps,
		"flows_completed_fraction":              0.75,
	} {
		if got, ok := r.Metric(name); !ok || !near(got, want) {
			t.Errorf("Metric(%s) = %g, %v; want %g", name, got, ok, want)
		}
	}
}

// Two schemes with the same completed flows; one leaves a large flow half-done. Completed-only goodput
// cannot tell them apart; the all-flows and delivered readings rank the finisher first.
func TestGoodputUnfinishedFlowsCount(t *testing.T) {
	done := []FlowRow{
		{Size: 1000, StartS: 0, FinishS: 2e-6, FCTS: 2e-6, Completed: true},
		{Size: 1e6, StartS: 0, FinishS: 1000e-6, FCTS: 1000e-6, Completed: true},
	}
	stuck := []FlowRow{{Size: 1000, StartS: 0, FinishS: 1e-6, FCTS: 1e-6, Completed: true},
		{Size: 1e6, StartS: 0, Delivered: 100_000}}
	a, b := GoodputOf(done, 1000e-6), GoodputOf(stuck, 1000e-6)
	if a.PerFlowCompletedBps >= b.PerFlowCompletedBps {
		t.Errorf("completed-only reading should flatter the stuck scheme: %g vs %g", a.PerFlowCompletedBps, b.PerFlowCompletedBps)
	}
	if a.PerFlowAllBps <= b.PerFlowAllBps || a.AggregateBps <= b.AggregateBps {
		t.Errorf("all-flows readings should rank the finisher first: %+v vs %+v", a, b)
	}
	if !near(b.PerFlowAllBps, (8e9+100_000*8/1000e-6)/2) || !near(b.AggregateBps, 101_000*8/1000e-6) {
		t.Errorf("stuck scheme %+v", b)
	}
	// Delivered never exceeds the size, and a flow that starts at the very end is left out.
	c := GoodputOf([]FlowRow{{Size: 10, StartS: 0, Delivered: 99}, {Size: 10, StartS: 1e-6}}, 1e-6)
	if c.DeliveredBytes != 10 || c.Flows != 1 {
		t.Errorf("clamped %+v", c)
	}
	if g := GoodputOf(nil, 1); g != (Goodput{}) {
		t.Errorf("no flows: %+v", g)
	}
}

func TestMetricDefinitions(t *testing.T) {
	for _, d := range MetricDefs {
		got, ok := LookupMetric(d.Name)
		if !ok || got.Definition == "" {
			t.Errorf("%s has no definition", d.Name)
		}
		if _, ok := SummaryMetric(&Summary{Flows: FlowCounts{Scheduled: 1}, WindowGoodputBps: 1}, d.Name); !ok { // both 0 when not measured
			t.Errorf("%s is defined but Metric does not know it", d.Name)
		}
	}
	if d, ok := LookupMetric("class.poisson.throughput_bps"); !ok || d.Name != "goodput_aggregate_completed_bps" || d.Alias != "throughput_bps" {
		t.Errorf("class alias %+v", d)
	}
	for _, bad := range []string{"nope", "class.x.drops_lossy", "class..fct_avg_s", "class.fct_avg_s"} {
		if _, ok := LookupMetric(bad); ok {
			t.Errorf("%s looked up", bad)
		}
	}
	if d, _ := LookupMetric("goodput_per_flow_all_bps"); !strings.Contains(d.Definition, "unfinished") {
		t.Errorf("definition %q", d.Definition)
	}
}
