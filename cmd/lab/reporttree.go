package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/fabriclab/fabriclab/report"
)

// reportFlags are lab report's flags for run trees.
var reportFlags struct {
	metrics []string
	strict  bool // exit 1 when a zero-tolerance claim is broken
	apart   bool // keep each argument's runs in groups of their own
}

// isTreeReport says whether lab report's arguments hold a run tree (a manifest.json) or several runs of
// one spec (seeds), which it aggregates rather than lists run by run.
func isTreeReport(dirs []string) bool {
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, report.ManifestFile)); err == nil {
			return true
		}
	}
	return false
}

// reportTree aggregates run trees: every metric's mean and 95% CI per spec and sweep point, the
// published numbers against the CI (cross-run forms paired by seed), the metric definitions, and plots
// of metrics against the swept value (or per group) with CI error bars.
func reportTree(w io.Writer, dirs []string, out string, noPlots bool) error {
	for _, m := range reportFlags.metrics {
		if _, ok := report.LookupMetric(m); !ok {
			return fmt.Errorf("--metric %s: not a metric the report can plot (%v)", m, report.CheckMetricName(m))
		}
	}
	load := report.LoadTrees
	if reportFlags.apart {
		load = report.LoadTreesApart
	}
	t, err := load(dirs)
	if err != nil {
		return err
	}
	if err := makeOutDir("-o", out); err != nil {
		return err
	}
	es := report.AggregateExpectations(t)
	var text bytes.Buffer
	if err := report.AggregateTable(t).WriteText(&text); err != nil {
		return err
	}
	text.WriteString("\n")
	if err := report.AggregateBucketTable(t).WriteText(&text); err != nil {
		return err
	}
	if len(es) > 0 {
		text.WriteString("\n")
		if err := report.ExpectationsCI(es).WriteText(&text); err != nil {
			return err
		}
	}
	if len(t.Skipped) > 0 {
		fmt.Fprintf(&text, "\nnot in the aggregate (did not finish):\n")
		for _, s := range t.Skipped {
			fmt.Fprintf(&text, "  %s\n", s)
		}
	}
	text.WriteString("\n")
	text.WriteString(report.DefinitionsText(es))
	w.Write(text.Bytes())
	if err := report.WriteBytesAtomic(filepath.Join(out, "report.txt"), text.Bytes()); err != nil {
		return err
	}
	var csvb bytes.Buffer
	if err := report.AggregateCSV(t).WriteCSV(&csvb); err != nil {
		return err
	}
	if err := report.WriteBytesAtomic(filepath.Join(out, "aggregate.csv"), csvb.Bytes()); err != nil {
		return err
	}
	b, err := json.MarshalIndent(report.Aggregate(t, es), "", "  ")
	if err != nil {
		return err
	}
	if err := report.WriteBytesAtomic(filepath.Join(out, "aggregate.json"), append(b, '\n')); err != nil {
		return err
	}
	files := []string{filepath.Join(out, "report.txt"), filepath.Join(out, "aggregate.csv"), filepath.Join(out, "aggregate.json")}
	if !noPlots {
		pf, err := report.WriteSweepPlots(out, t, reportFlags.metrics)
		if err != nil {
			return err
		}
		files = append(files, pf...)
		// The figures: every seed of each group in the FCT and slowdown CDFs, pauses and drops over
		// time (a mean and a band over seeds); the one-run figures (heatmaps, flow rates, topology,
		// slowdown per bin, queue depth) for each group's first seed.
		if len(t.Groups) <= 8 {
			var gs []report.PlotGroup
			for _, g := range t.Groups {
				// A tree is read without its runs' link and flow meters (a 48-run tree of metered runs
				// held 24 GB); the one-run figures of the first seeds need them.
				if err := g.Runs[0].LoadMeters(); err != nil {
					return err
				}
				gs = append(gs, report.PlotGroup{Label: g.Label(), Runs: g.Runs})
			}
			pf, err := report.WriteGroupPlots(out, gs, report.PlotOptions{})
			if err != nil {
				return err
			}
			files = append(files, pf...)
		}
	}
	fmt.Fprintf(w, "\nwrote")
	for i, f := range files {
		if i > 0 {
			fmt.Fprint(w, ",")
		}
		fmt.Fprintf(w, " %s", f)
	}
	fmt.Fprintln(w)
	return brokenClaims(es)
}

// brokenClaims is lab report --strict's verdict: an error naming every zero-tolerance claim (lossless,
// retransmission-free, deadlock-free, no violation) that some seed broke.
func brokenClaims(es []report.AggExpectation) error {
	if !reportFlags.strict {
		return nil
	}
	var broken []string
	for _, e := range es {
		if e.ZeroClaimBroken() {
			broken = append(broken, fmt.Sprintf("%s %s = 0 (%s): %s", e.Group, e.Metric, e.Published.Source, e.Verdict))
		}
	}
	if len(broken) == 0 {
		return nil
	}
	return exitCodeError{code: exitVerdict, err: fmt.Errorf("--strict: %d zero-tolerance claims broken:\n  %s", len(broken), strings.Join(broken, "\n  "))}
}
