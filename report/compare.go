package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
)

// Table is a report table: a header and rows of cells, written aligned for people or as CSV.
type Table struct {
	Title  string
	Header []string
	Rows   [][]string
	Notes  []string // printed under the text table
}

// WriteText writes the table with aligned columns, under its title.
func (t Table) WriteText(w io.Writer) error {
	if t.Title != "" {
		fmt.Fprintf(w, "%s\n", t.Title)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, row := range append([][]string{t.Header}, t.Rows...) {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range t.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
			return err
		}
	}
	return nil
}

// WriteCSV writes the header and rows as CSV.
func (t Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write(t.Header)
	cw.WriteAll(t.Rows)
	return cw.Error()
}

func usStr(s float64) string { return fmt.Sprintf("%.1f", s*1e6) }
func gbps(b float64) string  { return fmt.Sprintf("%.2f", b/1e9) }
func num(x float64) string   { return fmt.Sprintf("%.3g", x) }

// Compare is the side-by-side table of several runs: one column per run, one row per metric. FCTs in
// microseconds, throughputs in Gb/s (paper units).
func Compare(runs []*Run) Table {
	t := Table{Title: "comparison (FCT in us, throughput in Gb/s)", Header: []string{"metric"}}
	for _, r := range runs {
		t.Header = append(t.Header, r.Name)
	}
	row := func(name string, f func(r *Run) string) {
		cells := []string{name}
		for _, r := range runs {
			cells = append(cells, f(r))
		}
		t.Rows = append(t.Rows, cells)
	}
	row("scheme", func(r *Run) string { return r.Scheme })
	row("flows completed", func(r *Run) string {
		f := r.Summary.Flows
		if f.Scheduled > f.Total {
			return fmt.Sprintf("%d/%d (%d scheduled)", f.Completed, f.Total, f.Scheduled)
		}
		return fmt.Sprintf("%d/%d", f.Completed, f.Total)
	})
	for _, m := range []struct {
		name string
		get  func(Stats) float64
	}{{"avg", func(s Stats) float64 { return s.Avg }}, {"p50", func(s Stats) float64 { return s.P50 }},
		{"p95", func(s Stats) float64 { return s.P95 }}, {"p99", func(s Stats) float64 { return s.P99 }},
		{"p99.9", func(s Stats) float64 { return s.P999 }}} {
		row("FCT "+m.name, func(r *Run) string { return usStr(m.get(r.Summary.FCT)) })
	}
	row("slowdown avg", func(r *Run) string { return num(r.Summary.Slowdown.Avg) })
	row("slowdown p50", func(r *Run) string { return num(r.Summary.Slowdown.P50) })
	row("slowdown p99", func(r *Run) string { return num(r.Summary.Slowdown.P99) })
	// Every reading of throughput, named by its definition (MetricDefs; the report's definitions table).
	for _, m := range goodputMetrics {
		row(m.label, func(r *Run) string { v, _ := r.Metric(m.name); return gbps(v) })
	}
	for _, c := range classes(runs) {
		row("class "+c+" FCT avg", func(r *Run) string {
			if cs, ok := r.Summary.Classes[c]; ok {
				return usStr(cs.FCT.Avg)
			}
			return "-"
		})
		row("class "+c+" FCT p99", func(r *Run) string {
			if cs, ok := r.Summary.Classes[c]; ok {
				return usStr(cs.FCT.P99)
			}
			return "-"
		})
		for _, m := range goodputMetrics {
			row("class "+c+" "+m.label, func(r *Run) string {
				if v, ok := r.Metric("class." + c + "." + m.name); ok {
					return gbps(v)
				}
				return "-"
			})
		}
	}
	row("drops lossless", func(r *Run) string { return fmt.Sprint(r.Summary.Drops.Lossless) })
	row("drops lossy", func(r *Run) string { return fmt.Sprint(r.Summary.Drops.Lossy) })
	row("retransmissions", func(r *Run) string { return fmt.Sprint(r.Summary.Retransmissions) })
	row("window goodput", func(r *Run) string { return gbps(r.Summary.WindowGoodputBps) })
	row("reordered packets", func(r *Run) string { return fmt.Sprint(r.Summary.Reordered) })
	row("pauses sent", func(r *Run) string { return fmt.Sprint(r.Summary.Pauses.Sent) })
	row("pauses received", func(r *Run) string { return fmt.Sprint(r.Summary.Pauses.Received) })
	row("ECN marks", func(r *Run) string { return fmt.Sprint(r.Summary.ECNMarks) })
	row("NIC queue peak / buffer", func(r *Run) string {
		n := r.Summary.NIC
		if n.BufferBytes == 0 {
			return fmt.Sprintf("%d / -", n.PeakBytes)
		}
		return fmt.Sprintf("%d / %d", n.PeakBytes, n.BufferBytes)
	})
	row("NIC guard pauses", func(r *Run) string { return fmt.Sprint(r.Summary.NIC.Pauses) })
	row("paths used per flow", func(r *Run) string { return r.Summary.pathsRow() })
	row("deadlock", func(r *Run) string {
		if r.Summary.Deadlock.Detected {
			return fmt.Sprintf("yes at %ss", num(r.Summary.Deadlock.AtS))
		}
		return "no"
	})
	row("violations", func(r *Run) string { return fmt.Sprint(len(r.Summary.Violations)) })
	// The netns fidelity monitor's verdict (its reason: FidelityNotes); the virtual backend is exact.
	row("fidelity", func(r *Run) string {
		switch f := r.Summary.Fidelity; {
		case !f.Monitored():
			return "exact"
		case f.Faithful:
			return "faithful"
		default:
			return "UNFAITHFUL"
		}
	})
	return t
}

