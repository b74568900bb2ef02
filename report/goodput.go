package report

import (
	"math"
	"strings"
)

// Goodput is every common reading of "throughput", side by side, because papers rarely say which one
// they mean and the readings disagree exactly when a scheme leaves flows unfinished (a go-back-N run
// that completes 571 of 825 flows looks fast if only its completed flows count). Bytes are application
// bytes (headers, retransmissions and control frames never count); rates are bit/s in paper units.
// MetricDefs gives each field's definition as the report prints it.
type Goodput struct {
	// PerFlowAllBps: mean over every flow that started of delivered*8 / (until - start), where until
	// is the flow's finish, or the run's end for an unfinished flow, and delivered is the bytes
	// cumulatively acknowledged by then.
	PerFlowAllBps float64 `json:"per_flow_all_bps"`
	// PerFlowCompletedBps: mean over completed flows of size*8 / FCT (HPCC's and NetBench's per-flow
	// throughput; summary.json's older avg_flow_goodput_bps).
	PerFlowCompletedBps float64 `json:"per_flow_completed_bps"`
	// AggregateBps: delivered bytes of every flow * 8 / WindowS.
	AggregateBps float64 `json:"aggregate_bps"`
	// AggregateCompletedBps: bytes of completed flows * 8 / (last finish - first start among them)
	// (summary.json's older throughput_bps).
	AggregateCompletedBps float64 `json:"aggregate_completed_bps"`
	// DeliveredBytes: application bytes delivered by every flow (completed ones whole).
	DeliveredBytes int64 `json:"delivered_bytes"`
	// WindowS is AggregateBps's time: from the first flow's start to the last finish when every flow
	// completed, or to the run's end when any did not.
	WindowS float64 `json:"window_s"`
	// Flows is how many flows PerFlowAllBps averages: those that started and had time to run.
	Flows int `json:"flows"`
}

// delivered is what a row delivered: its size when completed (also for logs that predate
// records.Flow.Delivered), else the bytes acknowledged by the run's end.
func (r FlowRow) delivered() int64 {
	if r.Completed {
		return r.Size
	}
	return min(r.Delivered, r.Size)
}

// GoodputOf computes every Goodput reading of rows for a run that ended at endS (paper seconds; 0 if
// unknown: unfinished flows then count up to the last event any row shows).
func GoodputOf(rows []FlowRow, endS float64) Goodput {
	var g Goodput
	if len(rows) == 0 {
		return g
	}
	first, lastFinish := math.Inf(1), math.Inf(-1)
	cFirst := math.Inf(1)
	var cBytes int64
	var all, done []float64
	unfinished := false
	for _, r := range rows {
		first = math.Min(first, r.StartS)
		if r.Completed {
			lastFinish = math.Max(lastFinish, r.FinishS)
		} else {
			unfinished = true
		}
	}
	if endS <= 0 {
		endS = math.Max(lastFinish, first)
		for _, r := range rows {
			endS = math.Max(endS, r.StartS)
		}
	}
	for _, r := range rows {
		d := r.delivered()
		g.DeliveredBytes += d
		until := endS
		if r.Completed {
			until = r.FinishS
			cBytes += r.Size
			cFirst = math.Min(cFirst, r.StartS)
			if r.FCTS > 0 {
				done = append(done, float64(r.Size)*8/r.FCTS)
			}
		}
		// A flow that started at the run's very end had no time to deliver: it is left out rather than
		// dividing by zero.
		if until > r.StartS {
			all = append(all, float64(d)*8/(until-r.StartS))
		}
	}
	g.Flows = len(all)
	g.PerFlowAllBps, g.PerFlowCompletedBps = NewStats(all).Avg, NewStats(done).Avg
	windowEnd := lastFinish
	if unfinished || math.IsInf(lastFinish, -1) {
		windowEnd = endS
	}
	if windowEnd > first {
		g.WindowS = windowEnd - first
		g.AggregateBps = float64(g.DeliveredBytes) * 8 / g.WindowS
	}
	if lastFinish > cFirst {
		g.AggregateCompletedBps = float64(cBytes) * 8 / (lastFinish - cFirst)
	}
	return g
}

