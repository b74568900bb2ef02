package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
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
	tree := runSmallTree(t, dir, false)
	// The tree's specs live in dir, so the experiment a row names is dir's base name.
	exp := filepath.Base(dir)
	table := `[
 {"id": "portfc-6.1", "paper": "portfc", "claim": "same fabric, same flows", "published": "0%", "kind": "band", "band": [-1, 1], "unit": "%",
  "metric": "avg FCT reduction", "definition": "paired by seed", "measured_mean": 42, "ci95": [40, 44], "seeds": 2, "topology_seeds": 1,
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

// runSmallTree runs specs a and b (the same fabric and flows) for two seeds into dir/tree; with rail,
// on the Rail-only NDC, whose links are classed hbd and rail.
func runSmallTree(t *testing.T, dir string, rail bool) string {
	t.Helper()
	a := writeTreeSpec(t, dir, "a", "virtual", "")
	b := writeTreeSpec(t, dir, "b", "virtual", "")
	for _, p := range []string{a, b} {
		if !rail {
			continue
		}
		bs, err := os.ReadFile(p)
		if err == nil {
			err = os.WriteFile(p, []byte(strings.Replace(string(bs), "k: 1,", "k: 1, rail: true,", 1)), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	sweepFlags.seeds, sweepFlags.sets, sweepFlags.jobs = 2, nil, 0
	defer func() { sweepFlags.seeds = 0 }()
	runs, err := planRuns(context.Background(), []string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(dir, "tree")
	if err := runTree(context.Background(), io.Discard, runs, tree, 2, true); err != nil {
		t.Fatal(err)
	}
	return tree
}

// lab claims --save-seeds cuts a run tree down to per-seed values; lab claims over the directory
// holding that file (no run tree) refreshes a row reading it and recomputes a count row from it: a over
// b is exactly 1 in both seeds, so "[0.9, 1.1]" holds and "<1" is one violation. A metric the runs do
// not have is refused when the file is written, not when it is read.
func TestClaimsFromSeedFile(t *testing.T) {
	dir := t.TempDir()
	tree := runSmallTree(t, dir, true)
	data := filepath.Join(dir, "data")
	old := claimsFlags.provenance
	claimsFlags.provenance = "re-run by the test"
	defer func() { claimsFlags.provenance = old }()
	var out strings.Builder
	if err := saveSeeds(&out, filepath.Join(data, "runs/t.json"), []string{"fct_avg_s", "link_util.hbd"}, []string{tree}); err != nil {
		t.Fatal(err)
	}
	if err := saveSeeds(&out, filepath.Join(data, "runs/bad.json"), []string{"fct_avg"}, []string{tree}); err == nil || !strings.Contains(err.Error(), `no metric "fct_avg"`) {
		t.Errorf("unknown metric: %v", err)
	}
	in := filepath.Join(dir, "claims.json")
	seeds := `"seeds": "runs/t.json", "group": "a", "over": "b", "metric": "fct_avg_s"`
	table := `[
 {"id": "expander-1", "paper": "expander", "claim": "c", "published": "1", "kind": "point", "band": [1, 1], "unit": "x",
  "metric": "m", "definition": "d", "measured_mean": 5, "ci95": null, "seeds": 2, "topology_seeds": 1, "command": "lab run",
  "source": {` + seeds + `}, "verdict": "", "rule": "", "why": ""},
 {"id": "expander-2", "paper": "expander", "claim": "c", "published": "order", "kind": "count",
  "metric": "m", "definition": "d", "measured_mean": 0, "ci95": null, "seeds": 1, "topology_seeds": 1, "command": "lab run",
  "source": {"count": [{` + seeds + `, "holds": "[0.9, 1.1]"}, {` + seeds + `, "holds": "<1"},
   {"seeds": "runs/t.json", "group": "a", "metric": "link_util.hbd", "holds": ">0"}]}, "verdict": "", "rule": "", "why": ""}
]`
	if err := os.WriteFile(in, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runClaims(&out, in, in, "-", []string{data}); err != nil {
		t.Fatal(err)
	}
	cs, err := claims.Load(in)
	if err != nil {
		t.Fatal(err)
	}
	if c := cs[0]; *c.MeasuredMean != 1 || len(c.CI95) != 2 || c.CI95[1] != 1 || c.Seeds != 2 || c.Provenance != "re-run by the test" || c.Verdict != "R" {
		t.Errorf("seeds row: mean %v ci %v seeds %d provenance %q verdict %s", *c.MeasuredMean, c.CI95, c.Seeds, c.Provenance, c.Verdict)
	}
	if c := cs[1]; *c.MeasuredMean != 1 || c.Seeds != 2 || c.Verdict != "N" || !strings.Contains(c.Counted, "fails <1") {
		t.Errorf("count row: %v violations, seeds %d, verdict %s, counted %q (%s)", *c.MeasuredMean, c.Seeds, c.Verdict, c.Counted, out.String())
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

// The inputs stored in docs/claims-data (lab analyze outputs, per-seed files cut from run trees) are the
// numbers behind the table's analyze, seeds and count rows: lab claims over them must give
// docs/claims.json back byte for byte, so a row edited by hand, or refreshed from inputs that were not
// stored, fails here; and every such row must be refreshed from them, none left standing on its own.
// Analyze rows measured at different times carry different provenance and commits: each such group is
// refreshed with its own (--rows, --provenance, --commit), one after the other.
func TestStoredAnalyzeOutputsGiveTheTable(t *testing.T) {
	want, err := os.ReadFile("../../docs/claims.json")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := claims.Load("../../docs/claims.json")
	if err != nil {
		t.Fatal(err)
	}
	type origin struct{ prov, commit string }
	groups := map[origin][]string{}
	var others, stored []string // rows read from docs/claims-data whose provenance is their file's
	for _, c := range cs {
		if c.Source == nil || c.MeasuredMean == nil {
			continue
		}
		if c.Source.Seeds != "" || len(c.Source.Count) > 0 {
			stored = append(stored, c.ID)
		}
		switch {
		case c.Source.Analyze != "" || countReadsAnalyzeOnly(c.Source):
			o := origin{c.Provenance, c.Commit}
			groups[o] = append(groups[o], c.ID)
		case c.Source.Seeds != "" || len(c.Source.Count) > 0:
			others = append(others, c.ID)
		}
	}
	if len(groups) == 0 {
		t.Fatal("no row reads analyze outputs")
	}
	keys := make([]origin, 0, len(groups))
	for o := range groups {
		keys = append(keys, o)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].prov+keys[i].commit < keys[j].prov+keys[j].commit })
	oldCommit, oldRows := claimsFlags.commit, claimsFlags.rows
	defer func() { claimsFlags.commit, claimsFlags.rows = oldCommit, oldRows }()
	got, outs := string(want), ""
	for i, o := range keys {
		claimsFlags.commit, claimsFlags.rows = o.commit, groups[o]
		if i == 0 {
			claimsFlags.rows = append(append([]string(nil), groups[o]...), others...)
		}
		var out string
		got, out = claimsOver(t, []byte(got), o.prov, "../../docs/claims-data")
		outs += out
	}
	if got != string(want) {
		t.Errorf("lab claims docs/claims-data does not reproduce docs/claims.json (%s)", outs)
	}
	said := map[string]bool{} // lab claims names every row it refreshed
	for _, w := range strings.Fields(outs) {
		said[w] = true
	}
	for _, id := range stored {
		if !said[id] {
			t.Errorf("%s was not refreshed from docs/claims-data (%s)", id, outs)
		}
	}
}

// claimsOver runs lab claims over data on a copy of table with --provenance prov, and returns the table
// it writes and what it printed.
func claimsOver(t *testing.T, table []byte, prov, data string) (string, string) {
	t.Helper()
	in := filepath.Join(t.TempDir(), "claims.json")
	if err := os.WriteFile(in, table, 0o644); err != nil {
		t.Fatal(err)
	}
	old := claimsFlags.provenance
	claimsFlags.provenance = prov
	defer func() { claimsFlags.provenance = old }()
	var out strings.Builder
	if err := runClaims(&out, in, in, "-", []string{data}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	return string(got), out.String()
}

// A changed stored input changes the table, so the test above would fail: one seed's average FCT in a
// per-seed file moves an expander ordering step, a cycle in one DF-KSP instance is a violation of
// fcplus-1; in the Fibre Channel class analyses, a cycle in a chordal graph and none in a jellyfish
// under all shortest paths are two violations of fibre-channel-2.2, and a tree as good as a chordal
// graph moves 7.1 and breaks the class order (7.5).
func TestStoredInputsAreRead(t *testing.T) {
	want, err := os.ReadFile("../../docs/claims.json")
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "claims-data")
	if err := os.CopyFS(data, os.DirFS("../../docs/claims-data")); err != nil {
		t.Fatal(err)
	}
	seeds := filepath.Join(data, "runs/expander-uniform.json")
	bs, err := os.ReadFile(seeds)
	if err != nil {
		t.Fatal(err)
	}
	var f claims.SeedFile
	if err := json.Unmarshal(bs, &f); err != nil {
		t.Fatal(err)
	}
	f.Groups["xpl-ecmp"].Metrics["fct_avg_s"][0] *= 2
	if err := f.Save(seeds); err != nil {
		t.Fatal(err)
	}
	setField(t, filepath.Join(data, "fcplus-small/dfksp-1l-n16-t1.json"), "cbd_cycles", map[string]any{"0": 1})
	setField(t, filepath.Join(data, "fc-classes/chordal-t3.json"), "cbd_cycles", map[string]any{"0": 2})
	setField(t, filepath.Join(data, "fc-classes/free-t2.json"), "cbd_cycles", map[string]any{"0": 0})
	setField(t, filepath.Join(data, "fc-classes/tree-t1.json"), "lp_throughput", 0.3)
	claimsFlags.replace = true // rows measured at a commit are refreshed here from the changed inputs
	defer func() { claimsFlags.replace = false }()
	got, out := claimsOver(t, want, "", data)
	var cs []claims.Claim
	if err := json.Unmarshal([]byte(got), &cs); err != nil {
		t.Fatal(err)
	}
	old, err := claims.Load("../../docs/claims.json")
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]claims.Claim{}
	for _, c := range old {
		before[c.ID] = c
	}
	checked := 0
	for _, c := range cs {
		switch c.ID {
		case "expander-4.1", "fcplus-1", "fibre-channel-2.2", "fibre-channel-7.1", "fibre-channel-7.5":
			checked++
		}
		switch c.ID {
		case "expander-4.1":
			if c.Counted == before[c.ID].Counted {
				t.Errorf("expander-4.1 unchanged by a changed seed: %s (%s)", c.Counted, out)
			}
		case "fcplus-1":
			if *c.MeasuredMean != 1 || c.Verdict != "N" {
				t.Errorf("fcplus-1 with a cycle: %v violations, verdict %s (%s)", *c.MeasuredMean, c.Verdict, out)
			}
		case "fibre-channel-2.2":
			if *c.MeasuredMean != 2 || c.Verdict != "N" {
				t.Errorf("fibre-channel-2.2 with a chordal cycle and an acyclic jellyfish: %v violations, verdict %s (%s)", *c.MeasuredMean, c.Verdict, c.Counted)
			}
		case "fibre-channel-7.1":
			if *c.MeasuredMean == *before[c.ID].MeasuredMean {
				t.Errorf("fibre-channel-7.1 unchanged by a changed tree: %v", *c.MeasuredMean)
			}
		case "fibre-channel-7.5":
			if *c.MeasuredMean < 1 || c.Verdict != "N" {
				t.Errorf("fibre-channel-7.5 with a tree as good as a chordal graph: %v violations, verdict %s (%s)", *c.MeasuredMean, c.Verdict, c.Counted)
			}
		}
	}
	if checked != 5 {
		t.Fatalf("%d of the 5 rows this test changes the inputs of are in the table: a row was renamed or removed", checked)
	}
}

// setField sets one top-level field of a JSON object file.
func setField(t *testing.T, path, key string, v any) {
	t.Helper()
	bs, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var a map[string]any
	if err := json.Unmarshal(bs, &a); err != nil {
		t.Fatal(err)
	}
	a[key] = v
	if bs, err = json.Marshal(a); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bs, 0o644); err != nil {
		t.Fatal(err)
	}
}

// lab claims TREE refuses to replace a row's numbers with ones from fewer seeds (the main job's 5-seed
// tree over rows measured on 30) or from another build, and writes nothing; --replace lets it. The
// provenance it writes names the tree without an absolute path.
func TestClaimsRefusesDowngrade(t *testing.T) {
	dir := t.TempDir()
	tree := runSmallTree(t, dir, false) // two seeds
	exp := filepath.Base(dir)
	row := func(id string, seeds int, commit string) string {
		return `{"id": "` + id + `", "paper": "portfc", "claim": "c", "published": "0%", "kind": "band", "band": [-1, 1], "unit": "%",
  "metric": "m", "definition": "d", "measured_mean": 42, "ci95": [40, 44], "seeds": ` + fmt.Sprint(seeds) + `, "topology_seeds": 1,
  "command": "lab run", "source": {"experiment": "` + exp + `", "group": "a", "metric": "reduction:fct_avg_s:b"}, "commit": "` + commit + `", "verdict": "", "rule": "", "why": ""}`
	}
	old := claimsFlags.commit
	defer func() { claimsFlags.commit, claimsFlags.replace = old, false }()
	claimsFlags.commit = "abc"
	cases := []struct {
		name, table, refused string
	}{
		{"fewer seeds", "[" + row("portfc-6.1", 30, "abc") + "]", "2 samples (seeds x topology seeds), the table has 30"},
		{"another commit", "[" + row("portfc-6.1", 2, "0ld") + "]", `measured at "abc", the table's numbers at "0ld"`},
	}
	for _, tc := range cases {
		in := filepath.Join(dir, "claims.json")
		if err := os.WriteFile(in, []byte(tc.table), 0o644); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		claimsFlags.replace = false
		err := runClaims(&out, in, in, "-", []string{tree})
		if err == nil || !strings.Contains(err.Error(), tc.refused) {
			t.Errorf("%s: %v, want refused: %s", tc.name, err, tc.refused)
		}
		if b, _ := os.ReadFile(in); string(b) != tc.table {
			t.Errorf("%s: the table was written though refused", tc.name)
		}
		claimsFlags.replace = true
		if err := runClaims(&out, in, in, "-", []string{tree}); err != nil {
			t.Fatalf("%s with --replace: %v", tc.name, err)
		}
		cs, err := claims.Load(in)
		if err != nil {
			t.Fatal(err)
		}
		if c := cs[0]; c.Seeds != 2 || c.Commit != "abc" || *c.MeasuredMean != 0 || strings.Contains(c.Provenance, dir) || !strings.Contains(c.Provenance, "tree at abc") {
			t.Errorf("%s with --replace: seeds %d commit %q mean %v provenance %q", tc.name, c.Seeds, c.Commit, *c.MeasuredMean, c.Provenance)
		}
	}
	// --rows leaves the rows it does not name as they were: the 30-seed row is neither refused nor
	// replaced when only other rows are asked for.
	in := filepath.Join(dir, "claims.json")
	table := "[" + row("portfc-6.1", 30, "abc") + "]"
	if err := os.WriteFile(in, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	claimsFlags.replace, claimsFlags.rows = false, []string{"portfc-7.*"}
	defer func() { claimsFlags.rows = nil }()
	var out strings.Builder
	if err := runClaims(&out, in, in, "-", []string{tree}); err != nil {
		t.Fatalf("--rows portfc-7.*: %v", err)
	}
	cs, err := claims.Load(in)
	if err != nil {
		t.Fatal(err)
	}
	if c := cs[0]; c.Seeds != 30 || *c.MeasuredMean != 42 {
		t.Errorf("--rows portfc-7.*: the unnamed row changed: seeds %d mean %v", c.Seeds, *c.MeasuredMean)
	}
}

