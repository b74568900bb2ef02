package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/bounded"
	"github.com/fabriclab/fabriclab/claims"
	"github.com/fabriclab/fabriclab/report"
)

var claimsFlags struct {
	in, out, docs, provenance string
	commit                    string
	replace, rebuild          bool
	rows                      []string
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
Stored under docs/claims-data/, it lets rows be refreshed without the trees.

Every refreshed row records the build its numbers were measured at (--commit, default this binary's
revision; a per-seed file's own). A refresh that would replace a row's numbers with ones measured on
fewer samples (seeds x topology seeds) or at another commit than the row's is refused, and nothing is
written, unless --replace says so; --rebuild allows only the commit to change (a re-run of a stale row
on this build, on at least as many samples). Provenance names directories relative to the working directory
(or by their base name), never by an absolute path.`,
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
	claimsCmd.Flags().StringVar(&claimsFlags.commit, "commit", "", "the build the trees and outputs were made with (default: this binary's revision)")
	claimsCmd.Flags().StringSliceVar(&claimsFlags.rows, "rows", nil, "refresh only the rows whose id matches one of these patterns (path.Match: portfc-6.*); the others keep their numbers")
	claimsCmd.Flags().BoolVar(&claimsFlags.replace, "replace", false, "replace rows even with numbers from fewer seeds or another commit")
	claimsCmd.Flags().BoolVar(&claimsFlags.rebuild, "rebuild", false, "replace rows measured at another commit by a re-run on this build (--commit), still refusing fewer samples")
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
		prov = "run trees " + shownPaths(trees) + " at " + refreshCommit()
	}
	f, err := claims.NewSeedFile(t, metrics, prov)
	if err != nil {
		return fmt.Errorf("--save-seeds: %w", err)
	}
	f.Commit = refreshCommit()
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
	old := append([]claims.Claim(nil), cs...)
	if err := refreshClaims(w, cs, trees); err != nil {
		return err
	}
	if err := keepRowsNotAsked(old, cs, claimsFlags.rows); err != nil {
		return err
	}
	if err := refusedReplacements(old, cs, claimsFlags.replace, claimsFlags.rebuild); err != nil {
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
	commit := refreshCommit()
	prov := claimsFlags.provenance
	if prov == "" {
		prov = "lab analyze outputs under " + shownPaths(dirs) + " at " + commit
	}
	had := map[string]int{}
	for _, c := range cs {
		had[c.ID] = c.TopologySeeds
	}
	ids, read, err := claims.UpdateAnalyze(cs, dirs, prov)
	if err != nil {
		return err
	}
	setCommit(cs, ids, commit)
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
	var fromAnalyze []string // a seeds term's commit is its file's (UpdateCounts)
	for _, c := range cs {
		if slices.Contains(ids, c.ID) && countReadsAnalyzeOnly(c.Source) {
			fromAnalyze = append(fromAnalyze, c.ID)
		}
	}
	setCommit(cs, fromAnalyze, commit)
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
	commit := refreshCommit()
	prov := claimsFlags.provenance
	if prov == "" {
		prov = "run tree " + shownPaths([]string{dir}) + " at " + commit
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
	setCommit(cs, ids, commit)
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

// refreshCommit is the build refreshed rows are recorded at: --commit, else this binary's revision
// (12 hex digits, "-dirty" when built from a modified tree; "" when the binary does not know it).
func refreshCommit() string {
	if claimsFlags.commit != "" {
		return claimsFlags.commit
	}
	return buildRevision()
}

// setCommit records commit on the rows ids names.
func setCommit(cs []claims.Claim, ids []string, commit string) {
	for i := range cs {
		if slices.Contains(ids, cs[i].ID) {
			cs[i].Commit = commit
		}
	}
}

// countReadsAnalyzeOnly says whether a count source's file terms are all lab analyze outputs.
func countReadsAnalyzeOnly(s *claims.Source) bool {
	any := false
	for _, t := range s.Count {
		switch {
		case t.Seeds != "":
			return false
		case t.Analyze != "":
			any = true
		}
	}
	return any
}

// keepRowsNotAsked puts back the rows before the refresh of every row whose id matches none of
// patterns (none given: every row keeps its refresh).
func keepRowsNotAsked(old, cs []claims.Claim, patterns []string) error {
	if len(patterns) == 0 {
		return nil
	}
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("--rows %q: %w", p, err)
		}
	}
	for i := range cs {
		asked := false
		for _, p := range patterns {
			if ok, _ := path.Match(p, cs[i].ID); ok {
				asked = true
			}
		}
		if !asked {
			cs[i] = old[i]
		}
	}
	return nil
}

// refusedReplacements compares every row after a refresh with the row before: numbers from fewer
// samples (seeds x topology seeds) than the row had, or measured at another commit than the row's,
// are refused (unless replace), so a quick re-run on a few seeds, or on another build, never silently
// takes the place of a longer one. rebuild lets the commit change (a re-run on the current build is
// what a stale row needs) but not the samples shrink.
func refusedReplacements(old, cs []claims.Claim, replace, rebuild bool) error {
	if replace {
		return nil
	}
	before := map[string]claims.Claim{}
	for _, c := range old {
		before[c.ID] = c
	}
	var refused []string
	for _, c := range cs {
		b, ok := before[c.ID]
		if !ok || b.MeasuredMean == nil || (c.Provenance == b.Provenance && c.Commit == b.Commit && c.Seeds == b.Seeds && c.TopologySeeds == b.TopologySeeds) {
			continue // new, never measured, or not refreshed
		}
		if n, m := c.Seeds*max(c.TopologySeeds, 1), b.Seeds*max(b.TopologySeeds, 1); n < m {
			refused = append(refused, fmt.Sprintf("%s: %d samples (seeds x topology seeds), the table has %d", c.ID, n, m))
		}
		if b.Commit != "" && c.Commit != b.Commit && !rebuild {
			refused = append(refused, fmt.Sprintf("%s: measured at %q, the table's numbers at %q", c.ID, c.Commit, b.Commit))
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("refusing to replace %d row(s) (--replace to replace them; nothing written):\n  %s", len(refused), strings.Join(refused, "\n  "))
	}
	return nil
}

// shownPaths is how provenance names directories: relative to the working directory when under it,
// else by base name; never an absolute path (it would name this machine, not the inputs).
func shownPaths(dirs []string) string {
	wd, _ := os.Getwd()
	out := make([]string, len(dirs))
	for i, d := range dirs {
		out[i] = filepath.Base(filepath.Clean(d))
		if !filepath.IsAbs(d) && !strings.HasPrefix(filepath.Clean(d), "..") {
			out[i] = filepath.Clean(d)
		} else if rel, err := filepath.Rel(wd, d); err == nil && wd != "" && filepath.IsAbs(d) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			out[i] = rel
		}
	}
	return strings.Join(out, " ")
}
