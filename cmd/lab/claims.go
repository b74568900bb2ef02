package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/claims"
	"github.com/fabriclab/fabriclab/report"
)

var claimsFlags struct {
	in, out, docs, provenance string
}

var claimsCmd = &cobra.Command{
	Use:   "claims [TREE...]",
	Short: "refresh docs/claims.json from run trees, re-judge every claim by the strict rule, regenerate the docs tables",
	Long: `lab claims reads the claims table (--in, default docs/claims.json). Every row whose source names a
group (spec name and sweep point, as lab report labels it) of one of the run trees given gets its mean,
95% interval and seed count from that tree (reduction:/ratio: forms paired by seed). Then every row is
re-judged by the strict rule (docs/claims.md) and the table is written to -o (default: --in), and the
generated tables are written into the pages under --docs (default: the directory of -o): claims.md
and each paper's page, between its claims markers.`,
	RunE: func(cmd *cobra.Command, args []string) error {
		out := claimsFlags.out
		if out == "" {
			out = claimsFlags.in
		}
		docs := claimsFlags.docs
		if docs == "" {
			docs = filepath.Dir(out)
		}
		return runClaims(cmd.OutOrStdout(), claimsFlags.in, out, docs, args)
	},
}

func init() {
	claimsCmd.Flags().StringVar(&claimsFlags.in, "in", "docs/claims.json", "the claims table to read")
	claimsCmd.Flags().StringVarP(&claimsFlags.out, "out", "o", "", "where to write it (default: --in)")
	claimsCmd.Flags().StringVar(&claimsFlags.docs, "docs", "", "the docs directory whose pages get the generated tables (default: the directory of -o; \"-\": none)")
	claimsCmd.Flags().StringVar(&claimsFlags.provenance, "provenance", "", "what refreshed rows say about where their numbers come from (default: the trees' paths)")
	root.AddCommand(claimsCmd)
}

// runClaims is lab claims: load, refresh from trees, re-judge, save, regenerate the pages.
func runClaims(w interface{ Write([]byte) (int, error) }, in, out, docs string, trees []string) error {
	cs, err := claims.Load(in)
	if err != nil {
		return err
	}
	before := counts(cs)
	for _, dir := range trees {
		t, err := report.LoadTrees([]string{dir})
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		prov := claimsFlags.provenance
		if prov == "" {
			prov = "run tree " + dir
		}
		var m report.Manifest
		if b, err := os.ReadFile(filepath.Join(dir, report.ManifestFile)); err == nil {
			if err := json.Unmarshal(b, &m); err != nil {
				return fmt.Errorf("%s: %w", dir, err)
			}
		}
		ids, err := claims.Update(cs, t, m.Specs, prov)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		fmt.Fprintf(w, "%s: refreshed %d rows %s\n", dir, len(ids), strings.Join(ids, " "))
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

func spliceIfThere(path, name, block string) error {
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	return claims.Splice(path, name, block)
}
