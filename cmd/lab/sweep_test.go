package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/report"
)

const treeSpec = `
name: NAME
backend: BACKEND
topology: {family: ndc, n: 2, k: 1, link: {rate: 100Gbps, delay: 1us}}
switch: {buffer: 5MB, flow_control: pfc, xoff: 6bdp, xon: 4bdp}
host: {transport: lossless, cc: dcqcn, mtu: 1000}
routing: {algorithm: bcube}
workload:
  - {kind: poisson, name: web, cdf: websearch, load: 0.5, duration: 300us}
duration: 3ms
`

func writeTreeSpec(t *testing.T, dir, name, backend, extra string) string {
	t.Helper()
	p := filepath.Join(dir, name+".yaml")
	text := strings.NewReplacer("NAME", name, "BACKEND", backend).Replace(treeSpec) + extra
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunTreeAndAggregate: two specs x two loads x two seeds run side by side into one tree; a run of
// the tree is bit-for-bit the same run made alone; lab report aggregates the tree, pairing the
// cross-run expectation by seed and load.
func TestRunTreeAndAggregate(t *testing.T) {
	dir := t.TempDir()
	a := writeTreeSpec(t, dir, "a", "virtual", `expect:
  "reduction:fct_avg_s:b": {value: 0, unit: "%", source: "same fabric, same flows"}
  goodput_per_flow_all_bps: {value: 1e9, source: "made up"}
`)
	b := writeTreeSpec(t, dir, "b", "virtual", "")
	sweepFlags.seeds, sweepFlags.sets, sweepFlags.jobs = 2, []string{"workload.0.load=0.3,0.6"}, 0
	defer func() { sweepFlags.seeds, sweepFlags.sets = 0, nil }()
	files := []string{a, b}
	p, err := planRuns(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	if p.n != 8 || p.at(0).dir != filepath.Join("a", "workload.0.load=0.3", "seed-1") {
		t.Fatalf("%d runs, first %s", p.n, p.at(0).dir)
	}
	jobs, err := runJobs(p, 0)
	if err != nil || jobs < 1 {
		t.Fatal(jobs, err)
	}
	out := filepath.Join(dir, "tree")
	if err := runTree(context.Background(), io.Discard, p, out, max(jobs, 2), true); err != nil {
		t.Fatal(err)
	}
	var m report.Manifest
	mb, _ := os.ReadFile(filepath.Join(out, report.ManifestFile))
	if err := json.Unmarshal(mb, &m); err != nil || len(m.Runs) != 8 || m.Seeds != 2 || len(m.Axes) != 1 {
		t.Fatalf("manifest %s: %v", mb, err)
	}
	for _, r := range m.Runs {
		if r.Status != "done" {
			t.Errorf("%s: %s %s", r.Dir, r.Status, r.Error)
		}
	}
	// The same point run alone gives the same summary, byte for byte.
	last, err := p.make(7)
	if err != nil {
		t.Fatal(err)
	}
	alone := filepath.Join(dir, "alone")
	if _, _, err := runSpec(context.Background(), last.pt.Spec, alone); err != nil {
		t.Fatal(err)
	}
	s1, _ := os.ReadFile(filepath.Join(out, last.dir, report.SummaryFile))
	s2, _ := os.ReadFile(filepath.Join(alone, report.SummaryFile))
	if len(s1) == 0 || !bytes.Equal(s1, s2) {
		t.Errorf("%s differs from the same run alone", last.dir)
	}

	rep := filepath.Join(dir, "rep")
	if err := reportTree(io.Discard, []string{out}, rep, false); err != nil {
		t.Fatal(err)
	}
	var agg struct {
		Groups []struct {
			Label   string
			Seeds   []int64
			Metrics map[string]struct {
				N    int
				Mean float64
			}
		}
		Expectations []struct {
			Group, Metric, Verdict string
			N                      int
			Mean                   *float64
		}
	}
	ab, _ := os.ReadFile(filepath.Join(rep, "aggregate.json"))
	if err := json.Unmarshal(ab, &agg); err != nil {
		t.Fatal(err)
	}
	if len(agg.Groups) != 4 || agg.Groups[0].Label != "a workload.0.load=0.3" || len(agg.Groups[0].Seeds) != 2 {
		t.Fatalf("groups %+v", agg.Groups)
	}
	if g := agg.Groups[0].Metrics["goodput_per_flow_all_bps"]; g.N != 2 || g.Mean <= 0 {
		t.Errorf("goodput %+v", g)
	}
	// a and b are the same fabric and flows: paired by seed and load, the reduction is exactly 0.
	found := 0
	for _, e := range agg.Expectations {
		if e.Metric == "reduction:fct_avg_s:b" {
			found++
			if e.N != 2 || e.Mean == nil || *e.Mean != 0 {
				t.Errorf("%s: %+v", e.Group, e)
			}
		}
	}
	if found != 2 {
		t.Errorf("%d reduction rows, want one per load", found)
	}
	for _, f := range []string{"report.txt", "aggregate.csv", "sweep_fct_avg_s.png", "sweep_goodput_per_flow_all_bps.svg"} {
		if _, err := os.Stat(filepath.Join(rep, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestRunTreeRefusals: every run is checked before any runs, and netns runs are never parallel.
func TestRunTreeRefusals(t *testing.T) {
	dir := t.TempDir()
	a := writeTreeSpec(t, dir, "a", "virtual", "")
	defer func() { sweepFlags.seeds, sweepFlags.sets = 0, nil }()
	sweepFlags.seeds, sweepFlags.sets = 1, []string{"workload.0.load=0.5,1.5"}
	if _, err := planRuns(context.Background(), []string{a}); err == nil || !strings.Contains(err.Error(), "workload.0.load=1.5") {
		t.Errorf("bad sweep value: %v", err)
	}
	sweepFlags.sets = nil
	bad := writeTreeSpec(t, dir, "bad", "virtual", "expect: {avg_fct_reduction_vs_irn: {value: 1, source: x}}\n")
	if _, err := planRuns(context.Background(), []string{a, bad}); err == nil || !strings.Contains(err.Error(), "expect.avg_fct_reduction_vs_irn") {
		t.Errorf("unknown expect metric: %v", err)
	}
	if _, err := planRuns(context.Background(), []string{a, a}); err == nil || !strings.Contains(err.Error(), "both named") {
		t.Errorf("duplicate names: %v", err)
	}
	sweepFlags.seeds = -1
	if _, err := planRuns(context.Background(), []string{a}); err == nil || !strings.Contains(err.Error(), "--seeds -1") {
		t.Errorf("negative seeds: %v", err)
	}
	n := writeTreeSpec(t, dir, "n", "netns", "")
	sweepFlags.seeds = 2
	pn, err := planRuns(context.Background(), []string{n})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runJobs(pn, 2); err == nil || !strings.Contains(err.Error(), "one at a time") {
		t.Errorf("netns -j 2: %v", err)
	}
	if j, err := runJobs(pn, 0); err != nil || j != 1 {
		t.Errorf("netns default jobs %d %v", j, err)
	}
}

// TestShippedExpectKeys: every shipped experiment's expect: keys name metrics the report measures
// (lab run would refuse the spec otherwise).
func TestShippedExpectKeys(t *testing.T) {
	var files []string
	for _, g := range []string{"../../lab/experiments/*.yaml", "../../lab/experiments/*/*.yaml"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no shipped specs found")
	}
	for _, f := range files {
		s, err := spec.Load(f)
		if err != nil {
			continue // not a spec this test judges (other tests load them)
		}
		if err := report.CheckExpect(s.Expect); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestRepeatedSetRefused: a path given to two --set flags is refused naming it (the second silently
// replaced the first), and so is a value given twice on one axis (two runs, one directory).
func TestRepeatedSetRefused(t *testing.T) {
	dir := t.TempDir()
	a := writeTreeSpec(t, dir, "a", "virtual", "")
	defer func() { sweepFlags.seeds, sweepFlags.sets = 0, nil }()
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"duration=1ms,2ms", "duration=3ms"}, "path duration is already swept by --set duration=1ms,2ms"},
		{[]string{"workload.0.load=0.3", "workload[0].load=0.5"}, "path workload[0].load is already swept"},
		{[]string{"workload.0.load=0.3,0.3"}, `value "0.3" given twice`},
	} {
		sweepFlags.seeds, sweepFlags.sets = 1, c.sets
		if _, err := planRuns(context.Background(), []string{a}); err == nil || !strings.Contains(err.Error(), c.want) || exitCode(err) != exitUsage {
			t.Errorf("--set %v: %v, want %q (a usage error)", c.sets, err, c.want)
		}
	}
}

// TestSampleEveryWithinBudget: a sampling period that would record more queue samples than the work
// budget is refused naming the flag, when a tree is checked and before a single run starts (1ps on a
// 3 ms run ran out of memory).
func TestSampleEveryWithinBudget(t *testing.T) {
	dir := t.TempDir()
	a := writeTreeSpec(t, dir, "a", "virtual", "")
	s, err := spec.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { sampleEvery = 0 }()
	if err := sampleEvery.Set("1ps"); err != nil {
		t.Fatal(err)
	}
	want := "--sample-every 1ps: about 2.4e+10 queue samples (duration 3ms / 1ps x 8 switch ports), more than the budget of 1e+08; raise it with --budget samples=N"
	if err := checkRun(s); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("tree check: %v, want %q", err, want)
	}
	out := filepath.Join(dir, "out")
	if _, _, err := runSpec(context.Background(), s, out); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("run: %v, want %q", err, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s exists after the refusal: %v", out, err)
	}
	// A period the budget holds runs.
	if err := sampleEvery.Set("100us"); err != nil {
		t.Fatal(err)
	}
	if err := checkRun(s); err != nil {
		t.Error(err)
	}
}
