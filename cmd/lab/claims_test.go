package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/claims"
)

// lab claims on a small tree: two specs, two seeds. The row whose source names the tree's group gets
// the tree's paired numbers (a and b are the same fabric and flows, so the reduction is exactly 0 with a
// [0, 0] interval) and the verdict the rule gives them; a row of another experiment keeps its stored
// numbers; the pages get the generated tables between their markers.
func TestClaimsFromTree(t *testing.T) {
	dir := t.TempDir()
	a := writeTreeSpec(t, dir, "a", "virtual", "")
	b := writeTreeSpec(t, dir, "b", "virtual", "")
	sweepFlags.seeds, sweepFlags.sets, sweepFlags.jobs = 2, nil, 0
	defer func() { sweepFlags.seeds = 0 }()
	files := []string{a, b}
	runs, err := planRuns(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(dir, "tree")
	if err := runTree(context.Background(), io.Discard, runs, tree, 2, true); err != nil {
		t.Fatal(err)
	}
	// The tree's specs live in dir, so the experiment a row names is dir's base name.
	exp := filepath.Base(dir)
	table := `[
 {"id": "portfc-6.1", "paper": "portfc", "claim": "same fabric, same flows", "published": "0%", "kind": "band", "band": [-1, 1], "unit": "%",
  "metric": "avg FCT reduction", "definition": "paired by seed", "measured_mean": 42, "ci95": [40, 44], "seeds": 5, "topology_seeds": 1,
  "command": "lab run", "source": {"experiment": "` + exp + `", "group": "a", "metric": "reduction:fct_avg_s:b"}, "verdict": "", "rule": "", "why": ""},
 {"id": "portfc-6.2", "paper": "portfc", "claim": "stored elsewhere", "published": "1x", "kind": "point", "band": [1, 1], "unit": "x", "direction": ">0",
  "metric": "m", "definition": "d", "measured_mean": 3, "ci95": [2, 4], "seeds": 5, "topology_seeds": 1,
  "command": "lab run", "source": {"experiment": "another-experiment", "group": "a", "metric": "reduction:fct_avg_s:b"}, "verdict": "R", "rule": "", "why": ""},
 {"id": "portfc-6.3", "paper": "portfc", "claim": "baseline in another tree", "published": "1x", "kind": "point", "band": [1, 1], "unit": "x",
  "metric": "m", "definition": "d", "measured_mean": 5, "ci95": [4, 6], "seeds": 5, "topology_seeds": 1,
  "command": "lab run", "source": {"experiment": "` + exp + `", "group": "a", "metric": "reduction:fct_avg_s:zzz"}, "verdict": "", "rule": "", "why": ""}
]`
	docs := filepath.Join(dir, "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(docs, "claims.json")
	begin, end := claims.Markers("portfc")
	page := filepath.Join(docs, "portfc.md")
	for p, text := range map[string]string{in: table, page: "# PortFC\n\n" + begin + "\nold table\n" + end + "\nafter\n"} {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	if err := runClaims(&out, in, in, docs, []string{tree}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "refreshed 1 rows portfc-6.1") {
		t.Errorf("output: %s", out.String())
	}
	var cs []claims.Claim
	bs, _ := os.ReadFile(in)
	if err := json.Unmarshal(bs, &cs); err != nil {
		t.Fatal(err)
	}
	got := map[string]claims.Claim{}
	for _, c := range cs {
		got[c.ID] = c
	}
	r := got["portfc-6.1"]
	if r.MeasuredMean == nil || *r.MeasuredMean != 0 || len(r.CI95) != 2 || r.CI95[0] != 0 || r.CI95[1] != 0 || r.Seeds != 2 || r.Verdict != "R" {
		t.Errorf("refreshed row: mean %v ci %v seeds %d verdict %s (%s)", r.MeasuredMean, r.CI95, r.Seeds, r.Verdict, r.Rule)
	}
	// Stored numbers stay; the stored verdict is replaced by the rule's (3 is outside 1 ±10%, the
	// direction holds).
	if s := got["portfc-6.2"]; *s.MeasuredMean != 3 || s.Verdict != "O" {
		t.Errorf("stored row: mean %v verdict %s", *s.MeasuredMean, s.Verdict)
	}
	// A row pairing with a baseline this tree lacks keeps its numbers.
	if s := got["portfc-6.3"]; *s.MeasuredMean != 5 || s.Seeds != 5 {
		t.Errorf("row without its baseline here: mean %v seeds %d", *s.MeasuredMean, s.Seeds)
	}
	pb, _ := os.ReadFile(page)
	if p := string(pb); strings.Contains(p, "old table") || !strings.Contains(p, "| portfc-6.1 |") || !strings.HasSuffix(p, end+"\nafter\n") {
		t.Errorf("page not regenerated:\n%s", p)
	}
}

// lab claims DIR where DIR holds lab analyze outputs, not a run tree: the row whose analyze glob
// matches is refreshed; an empty directory (a mistyped path) is an error, not a silent no-op.
func TestClaimsFromAnalyzeOutputs(t *testing.T) {
	dir := t.TempDir()
	for i, x := range []string{"0.25", "0.35"} {
		p := filepath.Join(dir, "lp", "n400-t"+string(rune('1'+i))+".json")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"lp_throughput": `+x+`}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := filepath.Join(dir, "claims.json")
	table := `[{"id": "fcplus-11.1", "paper": "fcplus", "claim": "c", "published": "0.3", "kind": "point", "band": [0.3, 0.3],
  "metric": "m", "definition": "d", "measured_mean": 1, "ci95": null, "seeds": 1, "topology_seeds": 1, "command": "lab analyze",
  "source": {"analyze": "lp/n400-t*.json", "field": "lp_throughput"}, "verdict": "", "rule": "", "why": ""}]`
	if err := os.WriteFile(in, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := runClaims(&out, in, in, "-", []string{dir}); err != nil {
		t.Fatal(err)
	}
	cs, err := claims.Load(in)
	if err != nil {
		t.Fatal(err)
	}
	if c := cs[0]; c.MeasuredMean == nil || *c.MeasuredMean != 0.3 || len(c.CI95) != 2 || c.TopologySeeds != 2 {
		t.Errorf("refreshed row: mean %v ci %v topology seeds %d (%s)", c.MeasuredMean, c.CI95, c.TopologySeeds, out.String())
	}
	err = runClaims(&out, in, in, "-", []string{t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "not a run tree") {
		t.Errorf("empty directory: %v", err)
	}
}

// The analyze outputs stored in docs/claims-data are the numbers behind the table's analyze-sourced
// rows: lab claims over them must give docs/claims.json back byte for byte, so a row edited by hand,
// or refreshed from outputs that were not stored, fails here.
func TestStoredAnalyzeOutputsGiveTheTable(t *testing.T) {
	want, err := os.ReadFile("../../docs/claims.json")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := claims.Load("../../docs/claims.json")
	if err != nil {
		t.Fatal(err)
	}
	prov := ""
	for _, c := range cs {
		if c.Source != nil && c.Source.Analyze != "" {
			if prov != "" && c.Provenance != prov {
				t.Fatalf("%s: provenance %q differs from the other analyze rows' %q", c.ID, c.Provenance, prov)
			}
			prov = c.Provenance
		}
	}
	if prov == "" {
		t.Fatal("no row reads analyze outputs")
	}
	in := filepath.Join(t.TempDir(), "claims.json")
	if err := os.WriteFile(in, want, 0o644); err != nil {
		t.Fatal(err)
	}
	old := claimsFlags.provenance
	claimsFlags.provenance = prov
	defer func() { claimsFlags.provenance = old }()
	var out strings.Builder
	if err := runClaims(&out, in, in, "-", []string{"../../docs/claims-data"}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("lab claims docs/claims-data does not reproduce docs/claims.json (%s)", out.String())
	}
}
