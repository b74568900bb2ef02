package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/bounded"
	"github.com/fabriclab/fabriclab/claims"
	"github.com/fabriclab/fabriclab/report"
)

var claimsFlags struct {
	in, out, docs, provenance string
	saveSeeds                 string
	seedMetrics               []string
}

var claimsCmd = &cobra.Command{
	Use:   "claims [DIR...]",
	Short: "refresh docs/claims.json from run trees and lab analyze outputs, re-judge every claim by the strict rule, regenerate the docs tables",
	Long: `lab claims reads the claims table (--in, default docs/claims.json). Every row whose source names a
group (spec name and sweep point, as lab report labels it) of one of the run trees given gets its mean,
95% interval and seed count from that tree (reduction:/ratio: forms paired by seed). Every row whose
source has an analyze glob matching lab analyze --json outputs under the directories given (one file
per topology seed) gets the mean and 95% interval of the source's field over those files. Then every
row is re-judged by the strict rule (docs/claims.md) and the table is written to -o (default: --in),
and the generated tables are written into the pages under --docs (default: the directory of -o):
claims.md and each paper's page, between its claims markers. Rows whose source reads a per-seed file
(seeds, a path relative to the directories given) get the mean and interval over its seeds; count rows
(source count) are recomputed from their terms last, after every other row.

With --save-seeds FILE, lab claims only writes FILE from the run trees given: per group and seed, the
--seed-metric values (summary metrics, or link_util.<class> from the link meters), with --provenance.
Stored under docs/claims-data/, it lets rows be refreshed without the trees.`,
	RunE: func(cmd *cobra.Command, args []string) error {
		if claimsFlags.saveSeeds != "" {
			return saveSeeds(cmd.OutOrStdout(), claimsFlags.saveSeeds, claimsFlags.seedMetrics, args)
		}
		out := claimsFlags.out
		if out == "" {
			out = claimsFlags.in
		}
		docs := claimsFlags.docs
		if docs == "" {
			docs = filepath.Dir(out)
		} else if docs != "-" {
			// Given, it must be a docs directory: a mistyped one would write nothing, without a word.
			if err := checkDocsDir(docs); err != nil {
				return err
			}
		}
		return runClaims(cmd.OutOrStdout(), claimsFlags.in, out, docs, args)
	},
}

func init() {
	claimsCmd.Flags().StringVar(&claimsFlags.in, "in", "docs/claims.json", "the claims table to read")
	claimsCmd.Flags().StringVarP(&claimsFlags.out, "out", "o", "", "where to write it (default: --in)")
	claimsCmd.Flags().StringVar(&claimsFlags.docs, "docs", "", "the docs directory whose pages get the generated tables (default: the directory of -o; \"-\": none)")
	claimsCmd.Flags().StringVar(&claimsFlags.provenance, "provenance", "", "what refreshed rows say about where their numbers come from (default: the trees' paths)")
	claimsCmd.Flags().StringVar(&claimsFlags.saveSeeds, "save-seeds", "", "write a per-seed file (docs/claims-data/runs/...) from the run trees given, and nothing else")
	claimsCmd.Flags().StringSliceVar(&claimsFlags.seedMetrics, "seed-metric", nil, "--save-seeds: the metrics to keep per run (summary metrics, or link_util.<link class>)")
	root.AddCommand(claimsCmd)
}

// saveSeeds is lab claims --save-seeds: the trees' runs, cut down to the metrics rows read.
func saveSeeds(w io.Writer, path string, metrics, trees []string) error {
	if len(trees) == 0 {
		return fmt.Errorf("--save-seeds: give the run trees to read")
	}
	t, err := report.LoadTrees(trees)
	if err != nil {
		return err
	}
	prov := claimsFlags.provenance
	if prov == "" {
		prov = "run trees " + strings.Join(trees, " ")
	}
	f, err := claims.NewSeedFile(t, metrics, prov)
	if err != nil {
		return fmt.Errorf("--save-seeds: %w", err)
	}
	if err := f.Save(path); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d groups, %d runs\n", path, len(t.Groups), len(t.Runs()))
	return nil
}

// runClaims is lab claims: load, refresh from trees, re-judge, save, regenerate the pages.
func runClaims(w io.Writer, in, out, docs string, trees []string) error {
	cs, err := claims.Load(in)
	if err != nil {
		return err
	}
	before := counts(cs)
	if err := refreshClaims(w, cs, trees); err != nil {
		return err
	}
	if err := claims.Save(out, cs); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d rows; R/O/N/- per paper before %s, after %s\n", out, len(cs), before, counts(cs))
	if docs == "-" {
		return nil
	}
	return writeClaimsDocs(docs, cs)
}

