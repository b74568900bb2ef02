package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

// streamRun is a run directory holding only what the streamed figures read: pfc.csv and drops.csv
// as given, and n completed flows whose FCTs are fct, 2*fct, ...
func streamRun(t *testing.T, seed int64, pauses, drops string, n int, fct float64) *Run {
	t.Helper()
	dir := filepath.Join(t.TempDir(), fmt.Sprint("seed-", seed))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{PauseFile: pauses, DropsFile: drops} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := &Run{Dir: dir, Name: "x", Seed: seed, Summary: &Summary{DurationS: 1e-3, Flows: FlowCounts{Total: n, Completed: n}}}
	for i := range n {
		r.Rows = append(r.Rows, FlowRow{ID: uint32(i), Completed: true, FCTS: fct * float64(i+1)})
	}
	return r
}

const pauseHead = "at_s,device,name,port,queue,pause,sent\n"

// pfc.csv and drops.csv are streamed row by row: every row arrives, in file order, and a malformed
// row is an error naming the file and its line, not a silently shorter figure.
func TestEachPauseAndDropStream(t *testing.T) {
	var b strings.Builder
	b.WriteString(pauseHead)
	for i := range 1000 {
		fmt.Fprintf(&b, "%g,1,s1,2,3,%t,true\n", float64(i)*1e-6, i%2 == 0)
	}
	r := streamRun(t, 1, b.String(), "at_s,device,name,port,queue,flow,lossless,reason\n1e-6,2,s2,0,3,7,true,buffer\n", 0, 0)
	n, last := 0, -1.0
	if err := r.EachPause(func(e PauseEvent) {
		if e.AtS <= last || e.Device != 1 || e.Port != 2 || e.Queue != 3 || e.Pause != (n%2 == 0) || !e.Sent {
			t.Fatalf("row %d: %+v", n, e)
		}
		last = e.AtS
		n++
	}); err != nil || n != 1000 {
		t.Fatalf("%d rows, %v", n, err)
	}
	var drops []DropEvent
	if err := r.EachDrop(func(d DropEvent) { drops = append(drops, d) }); err != nil || len(drops) != 1 || !drops[0].Lossless || drops[0].Device != 2 {
		t.Fatalf("drops %+v, %v", drops, err)
	}
	bad := streamRun(t, 2, pauseHead+"1e-6,1,s1,2,3,true,true\nnope,1,s1,2,3,true,true\n", "", 0, 0)
	err := bad.EachPause(func(PauseEvent) {})
	if err == nil || !strings.Contains(err.Error(), PauseFile) || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("malformed row: %v", err)
	}
	// The heatmap walks each link's pause state in file order: a file out of time order is refused.
	back := streamRun(t, 3, pauseHead+"2e-6,1,s1,2,3,true,true\n1e-6,1,s1,2,3,false,true\n", "", 0, 0)
	if _, _, err := pauseMap(back); err == nil || !strings.Contains(err.Error(), "time order") {
		t.Fatalf("out of order: %v", err)
	}
}

// A group of seeds shows every seed: one CDF line per seed in one legend entry, and pauses per slot
// as a mean with a band when the seeds differ.
func TestGroupPlotsEverySeed(t *testing.T) {
	g := PlotGroup{Label: "pfc", Runs: []*Run{
		streamRun(t, 1, pauseHead+"1e-5,1,s1,2,3,true,true\n", "", 10, 1e-6),
		streamRun(t, 2, pauseHead+"1e-5,1,s1,2,3,true,true\n2e-5,1,s1,2,3,true,true\n3e-5,1,s1,2,3,true,true\n", "", 10, 2e-6),
		streamRun(t, 3, pauseHead, "", 10, 3e-6),
	}}
	one := PlotGroup{Label: "irn", Runs: []*Run{streamRun(t, 1, pauseHead+"2e-5,1,s1,2,3,true,true\n", "", 5, 1e-6)}}
	gs := []PlotGroup{g, one}
	_, _, lines, err := cdfLines(plot.New(), gs, func(r *Run) []float64 {
		var v []float64
		for _, row := range r.Rows {
			v = append(v, row.FCTS)
		}
		return v
	})
	if err != nil || lines != 4 {
		t.Errorf("FCT CDF: %d lines (want one per seed, 4), %v", lines, err)
	}
	if p, err := fctCDF(gs); err != nil || p == nil {
		t.Fatal(p, err)
	}
	// Pauses per slot: seed 1 one, seed 2 three, seed 3 none; the group's mean is drawn with a band.
	counts := [][][]float64{{{1, 0}, {2, 1}, {0, 0}}, {{0, 1}}}
	bands, err := seedBands(plot.New(), gs, counts, func(k int) float64 { return float64(k) })
	if err != nil || bands != 1 {
		t.Errorf("pauses: %d bands (want 1: the 3-seed group), %v", bands, err)
	}
	if p, err := pausesOverTime(gs); err != nil || p == nil {
		t.Fatal(p, err)
	}
}

// The aggregate table prints times in us and rates in Gb/s, so a row's name says so: never a metric
// name ending in _s or _bps beside a scaled number.
func TestAggregateTableNamesSayUnits(t *testing.T) {
	for m, want := range map[string]string{"fct_avg_s": "fct_avg (us)", "goodput_aggregate_bps": "goodput_aggregate (Gb/s)",
		"class.web.fct_p99_s": "class.web.fct_p99 (us)", "flows_total": "flows_total"} {
		if got := tableName(m); got != want {
			t.Errorf("%s: %q, want %q", m, got, want)
		}
	}
	tr := &Tree{Groups: []*Group{{Name: "a", Runs: []*Run{seedRun("a", 1, 2e-6), seedRun("a", 2, 4e-6)}}}}
	for _, row := range AggregateTable(tr).Rows {
		if _, unit := scaleFor(row[0]); unit != "" {
			t.Errorf("row %q: a metric name in SI units beside values in %s", row[0], unit)
		}
	}
}
