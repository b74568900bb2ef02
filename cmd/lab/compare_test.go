package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/report"
)

// compareTree runs tiny specs (by name) over two seeds into dir/tree with the given settings (--set).
func compareTree(t *testing.T, dir string, sets []string, names ...string) string {
	t.Helper()
	var files []string
	for _, n := range names {
		files = append(files, writeTreeSpec(t, dir, n, "virtual", ""))
	}
	sweepFlags.seeds, sweepFlags.sets, sweepFlags.jobs = 2, sets, 0
	defer func() { sweepFlags.seeds, sweepFlags.sets = 0, nil }()
	p, err := planRuns(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "tree")
	if err := runTree(context.Background(), io.Discard, p, out, 2, true); err != nil {
		t.Fatal(err)
	}
	return out
}

// copyTree copies a run tree (files and directories).
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCompareExitStatus: lab compare's exit status as its help says, on real run trees: 0 for a copy,
// 1 naming the run for each way NEW can lack what BASE has (a deleted run directory, a truncated
// summary.json, a value of 1e308 whose mean is +Inf), 3 for a change across a --set, 2 for a --pair
// naming no group. Each of these used to pass (exit 0) or exit 2.
func TestCompareExitStatus(t *testing.T) {
	base := compareTree(t, t.TempDir(), nil, "a", "b")
	seedDir := func(tree string, seed int) string { return filepath.Join(tree, "a", fmt.Sprintf("seed-%d", seed)) }
	status := func(args ...string) (int, string) {
		var out strings.Builder
		opts := report.RegressOptions{}
		var pairs []string
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "--pair" {
				pairs = append(pairs, args[i+1])
			}
		}
		err := runCompare(&out, base, args[0], filepath.Join(t.TempDir(), "cmp"), opts, pairs, false, true)
		if err == nil {
			return 0, out.String()
		}
		var ec exitCodeError
		if errors.As(err, &ec) {
			return ec.code, out.String() + err.Error()
		}
		return exitFailure, out.String() + err.Error()
	}
	for _, tc := range []struct {
		name  string
		spoil func(tree string)
		code  int
		want  string
	}{
		{"an unchanged copy", func(string) {}, 0, "no change beyond the margins"},
		{"a deleted run directory", func(tree string) { os.RemoveAll(seedDir(tree, 2)) }, exitFailure, "seed-2: unreadable"},
		{"a truncated summary.json", func(tree string) {
			p := filepath.Join(seedDir(tree, 1), report.SummaryFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)/2], 0o644)
		}, exitFailure, "seed-1: unreadable"},
		{"1e308 in every NEW run", func(tree string) {
			for s := 1; s <= 2; s++ {
				p := filepath.Join(seedDir(tree, s), report.SummaryFile)
				var m map[string]any
				b, _ := os.ReadFile(p)
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatal(err)
				}
				m["fct_s"].(map[string]any)["avg"] = 1e308
				b, _ = json.Marshal(m)
				os.WriteFile(p, b, 0o644)
			}
		}, exitFailure, "fct_avg_s: the mean over seeds is not finite"},
		{"a whole spec missing", func(tree string) { os.RemoveAll(filepath.Join(tree, "b")) }, exitFailure, "b/seed-1: unreadable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nw := filepath.Join(t.TempDir(), "new")
			copyTree(t, base, nw)
			tc.spoil(nw)
			code, out := status(nw)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s", code, tc.code, tc.want, tailLines(out, 12))
			}
		})
	}
	// A whole spec missing from NEW's manifest too (a tree run without it).
	nw := compareTree(t, t.TempDir(), nil, "a")
	if code, out := status(nw); code != exitFailure || !strings.Contains(out, "BASE b (2 runs) has no counterpart in NEW") {
		t.Fatalf("spec b missing: exit %d:\n%s", code, tailLines(out, 12))
	}
	// Trees that differ by a --set pair by spec name and say what differs; a load of 0.6, not 0.5, changes
	// the flows.
	nw = compareTree(t, t.TempDir(), []string{"workload.0.load=0.6"}, "a", "b")
	code, out := status(nw)
	if code != exitVerdict || !strings.Contains(out, "paired across a changed setting: a ~ a workload.0.load=0.6: workload.0.load 0.5 -> 0.6") {
		t.Fatalf("across --set: exit %d:\n%s", code, tailLines(out, 12))
	}
	if code, out := status(nw, "--pair", "a=nosuch"); code != exitUsage || !strings.Contains(out, `NEW has no group "nosuch"`) {
		t.Fatalf("--pair a=nosuch: exit %d: %s", code, tailLines(out, 5))
	}
	// The same group paired twice is a usage mistake (it exited 1, "cannot decide", as if a tree were bad).
	if code, out := status(nw, "--pair", "a=a", "--pair", "a=b"); code != exitUsage || !strings.Contains(out, `BASE group "a" is already paired`) {
		t.Fatalf("--pair a=a --pair a=b: exit %d: %s", code, tailLines(out, 5))
	}
}

func tailLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
