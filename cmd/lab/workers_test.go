package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
)

// identityBudget is the most expected frame-hops (netns.TrafficParts' estimate from the flows' sizes and
// routes) of a shipped spec TestWorkersByteIdentical runs three times: the 25 specs under it (most of
// lab/experiments/regression, the k=4 matched and identity scenarios) take 0.02-1 s of CPU each.
const identityBudget = 400_000

// identityHosts is the largest fabric (hosts) TestWorkersByteIdentical builds.
const identityHosts = 80

// TestWorkersByteIdentical: every shipped spec small enough (its first run: first sweep point, first
// seed), run with 1, 2 and 3 workers, writes the same run directory byte for byte, run.json included
// but for its wall time. A parallel run that fired one event in another order, ended at another event or
// merged a record elsewhere shows here.
func TestWorkersByteIdentical(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every small shipped spec three times")
	}
	root := filepath.Join("..", "..")
	var paths []string
	for _, dir := range []string{"lab/experiments", "suites"} {
		filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
				paths = append(paths, p)
			}
			return nil
		})
	}
	showProgress = false
	defer func() { workers = 0 }()
	ran := 0
	for _, path := range paths {
		e, err := spec.Plan(path, nil, 0)
		if err != nil {
			continue // not a spec (a cluster file, a fault plan), or one the suites feed in parts
		}
		pt, err := e.Point(0)
		if err != nil {
			continue
		}
		s := pt.Spec
		if s.Backend != "virtual" {
			s.Backend = "virtual" // the identity experiments run netns; their virtual twin runs here
		}
		// The topology alone first: routing a large fabric (FC+, Dragonfly D3) takes seconds.
		s.ApplyDefaults()
		family, params := s.TopologyParams()
		if g, err := lab.BuildTopology(family, params, lab.DefaultBudget); err != nil || len(g.Hosts) > identityHosts {
			continue
		}
		l, err := lab.Build(s)
		if err != nil || len(l.Flows) == 0 {
			continue
		}
		if _, cut := netns.TrafficPartsWithin(l, &netns.Dilated{Switches: l.Switches, Hosts: l.Hosts}, 2, virtual.SplitSlack); cut.Total > identityBudget {
			continue
		}
		rel, _ := filepath.Rel(root, path)
		t.Run(rel, func(t *testing.T) { sameForWorkers(t, s) })
		ran++
	}
	if ran < 20 {
		t.Fatalf("only %d shipped specs under the budget: the test no longer covers what it says", ran)
	}
	// Flows that wait for others, released in the part of the completion: the netns suite's parameter
	// server and MoE workloads (suites/netns end_test.go), on a fabric whose switches leave the workers
	// something to split (the shipped portfc-ps and portfc-rail-moe specs are over the budget).
	for name, yaml := range map[string]string{
		"ps": `
name: w-ps
topology: {family: fattree, k: 4}
switch: {flow_control: pfc}
host: {transport: lossless}
workload: [{kind: ps, server: h0, workers: 4, push_size: 200KB, broadcast_size: 100KB, rounds: 2}]
duration: 50ms`,
		"moe": `
name: w-moe
topology: {family: fattree, k: 4}
switch: {flow_control: pfc}
host: {transport: lossless}
workload: [{kind: moe, experts: 8, top_k: 2, tokens: 64, token_size: 4KB, zipf: 1.0, layers: 2}]
duration: 50ms`,
	} {
		t.Run(name, func(t *testing.T) {
			s, err := spec.Parse([]byte(yaml))
			if err != nil {
				t.Fatal(err)
			}
			s.Backend = "virtual"
			l, err := lab.Build(s)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{2, 3} {
				if _, split, err := newVirtualFabric(l, n); err != nil || !strings.Contains(split, "parts") || strings.HasPrefix(split, "1 ") {
					t.Fatalf("%d workers: split %q, %v: want the fabric in parts", n, split, err)
				}
			}
			sameForWorkers(t, s)
		})
	}
}

// sameForWorkers runs s with 1, 2 and 3 workers and compares the run directories byte for byte.
func sameForWorkers(t *testing.T, s *spec.Spec) {
	t.Helper()
	dir := t.TempDir()
	var want map[string][]byte
	for _, w := range []int{1, 2, 3} {
		workers = w
		out := filepath.Join(dir, fmt.Sprint("w", w))
		if _, _, err := runSpec(context.Background(), s, out); err != nil && !strings.Contains(err.Error(), "interrupted") {
			t.Fatalf("workers %d: %v", w, err)
		}
		got := readRunDir(t, out)
		if want == nil {
			want = got
			continue
		}
		for name, b := range want {
			if !bytes.Equal(got[name], b) {
				t.Errorf("workers %d: %s differs from 1 worker's:\n%s", w, name, firstDiff(b, got[name]))
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("workers %d: %s only with %d workers", w, name, w)
			}
		}
	}
}

var wallTime = regexp.MustCompile(`(?m)^\s*"wall_s": [^\n]*\n`)

// readRunDir reads every file of a run directory; run.json without its wall time.
func readRunDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "run.json" {
			b = wallTime.ReplaceAll(b, nil)
		}
		files[rel] = b
		return nil
	})
	if len(files) == 0 {
		t.Fatalf("%s: no run files", dir)
	}
	return files
}

// firstDiff shows the first line where b differs from a.
func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d: %s\n    vs: %s", i+1, la[i], lb[i])
		}
	}
	return "one is a prefix of the other"
}