// MetricDef is a metric name as `expect:` entries and aggregate reports use it, with what it measures.
type MetricDef struct {
	Name       string // e.g. goodput_per_flow_all_bps; class.<class>.<name> works for per-class forms
	Label      string // row label in tables
	Unit       string // "s", "bps", "" (count or ratio)
	Definition string
	// Alias: in MetricDefs, the metric this older name is kept for; from LookupMetric, the older name
	// that was looked up (the rest of the definition is the metric it stands for).
	Alias string
}

// MetricDefs are the metrics Run.Metric knows, in table order. Names ending in _s are paper seconds,
// _bps bit/s in paper units.
var MetricDefs = []MetricDef{
	{Name: "flows_scheduled", Label: "flows scheduled", Definition: "flows the workload planned (a run that stops early, e.g. at a deadlock, starts fewer)"},
	{Name: "flows_total", Label: "flows started", Definition: "flows that started before the run ended (a flow waiting on a dependency that never completed has no record)"},
	{Name: "flows_completed", Label: "flows completed", Definition: "flows whose last byte was cumulatively acknowledged at the sender before the run ended"},
	{Name: "flows_completed_fraction", Label: "completed fraction", Definition: "flows_completed / flows_total"},
	{Name: "fct_avg_s", Label: "FCT avg", Unit: "s", Definition: "mean FCT (finish - start) over completed flows"},
	{Name: "fct_p50_s", Label: "FCT p50", Unit: "s", Definition: "nearest-rank median FCT over completed flows"},
	{Name: "fct_p95_s", Label: "FCT p95", Unit: "s", Definition: "nearest-rank 95th percentile FCT over completed flows"},
	{Name: "fct_p99_s", Label: "FCT p99", Unit: "s", Definition: "nearest-rank 99th percentile FCT over completed flows"},
	{Name: "fct_p999_s", Label: "FCT p99.9", Unit: "s", Definition: "nearest-rank 99.9th percentile FCT over completed flows"},
	{Name: "slowdown_avg", Label: "slowdown avg", Definition: "mean of max(FCT/standalone FCT, 1) over completed flows with a standalone FCT"},
	{Name: "slowdown_p50", Label: "slowdown p50", Definition: "nearest-rank median slowdown"},
	{Name: "slowdown_p99", Label: "slowdown p99", Definition: "nearest-rank 99th percentile slowdown"},
	{Name: "goodput_per_flow_all_bps", Label: "per-flow goodput, all flows", Unit: "bps",
		Definition: "mean over every started flow of delivered bytes*8 / (finish, or the run's end if unfinished, - start); unfinished flows count with the bytes acknowledged by the run's end"},
	{Name: "goodput_per_flow_completed_bps", Label: "per-flow goodput, completed flows", Unit: "bps",
		Definition: "mean over completed flows of size*8 / FCT (HPCC, NetBench); flatters a scheme that leaves flows unfinished"},
	{Name: "goodput_aggregate_bps", Label: "aggregate goodput", Unit: "bps",
		Definition: "delivered bytes of every flow * 8 / window, window = first start to last finish, or to the run's end if any flow is unfinished"},
	{Name: "goodput_aggregate_completed_bps", Label: "aggregate goodput, completed flows", Unit: "bps",
		Definition: "bytes of completed flows * 8 / (last finish - first start among them): bytes over the completed flows' makespan"},
	{Name: "delivered_bytes", Label: "bytes delivered", Definition: "application bytes delivered by every flow (completed flows whole, unfinished ones up to the run's end)"},
	{Name: "window_goodput_bps", Label: "window goodput", Unit: "bps",
		Definition: "bytes every flow delivered inside the measurement window (spec measure_from to the run's end) * 8 / the window's length: steady state without start-up; 0 without measure_from"},
	{Name: "reordered", Label: "reordered packets", Definition: "data packets that arrived after a later-sent packet of their flow (not a loss)"},
	{Name: "drops_lossless", Label: "drops lossless", Definition: "frames dropped from a lossless queue (each a violation)"},
	{Name: "drops_lossy", Label: "drops lossy", Definition: "frames dropped from lossy queues"},
	{Name: "retransmissions", Label: "retransmissions", Definition: "data packets sent again"},
	{Name: "pauses_sent", Label: "pauses sent", Definition: "pause (XOFF) frames sent, PFC and PortFC"},
	{Name: "ecn_marks", Label: "ECN marks", Definition: "packets CE-marked"},
	{Name: "cnps", Label: "CNPs", Definition: "congestion notification packets sent"},
	{Name: "nic_queue_peak_bytes", Label: "NIC queue peak", Definition: "the most bytes any one NIC held queued at once (summary.json nic.peak_queue_bytes)"},
	{Name: "nic_drops", Label: "NIC drops", Definition: "relayed frames a NIC dropped for lack of memory (summary.json nic.drops)"},
	{Name: "deadlocks", Label: "deadlocks", Definition: "1 if the deadlock monitor found a wait-for cycle in the run, else 0 (over seeds: the fraction of runs)"},
	{Name: "violations", Label: "violations", Definition: "broken invariants the run recorded (lossless drops and others; summary.json violations)"},
	{Name: "throughput_bps", Alias: "goodput_aggregate_completed_bps"},
	{Name: "avg_flow_goodput_bps", Alias: "goodput_per_flow_completed_bps"},
}