// --rebuild replaces a row measured at another commit by the re-run on this build, but still refuses
// one on fewer samples: the stale-row driver (scripts/claims-rerun.sh) never shrinks a row.
func TestClaimsRebuildKeepsSampleRule(t *testing.T) {
	dir := t.TempDir()
	tree := runSmallTree(t, dir, false) // two seeds
	exp := filepath.Base(dir)
	row := func(seeds int) string {
		return `[{"id": "portfc-6.1", "paper": "portfc", "claim": "c", "published": "0%", "kind": "band", "band": [-1, 1], "unit": "%",
  "metric": "m", "definition": "d", "measured_mean": 42, "ci95": [40, 44], "seeds": ` + fmt.Sprint(seeds) + `, "topology_seeds": 1,
  "command": "lab run", "source": {"experiment": "` + exp + `", "group": "a", "metric": "reduction:fct_avg_s:b"}, "commit": "0ld", "verdict": "", "rule": "", "why": ""}]`
	}
	old := claimsFlags.commit
	defer func() { claimsFlags.commit, claimsFlags.rebuild = old, false }()
	claimsFlags.commit, claimsFlags.rebuild = "abc", true
	in := filepath.Join(dir, "claims.json")
	for _, tc := range []struct {
		seeds   int
		refused string // "" = replaced
	}{{2, ""}, {30, "2 samples (seeds x topology seeds), the table has 30"}} {
		if err := os.WriteFile(in, []byte(row(tc.seeds)), 0o644); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		err := runClaims(&out, in, in, "-", []string{tree})
		cs, lerr := claims.Load(in)
		if lerr != nil {
			t.Fatal(lerr)
		}
		switch {
		case tc.refused == "" && (err != nil || cs[0].Commit != "abc" || cs[0].Seeds != 2):
			t.Errorf("--rebuild, %d seeds at 0ld: %v, commit %q seeds %d; want replaced at abc", tc.seeds, err, cs[0].Commit, cs[0].Seeds)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused) || cs[0].Commit != "0ld"):
			t.Errorf("--rebuild, %d seeds at 0ld: %v, commit %q; want refused: %s", tc.seeds, err, cs[0].Commit, tc.refused)
		}
	}
}
