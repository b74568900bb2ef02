package report

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/records"
)

func TestSizeBucketsHandMade(t *testing.T) {
	rows := []FlowRow{
		{ID: 1, Size: 50_000, Completed: true, FCTS: 10e-6, Slowdown: 2},
		{ID: 2, Size: 99_999, Completed: true, FCTS: 30e-6, Slowdown: 4},
		{ID: 3, Size: 100_000, Completed: true, FCTS: 100e-6, Slowdown: 1},
		{ID: 4, Size: 2_000_000, Completed: true, FCTS: 400e-6, Slowdown: 3, Retransmits: 5},
		{ID: 5, Size: 20_000_000, Completed: false, Retransmits: 7},
	}
	b := SizeBuckets(rows, nil)
	byName := map[string]Bucket{}
	for _, x := range b {
		byName[x.Name] = x
	}
	check := func(name string, total, done int, avg, gp float64, retx int64) {
		t.Helper()
		x := byName[name]
		if x.Flows.Total != total || x.Flows.Completed != done || math.Abs(x.FCT.Avg-avg) > 1e-12 ||
			math.Abs(x.GoodputBps-gp)/math.Max(gp, 1) > 1e-9 || x.Retransmits != retx {
			t.Errorf("%s: %+v, want total %d done %d avg %v goodput %v retx %d", name, x, total, done, avg, gp, retx)
		}
	}
	// Goodputs: 40, 26.67, 8, 40 Gb/s.
	check("all", 5, 4, (10e-6+30e-6+100e-6+400e-6)/4, (40e9+99_999*8/30e-6+8e9+40e9)/4, 12)
	check("<100KB", 2, 2, 20e-6, (40e9+99_999*8/30e-6)/2, 0)
	check(">=100KB", 3, 2, 250e-6, 24e9, 12)
	check(">=1MB", 2, 1, 400e-6, 40e9, 12)
	check(">=10MB", 1, 0, 0, 0, 7)
	if BucketName(0, 100_000) != "<100KB" || BucketName(1_000_000, 0) != ">=1MB" || BucketName(0, 0) != "all" {
		t.Error("bucket names")
	}
}

func testRun(name string, avgFCT, goodput float64) *Run {
	return &Run{Name: name, Summary: &Summary{FCT: Stats{Avg: avgFCT, P99: 2 * avgFCT}, AvgFlowGoodputBps: goodput,
		Classes: map[string]ClassSummary{"incast": {ThroughputBps: goodput / 2}}}}
}

func TestMeasureAcrossRuns(t *testing.T) {
	a, b := testRun("portfc", 30e-6, 20e9), testRun("irn", 100e-6, 10e9)
	runs := []*Run{a, b}
	for _, c := range []struct {
		name string
		want float64
	}{
		{"fct_avg_s", 30e-6},
		{"fct_p99_s", 60e-6},
		{"class.incast.throughput_bps", 10e9},
		{"reduction:fct_avg_s:irn", 70},
		{"ratio:avg_flow_goodput_bps:irn", 2},
		{"reduction:class.incast.throughput_bps:irn", -100},
	} {
		got, err := Measure(runs, a, c.name)
		if err != nil || math.Abs(got-c.want) > 1e-9*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%s = %v (%v), want %v", c.name, got, err, c.want)
		}
	}
	for _, bad := range []string{"nope", "ratio:fct_avg_s:gbn", "ratio:fct_avg_s", "class.web.fct_avg_s"} {
		if _, err := Measure(runs, a, bad); err == nil {
			t.Errorf("%s measured", bad)
		}
	}
	a.Expect = map[string]Expected{"reduction:fct_avg_s:irn": {Value: 69.2, Unit: "%", Source: "Fig. 8"}}
	e := Expectations(runs)
	if len(e.Rows) != 1 || e.Rows[0][2] != "70" || e.Rows[0][3] != "69.2" {
		t.Errorf("expectations table %v", e.Rows)
	}
}

