package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/report"
	"github.com/fabriclab/fabriclab/traffic"
)

// Every run writes its schedule twice, as flow.txt and as an htsim connection matrix, and both read back
// as the same flows: what the matched htsim comparison replays (lab/experiments/matched-htsim/README.md).
func TestScheduleWrittenForHPCCAndHTSim(t *testing.T) {
	s, err := spec.Parse([]byte(strings.NewReplacer("NAME", "cm", "BACKEND", "virtual").Replace(treeSpec)))
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Flows) == 0 {
		t.Fatal("no flows")
	}
	dir := t.TempDir()
	if err := writeSchedule(dir, l); err != nil {
		t.Fatal(err)
	}
	hosts := len(l.Graph.Hosts)
	// flow.txt states starts in whole nanoseconds (HPCC's format); flow.cm in picoseconds, which htsim
	// (and so our reader) takes as a C float: 24 bits of mantissa.
	for _, c := range []struct {
		format, file string
		tol          func(clock.Time) clock.Time
	}{
		{"hpcc", report.ScheduleFile, func(clock.Time) clock.Time { return clock.Nanosecond }},
		{"htsim", report.HTSimScheduleFile, func(at clock.Time) clock.Time { return at>>23 + clock.Picosecond }},
	} {
		got, err := traffic.LoadTrace(c.format, filepath.Join(dir, c.file), hosts)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if len(got) != len(l.Flows) {
			t.Fatalf("%s: %d flows, want %d", c.file, len(got), len(l.Flows))
		}
		for i, f := range got {
			w := l.Flows[i].Flow
			if f.Src != w.Src || f.Dst != w.Dst || f.Size != w.Size || max(f.At-w.At, w.At-f.At) > c.tol(w.At) {
				t.Fatalf("%s flow %d: %d->%d %d B at %d, want %d->%d %d B at %d", c.file, i, f.Src, f.Dst, f.Size, int64(f.At), w.Src, w.Dst, w.Size, int64(w.At))
			}
		}
	}
}