// refreshClaims refreshes rows from the directories given: first the rows whose analyze glob matches
// files under them, then those whose per-seed file is under them, then, from each directory that is a
// run tree (or one run), the rows naming its groups, and last the count rows (whose row terms read
// the rows refreshed before). A directory that is no run tree and holds no row's analyze or per-seed
// file is an error (a mistyped path).
func refreshClaims(w io.Writer, cs []claims.Claim, dirs []string) error {
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			return err
		}
	}
	prov := claimsFlags.provenance
	if prov == "" {
		prov = "lab analyze outputs under " + strings.Join(dirs, " ")
	}
	had := map[string]int{}
	for _, c := range cs {
		had[c.ID] = c.TopologySeeds
	}
	ids, read, err := claims.UpdateAnalyze(cs, dirs, prov)
	if err != nil {
		return err
	}
	if len(dirs) > 0 {
		fmt.Fprintf(w, "analyze outputs: refreshed %d rows from %d files %s\n", len(ids), len(read), strings.Join(ids, " "))
	}
	ids, seedsRead, err := claims.UpdateSeeds(cs, dirs)
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		fmt.Fprintf(w, "per-seed files: refreshed %d rows %s\n", len(ids), strings.Join(ids, " "))
	}
	read = append(read, seedsRead...)
	// Outputs split over directories refresh from the ones given: say when that is fewer seeds than
	// the table held, which is likely a directory left out.
	for _, c := range cs {
		if c.Source != nil && c.Source.Analyze != "" && c.TopologySeeds < had[c.ID] {
			fmt.Fprintf(w, "warning: %s now over %d topology seeds, the table had %d (a directory left out?)\n", c.ID, c.TopologySeeds, had[c.ID])
		}
	}
	for _, dir := range dirs {
		if isRunTree(dir) {
			if err := refreshFromTree(w, cs, dir); err != nil {
				return err
			}
		}
	}
	// Count rows last: their rows terms read the rows refreshed above.
	ids, countRead, err := claims.UpdateCounts(cs, dirs, prov)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "count rows: recomputed %d %s\n", len(ids), strings.Join(ids, " "))
	read = append(read, countRead...)
	for _, dir := range dirs {
		if !isRunTree(dir) && !holdsAny(dir, read) {
			return fmt.Errorf("%s: not a run tree (no %s or %s) and no row's analyze or seeds source matches a file in it", dir, report.ManifestFile, report.SummaryFile)
		}
	}
	return nil
}

// refreshFromTree refreshes the rows whose source names a group of the run tree dir.
func refreshFromTree(w io.Writer, cs []claims.Claim, dir string) error {
	t, err := report.LoadTrees([]string{dir})
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	prov := claimsFlags.provenance
	if prov == "" {
		prov = "run tree " + dir
	}
	var m report.Manifest
	if b, err := bounded.ReadFile(filepath.Join(dir, report.ManifestFile), bounded.Summary); err == nil {
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
	}
	ids, err := claims.Update(cs, t, m.Specs, prov)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	fmt.Fprintf(w, "%s: refreshed %d rows %s\n", dir, len(ids), strings.Join(ids, " "))
	return nil
}

// isRunTree says whether dir is what report.LoadTrees reads: a tree (its manifest) or one run.
func isRunTree(dir string) bool {
	for _, f := range []string{report.ManifestFile, report.SummaryFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// holdsAny says whether one of files lies under dir.
func holdsAny(dir string, files []string) bool {
	for _, f := range files {
		if rel, err := filepath.Rel(dir, f); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func counts(cs []claims.Claim) string {
	cp := append([]claims.Claim(nil), cs...)
	claims.Rejudge(cp)
	var parts []string
	for _, p := range claims.Papers {
		parts = append(parts, p+" "+claims.Count(cp, p).String())
	}
	return strings.Join(parts, ", ")
}

// writeClaimsDocs splices the generated tables into claims.md and each paper's page (pages that do
// not exist under docs are skipped: a test tree need not carry them all).
func writeClaimsDocs(docs string, cs []claims.Claim) error {
	page := filepath.Join(docs, "claims.md")
	var full strings.Builder
	for _, p := range claims.Papers {
		full.WriteString(claims.Full(cs, p))
	}
	blocks := map[string]string{"summary": claims.Summary(cs), "all": full.String()}
	for _, name := range []string{"summary", "all"} {
		if err := spliceIfThere(page, name, blocks[name]); err != nil {
			return err
		}
	}
	for _, p := range claims.Papers {
		if err := spliceIfThere(filepath.Join(docs, claims.DocFor[p]), p, claims.Table(cs, p)); err != nil {
			return err
		}
	}
	return nil
}

// checkDocsDir refuses a --docs that is not a directory holding at least one page lab claims writes.
func checkDocsDir(docs string) error {
	fi, err := os.Stat(docs)
	if err != nil {
		return fmt.Errorf("--docs: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("--docs %s: not a directory", docs)
	}
	pages := []string{"claims.md"}
	for _, p := range claims.Papers {
		pages = append(pages, claims.DocFor[p])
	}
	for _, p := range pages {
		if _, err := os.Stat(filepath.Join(docs, p)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("--docs %s: holds none of the pages lab claims writes (%s); \"-\" writes none", docs, strings.Join(pages, ", "))
}

func spliceIfThere(path, name, block string) error {
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	return claims.Splice(path, name, block)
}