func TestCompareTableHasOneColumnPerRun(t *testing.T) {
	runs := []*Run{testRun("a", 1e-3, 1e9), testRun("b", 2e-3, 1e9), testRun("c", 3e-3, 1e9)}
	tb := Compare(runs)
	if strings.Join(tb.Header, ",") != "metric,a,b,c" {
		t.Fatalf("header %v", tb.Header)
	}
	found := false
	for _, r := range tb.Rows {
		if len(r) != 4 {
			t.Fatalf("row %v", r)
		}
		if r[0] == "FCT avg" {
			found = true
			if r[1] != "1000.0" || r[3] != "3000.0" {
				t.Errorf("FCT avg row %v (want microseconds)", r)
			}
		}
	}
	if !found {
		t.Error("no FCT avg row")
	}
	var sb strings.Builder
	if err := tb.WriteText(&sb); err != nil || !strings.Contains(sb.String(), "FCT avg") {
		t.Errorf("text: %v\n%s", err, sb.String())
	}
}

func TestRunDirRoundTripWithPlots(t *testing.T) {
	dir := t.TempDir()
	log := &records.Log{
		Flows: []records.Flow{
			{ID: 1, Src: 0, Dst: 1, Size: 10_000, Start: 0, Finish: 2 * clock.Microsecond, Ideal: clock.Microsecond, Completed: true, Class: "poisson"},
			{ID: 2, Src: 1, Dst: 0, Size: 2_000_000, Start: clock.Microsecond, Finish: 300 * clock.Microsecond, Ideal: 200 * clock.Microsecond, Completed: true, Class: "incast"},
		},
		Pauses:  []records.Pause{{At: 5 * clock.Microsecond, Device: 2, Kind: records.Switch, On: true, Sent: true}},
		Samples: []records.QueueSample{{At: clock.Microsecond, Device: 2, Port: 0, Queue: -1, Bytes: 5000}, {At: 2 * clock.Microsecond, Device: 2, Port: 0, Queue: -1, Bytes: 9000}},
	}
	// Enough normal flows for HPCC's 20 bins (fct_analysis.py needs 21 after its filter).
	for i := 0; i < 30; i++ {
		log.Flows = append(log.Flows, records.Flow{ID: uint32(10 + i), Src: 0, Dst: 1, Size: int64(1000 * (i + 1)), Start: 0,
			Finish: clock.Time(i+2) * clock.Microsecond, Ideal: clock.Microsecond, Completed: true, Class: "poisson"})
	}
	meta := Meta{Duration: 300 * clock.Microsecond}
	if _, err := WriteRunDir(dir, log, meta); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Create(filepath.Join(dir, QueuesFile))
	if err := WriteQueuesCSV(f, log, meta); err != nil {
		t.Fatal(err)
	}
	f.Close()
	os.WriteFile(filepath.Join(dir, SpecFile), []byte("name: hand\nswitch: {flow_control: pfc}\nhost: {transport: lossless}\nexpect:\n  fct_avg_s: {value: 1e-4, source: made up}\n"), 0o644)
	r, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	var pauses []PauseEvent
	if err := r.EachPause(func(e PauseEvent) { pauses = append(pauses, e) }); err != nil {
		t.Fatal(err)
	}
	if r.Name != "hand" || r.Scheme != "pfc/lossless" || len(r.Samples) != 2 || r.Samples[1].Bytes != 9000 ||
		len(pauses) != 1 || !pauses[0].Pause || r.Expect["fct_avg_s"].Value != 1e-4 {
		t.Fatalf("loaded %+v, pauses %+v", r, pauses)
	}
	// A stale figure from an earlier report, and a file that is not ours.
	os.WriteFile(filepath.Join(dir, "link_util-old.png"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.png"), []byte("x"), 0o644)
	files, err := WritePlots(dir, []*Run{r})
	if err != nil {
		t.Fatal(err)
	}
	// fct_cdf, slowdown_bins, queue_depth, pauses, pause_heatmap, drops, slowdown_cdf; PNG and SVG each.
	// (No links.csv here: no link_util, flow_rate or topology.)
	if len(files) != 14 {
		t.Errorf("plots %v", files)
	}
	if _, err := os.Stat(filepath.Join(dir, "link_util-old.png")); !os.IsNotExist(err) {
		t.Errorf("stale plot left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.png")); err != nil {
		t.Errorf("a file that is not a plot of ours was removed: %v", err)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() < 1000 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