// classMetrics are the MetricDefs that also exist per class (class.<class>.<name>).
var classMetrics = map[string]bool{
	"flows_total": true, "flows_completed": true, "flows_completed_fraction": true,
	"fct_avg_s": true, "fct_p50_s": true, "fct_p95_s": true, "fct_p99_s": true, "fct_p999_s": true,
	"slowdown_avg": true, "slowdown_p50": true, "slowdown_p99": true,
	"goodput_per_flow_all_bps": true, "goodput_per_flow_completed_bps": true, "goodput_aggregate_bps": true,
	"goodput_aggregate_completed_bps": true, "delivered_bytes": true, "throughput_bps": true,
}

// LookupMetric returns the definition of a metric name (class.<class>.<name> included; cross-run forms
// reduction:/ratio: are Measure's, see MetricDefinition), resolving an old alias to the metric it is
// kept for.
func LookupMetric(name string) (MetricDef, bool) {
	base := name
	if rest, ok := cutClass(name); ok {
		base = rest
		if !classMetrics[base] {
			return MetricDef{}, false
		}
	}
	for _, d := range MetricDefs {
		if d.Name != base {
			continue
		}
		if d.Alias != "" {
			to, _ := LookupMetric(d.Alias)
			to.Alias = d.Name
			return to, true
		}
		return d, true
	}
	return MetricDef{}, false
}

// cutClass splits class.<class>.<metric> into <metric>.
func cutClass(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "class.")
	if !ok {
		return "", false
	}
	cls, m, ok := strings.Cut(rest, ".")
	return m, ok && cls != ""
}

// goodputMetrics are the Goodput readings as the comparison table labels them.
var goodputMetrics = []struct{ name, label string }{
	{"goodput_per_flow_all_bps", "goodput per flow, all flows"},
	{"goodput_per_flow_completed_bps", "goodput per flow, completed"},
	{"goodput_aggregate_bps", "goodput aggregate, delivered"},
	{"goodput_aggregate_completed_bps", "goodput aggregate, completed"},
}

// fillGoodput gives a summary.json written before the goodput block its readings, from flows.csv (an
// unfinished flow of such a run counts as having delivered nothing: a lower bound).
func fillGoodput(s *Summary, rows []FlowRow) {
	if s.Goodput.Flows > 0 || len(rows) == 0 {
		return
	}
	s.Goodput = GoodputOf(rows, s.DurationS)
	byClass := map[string][]FlowRow{}
	for _, r := range rows {
		c := r.Class
		if c == "" {
			c = "default"
		}
		byClass[c] = append(byClass[c], r)
	}
	for c, cs := range s.Classes {
		cs.Goodput = GoodputOf(byClass[c], s.DurationS)
		s.Classes[c] = cs
	}
}
