package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/report"
)

func init() {
	var out string
	var noPlots bool
	var plotFlows []uint
	var utilWindow time.Duration
	cmd := &cobra.Command{
		Use:   "report DIR [DIR...]",
		Short: "summarize and compare run directories: tables and plots",
		Long: `Read one or more run directories (lab run -o DIR) and print, one column per run: FCT avg and
p50/p95/p99/p99.9, slowdown, aggregate and per-flow throughput, per-workload-class figures, drops,
retransmissions and pauses; FCT and goodput per NetBench size bucket; median and p99 slowdown per
5-percentile size bin (HPCC's fct_analysis.py); and, when a spec declares published numbers (expect:),
measured next to published. Writes report.txt, comparison.csv and plots (fct_cdf, slowdown_bins,
queue_depth when the run sampled queues, pauses; PNG and SVG) into -o (default: the run directory
for one run, DIR/../comparison for several).

A run tree (lab run with several specs, --seeds or --set; DIR/manifest.json) is aggregated instead
(several trees merge runs of the same spec and sweep point; --apart keeps each tree's own):
every metric's mean and 95% confidence interval (Student t) over seeds per spec and sweep point, the
published numbers (expect:) against that interval, cross-run forms paired by seed, the definition of
every metric, aggregate.csv and aggregate.json, and plots of --metric against the swept value (or per
spec) with error bars. A run of a tree counts when its status file (DIR.status.json, written by the
process that ran it, e.g. one of many lab run --index processes) says done; the others are listed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if isTreeReport(args) {
				if out == "" {
					out = args[0]
				}
				return reportTree(cmd.OutOrStdout(), args, out, noPlots)
			}
			var runs []*report.Run
			for _, d := range args {
				r, err := report.LoadRun(d)
				if err != nil {
					return fmt.Errorf("%s: %w", d, err)
				}
				runs = append(runs, r)
			}
			if out == "" {
				out = args[0]
				if len(args) > 1 {
					out = filepath.Join(filepath.Dir(filepath.Clean(args[0])), "comparison")
				}
			}
			if err := makeOutDir("-o", out); err != nil {
				return err
			}
			var text bytes.Buffer
			tables := []report.Table{report.Compare(runs), report.BucketTable(runs), report.BinTable(runs)}
			if exp := report.Expectations(runs); len(exp.Rows) > 0 {
				tables = append(tables, exp)
			}
			if pu := report.PortUtilTable(runs); len(pu.Rows) > 0 {
				tables = append(tables, pu)
			}
			if utilWindow > 0 {
				if wu := report.WindowedUtilTable(runs, utilWindow.Seconds()); len(wu.Rows) > 0 {
					tables = append(tables, wu)
				}
			}
			for i, t := range tables {
				if i > 0 {
					text.WriteString("\n")
				}
				if err := t.WriteText(&text); err != nil {
					return err
				}
			}
			text.WriteString("\n" + report.RunDefinitionsText(runs))
			if notes := report.FidelityNotes(runs); len(notes) > 0 {
				text.WriteString("\n")
				for _, n := range notes {
					text.WriteString(n + "\n")
				}
			}
			cmd.OutOrStdout().Write(text.Bytes())
			if err := report.WriteBytesAtomic(filepath.Join(out, "report.txt"), text.Bytes()); err != nil {
				return err
			}
			var csvb bytes.Buffer
			if err := tables[0].WriteCSV(&csvb); err != nil {
				return err
			}
			if err := report.WriteBytesAtomic(filepath.Join(out, "comparison.csv"), csvb.Bytes()); err != nil {
				return err
			}
			if noPlots {
				return nil
			}
			files, err := report.WritePlotsWith(out, runs, report.PlotOptions{Flows: flowIDs(plotFlows)})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "\nwrote %s, %s", filepath.Join(out, "report.txt"), filepath.Join(out, "comparison.csv"))
			for _, f := range files {
				fmt.Fprintf(cmd.OutOrStdout(), ", %s", f)
			}
			fmt.Fprintln(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "where to write report.txt, comparison.csv and the plots")
	cmd.Flags().BoolVar(&noPlots, "no-plots", false, "tables only")
	cmd.Flags().DurationVar(&utilWindow, "util-window", 0, "metered runs: also port utilisation per window of this length (1ms), percentiles over ports x windows (a hot port at a hot moment; the plain table averages each port over the run)")
	cmd.Flags().UintSliceVar(&plotFlows, "flows", nil, "flow ids for the flow_rate plot (default: each run's four largest completed flows)")
	cmd.Flags().BoolVar(&reportFlags.apart, "apart", false, "run trees: keep each DIR's runs apart, labelled by DIR, instead of merging runs of the same spec (a baseline next to a change; lab compare BASE NEW gives the verdict)")
	cmd.Flags().BoolVar(&reportFlags.strict, "strict", false, "run trees: exit 3 when a zero-tolerance claim (expect: drops_lossless, retransmissions, deadlocks or violations = 0) is non-zero in any seed")
	cmd.Flags().StringArrayVar(&reportFlags.metrics, "metric", nil, "run trees: plot this metric against the swept value (repeat; default fct_avg_s, fct_p99_s, goodput_per_flow_all_bps, goodput_aggregate_bps)")
	root.AddCommand(cmd)
}

func flowIDs(v []uint) []uint32 {
	if v == nil {
		return nil
	}
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = uint32(x)
	}
	return out
}
