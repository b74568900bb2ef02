package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/report"
)

// exitCodeError makes main exit with code (main.go: exitFailure, exitUsage, exitVerdict).
type exitCodeError struct {
	code int
	err  error
}

func (e exitCodeError) Error() string { return e.err.Error() }
func (e exitCodeError) Unwrap() error { return e.err }

// exitCode is the status main exits with for err.
func exitCode(err error) int {
	var ec exitCodeError
	if errors.As(err, &ec) {
		return ec.code
	}
	return 1
}

func usage(err error) error { return exitCodeError{code: exitUsage, err: err} }

func init() {
	var out string
	var asJSON, noPlots, perMetric bool
	var margins, expects, pairs []string
	cmd := &cobra.Command{
		Use:   "compare BASE NEW",
		Short: "regression test: compare two run trees of the same specs, metric by metric, with a verdict",
		Long: `Compare two run trees (lab run -o DIR with --seeds; or two run directories) of the same specs: a
baseline BASE (e.g. from main) and NEW (from a changed build). Runs pair by spec, sweep point and seed.
Trees that differ by a setting (NEW run with --set switch.xoff=12bdp) pair by spec name when each
side has one point per spec, or as --pair BASE=NEW says (a spec name or a group label on each side);
the header says what differs ("switch.xoff 6bdp -> 12bdp").
For every metric it prints the base and new means, new/base with its CI (from the per-seed
differences when both ran the same seeds, else Welch's interval) and a verdict. The CIs are 95%
family-wise: all of them together cover the truth with 95% (Bonferroni over the m metrics with an
interval), so unchanged code does not fail one comparison in a few by chance; --per-metric makes each
a 95% CI of its own (more power, more false alarms). Verdicts:

  changed     the whole CI lies beyond ±margin (either direction: any change of behaviour)
  expected    changed, in the direction --expect declared for that metric
  equivalent  the CI lies inside ±margin
  undecided   the CI straddles the margin; the note says how many seeds per tree would decide
  zero broken a count that must be zero (drops_lossless, deadlocks, violations) is non-zero in NEW
              where BASE had none, whatever the statistics
  not finite  a value, a mean over seeds or new/base is infinite: no verdict (exit 1)

Default margins (relative to the base mean): 1% completed fraction; 2% flow counts and delivered
bytes; 5% FCT avg and p50, slowdown avg and p50, goodputs; 10% FCT p95/p99/p99.9, slowdown p99,
retransmissions, lossy drops, pauses, ECN marks, CNPs, NIC queue peak; 20% reordered packets. A metric
that is 0 in every BASE run changes when NEW has it in every run (retransmissions and lossy drops: in
any run).

With the same seeds on both sides of a virtual-backend tree, flows_differing also compares flow by
flow: the virtual backend repeats a seed bit for bit, so a flow whose outcome (completed, FCT, bytes,
retransmissions) differs from the same seed's BASE run is a change of behaviour however small its
effect on the means ("changed"; --expect flows_differing=up when the change is intended).

No pass on missing evidence: every BASE run must have its NEW counterpart (the same seed, or as many
runs when the seeds are disjoint) and every run either tree lists must be readable; a value, mean or
ratio that is not finite gets no verdict; when most metrics are undecided the verdict is "not
decided". Each of these exits 1, naming the run, unless something changed (exit 3).

Writes compare_<spec>.png/.svg (new/base with CIs on a log axis against the margins, flows_differing
beside) and compare.json into -o (default NEW/compare).
Exit status: 0 nothing changed beyond its margin; 3 something did (or a zero count broke); 1 cannot
decide (a run missing, unfinished or unreadable, a value not finite, most metrics undecided) or
another failure; 2 bad usage (arguments, flags, a --pair naming no group or a group twice).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usage(fmt.Errorf("compare takes two run trees, BASE and NEW (got %d arguments)", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := report.ParseMarginFlags(margins)
			if err != nil {
				return usage(err)
			}
			e, err := report.ParseExpectFlags(expects)
			if err != nil {
				return usage(err)
			}
			if out == "" {
				out = filepath.Join(args[1], "compare")
			}
			return runCompare(cmd.OutOrStdout(), args[0], args[1], out, report.RegressOptions{Margins: m, Expected: e, PerMetric: perMetric}, pairs, asJSON, noPlots)
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "where to write the plots and compare.json (default NEW/compare)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON instead of the table")
	cmd.Flags().BoolVar(&noPlots, "no-plots", false, "no plots, no files")
	cmd.Flags().BoolVar(&perMetric, "per-metric", false, "each CI at 95% on its own instead of 95% family-wise")
	cmd.Flags().StringArrayVar(&margins, "margin", nil, "a metric's equivalence margin, relative to the base mean: fct_p99_s=20% (repeat; class.<c>.<m> or <m>)")
	cmd.Flags().StringArrayVar(&expects, "expect", nil, "a direction of change that is intended for a metric: fct_avg_s=down (repeat; up or down)")
	cmd.Flags().StringArrayVar(&pairs, "pair", nil, "compare BASE group A with NEW group B: A=B, each a spec name or a group label such as 'pfcstar switch.xoff=12bdp' (repeat)")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage(err) })
	root.AddCommand(cmd)
}

// runCompare loads both trees, compares them, writes the table (or JSON) and the plots, and returns an
// exit status error: exitVerdict when something changed, exitFailure when it cannot decide.
func runCompare(w io.Writer, baseDir, newDir, out string, opts report.RegressOptions, pairs []string, asJSON, noPlots bool) error {
	if !noPlots {
		if err := checkOutDir("-o", out); err != nil { // before any work
			return err
		}
	}
	base, err := report.LoadTrees([]string{baseDir})
	if err != nil {
		return fmt.Errorf("compare: cannot decide: BASE: %w", err)
	}
	nw, err := report.LoadTrees([]string{newDir})
	if err != nil {
		return fmt.Errorf("compare: cannot decide: NEW: %w", err)
	}
	for _, p := range pairs {
		ab, err := report.SplitPair(p, base, nw)
		if err != nil {
			return usage(err)
		}
		opts.Pairs = append(opts.Pairs, ab)
	}
	rg, err := report.CompareTrees(base, nw, opts)
	if pe := (report.PairError{}); errors.As(err, &pe) {
		return usage(err)
	}
	if err != nil {
		return fmt.Errorf("compare: cannot decide: %w", err)
	}
	b, err := json.MarshalIndent(rg, "", "  ")
	if err != nil {
		return err
	}
	if asJSON {
		w.Write(append(b, '\n'))
	} else {
		for _, p := range rg.Pairs {
			fmt.Fprintf(w, "paired across a changed setting: %s\n", p)
		}
		if err := report.RegressTable(rg).WriteText(w); err != nil {
			return err
		}
		fmt.Fprintf(w, "\n%s", report.RegressSummary(rg))
	}
	if !noPlots {
		if err := makeOutDir("-o", out); err != nil {
			return err
		}
		if err := report.WriteBytesAtomic(filepath.Join(out, "compare.json"), append(b, '\n')); err != nil {
			return err
		}
		files, err := report.WriteRegressPlots(out, rg)
		if err != nil {
			return err
		}
		if !asJSON {
			fmt.Fprintf(w, "wrote %s and %d plots\n", filepath.Join(out, "compare.json"), len(files))
		}
	}
	switch report.RegressExit(rg) {
	case report.RegressChanged:
		return exitCodeError{code: exitVerdict, err: errors.New("compare: regression: NEW changed beyond a margin (see the verdicts above)")}
	case report.RegressCannot:
		what := fmt.Sprintf("%d runs or values missing or unreadable: %s", len(rg.Missing), strings.Join(rg.Missing, "; "))
		if len(rg.Missing) == 0 {
			what = fmt.Sprintf("%d of %d metrics undecided", rg.Counts[report.VerdictUndecided], len(rg.Changes))
		}
		return exitCodeError{code: exitFailure, err: fmt.Errorf("compare: cannot decide: %s", what)}
	}
	return nil
}