// FidelityNotes is each monitored run's fidelity verdict with its reason, one line each.
func FidelityNotes(runs []*Run) []string {
	var out []string
	for _, r := range runs {
		f := r.Summary.Fidelity
		if !f.Monitored() {
			continue
		}
		v := "faithful"
		if !f.Faithful {
			v = "UNFAITHFUL (its numbers are the machine's, not the fabric's)"
		}
		out = append(out, fmt.Sprintf("%s: fidelity %s: %s", r.Name, v, f.Reason))
	}
	return out
}

func classes(runs []*Run) []string {
	set := map[string]bool{}
	for _, r := range runs {
		for c := range r.Summary.Classes {
			set[c] = true
		}
	}
	var out []string
	for c := range set {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// BucketTable is FCT avg and p99 and mean per-flow goodput per NetBench size bucket, one column group per
// run.
func BucketTable(runs []*Run) Table {
	t := Table{Title: "per size bucket (NetBench): FCT avg / p99 in us, per-flow goodput in Gb/s", Header: []string{"bucket"}}
	for _, r := range runs {
		t.Header = append(t.Header, r.Name+" n", r.Name+" avg", r.Name+" p99", r.Name+" Gb/s")
	}
	per := make([][]Bucket, len(runs))
	for i, r := range runs {
		per[i] = SizeBuckets(r.Rows, nil)
	}
	for b := range NetBenchBuckets {
		cells := []string{NetBenchBuckets[b].Name}
		for i := range runs {
			x := per[i][b]
			cells = append(cells, fmt.Sprint(x.Flows.Completed), usStr(x.FCT.Avg), usStr(x.FCT.P99), gbps(x.GoodputBps))
		}
		t.Rows = append(t.Rows, cells)
	}
	return t
}

// BinTable is HPCC's fct_analysis.py table for each run (HPCCBins on the run's fct.txt: normal flows,
// or incast flows when a run has none): per bin, each run's own largest size, median, p95 and p99
// slowdown. Runs with different flows have different bin sizes, so each run's column shows its own.
func BinTable(runs []*Run) Table {
	t := Table{Title: "slowdown per 5-percentile flow-size bin (HPCC fct_analysis.py, commit 9f4be2a; type per run)", Header: []string{"bin"}}
	bins := make([][]Bin, len(runs))
	n := 0
	for i, r := range runs {
		b, typ, err := BinsOf(r.FCT)
		name := r.Name
		if typ == 1 {
			name += " incast"
		}
		t.Header = append(t.Header, name+" size", name+" p50", name+" p95", name+" p99")
		if err != nil {
			t.Notes = append(t.Notes, r.Name+": "+err.Error())
		}
		bins[i] = b
		n = max(n, len(b))
	}
	for b := 0; b < n; b++ {
		cells := []string{""}
		for i := range runs {
			if b >= len(bins[i]) {
				cells = append(cells, "-", "-", "-", "-")
				continue
			}
			x := bins[i][b]
			if cells[0] == "" {
				cells[0] = fmt.Sprintf("%.2f", x.Pct)
			}
			cells = append(cells, shortBytes(x.MaxSize), fmt.Sprintf("%.3f", x.P50), fmt.Sprintf("%.3f", x.P95), fmt.Sprintf("%.3f", x.P99))
		}
		t.Rows = append(t.Rows, cells)
	}
	return t
}

// Measure evaluates an `expect:` metric name for run r among runs. Besides Metric's names it accepts
// cross-run forms, since papers publish one scheme relative to another:
//
//	reduction:<metric>:<run>   (1 - r/other) x 100, in percent ("PortFC cuts avg FCT by 69.2% vs IRN")
//	ratio:<metric>:<run>       r / other ("1.7x the throughput of IRN")
//
// <run> is another run's spec name. It says why when the value cannot be had.
func Measure(runs []*Run, r *Run, name string) (float64, error) {
	if kind, rest, ok := strings.Cut(name, ":"); ok && (kind == "reduction" || kind == "ratio") {
		i := strings.LastIndex(rest, ":")
		if i < 0 {
			return 0, fmt.Errorf("want %s:<metric>:<run>", kind)
		}
		metric, other := rest[:i], rest[i+1:]
		var o *Run
		for _, x := range runs {
			if x.Name == other {
				o = x
			}
		}
		if o == nil {
			return 0, fmt.Errorf("run %s is not in this report", other)
		}
		a, ok1 := r.Metric(metric)
		b, ok2 := o.Metric(metric)
		if !ok1 || !ok2 {
			return 0, fmt.Errorf("no metric %q", metric)
		}
		if b == 0 {
			return 0, fmt.Errorf("%s of %s is 0", metric, other)
		}
		if kind == "ratio" {
			return a / b, nil
		}
		return (1 - a/b) * 100, nil
	}
	v, ok := r.Metric(name)
	if !ok {
		return 0, fmt.Errorf("no metric %q", name)
	}
	return v, nil
}

// Expectations is every run's declared published numbers next to the measured ones.
func Expectations(runs []*Run) Table {
	t := Table{Title: "measured vs published", Header: []string{"run", "metric", "measured", "published", "unit", "source"}}
	for _, r := range runs {
		keys := make([]string, 0, len(r.Expect))
		for k := range r.Expect {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			e := r.Expect[k]
			got := "n/a"
			if v, err := Measure(runs, r, k); err != nil {
				got = "n/a (" + err.Error() + ")"
			} else if !math.IsNaN(v) {
				got = num(v)
			}
			t.Rows = append(t.Rows, []string{r.Name, k, got, num(e.Value), e.Unit, e.Source})
		}
	}
	return t
}
