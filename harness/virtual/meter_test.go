package virtual

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/records"
)

// The meters count what the links carried: every payload byte of a flow reaches its destination once,
// and the links carried at least the payload (plus headers and ACKs).
func TestMeters(t *testing.T) {
	y := `name: meters
topology: {family: ndc, n: 2, k: 1}
switch: {flow_control: pfc}
host: {transport: lossless}
workload: [{kind: flows, list: [{src: h0, dst: h3, size: 300KB, at: 0s}, {src: h1, dst: h2, size: 100KB, at: 5us}]}]
duration: 10ms
`
	l, f := newFabricOf(t, y)
	if res := f.Run(context.Background()); !res.AllDone {
		t.Fatal("flows did not complete")
	}
	per := map[uint32]int64{}
	for _, b := range f.Log.FlowRx {
		per[b.Flow] += b.Bytes
		if b.At%DefaultMeterBin != 0 {
			t.Fatalf("bin start %v", b.At)
		}
	}
	var links int64
	for _, b := range f.Log.Links {
		links += b.Bytes
	}
	for _, fl := range l.Flows {
		if per[fl.ID] != fl.Size {
			t.Errorf("flow %d: %d bytes delivered, size %d", fl.ID, per[fl.ID], fl.Size)
		}
	}
	if links < 400_000 || f.Log.MeterBin != DefaultMeterBin {
		t.Errorf("links carried %d bytes, bin %v", links, f.Log.MeterBin)
	}
}

// Meters with the default bin keep at most MaxMeterBins bins: a run longer than that many default bins
// doubles their width, losing no byte; a bin the user set is kept as it is.
func TestMetersWidenOnLongRuns(t *testing.T) {
	y := `name: meters-long
topology: {family: ndc, n: 2, k: 1}
switch: {flow_control: pfc}
host: {transport: lossless}
workload: [{kind: flows, list: [{src: h0, dst: h3, size: 100KB, at: 0s}, {src: h1, dst: h2, size: 100KB, at: 6ms}]}]
duration: 10ms
`
	for _, bin := range []clock.Time{0, DefaultMeterBin} {
		l, f := newFabricOf(t, y)
		f.MeterBin = bin
		if res := f.Run(context.Background()); !res.AllDone {
			t.Fatal("flows did not complete")
		}
		end := f.Clock.Now()
		want := DefaultMeterBin
		if bin == 0 {
			for end/want >= MaxMeterBins {
				want *= 2
			}
		}
		if f.Log.MeterBin != want {
			t.Errorf("bin %v: meters ended with %v bins, want %v (run ended at %v)", bin, f.Log.MeterBin, want, end)
		}
		per := map[uint32]int64{}
		for _, b := range f.Log.FlowRx {
			per[b.Flow] += b.Bytes
			if b.At%want != 0 || b.At > end {
				t.Errorf("bin %v: flow bin starts at %v", bin, b.At)
			}
		}
		for _, fl := range l.Flows {
			if per[fl.ID] != fl.Size {
				t.Errorf("bin %v: flow %d: %d bytes delivered, size %d", bin, fl.ID, per[fl.ID], fl.Size)
			}
		}
	}
}

// BenchmarkMeters runs one NDC(4,1) workload with the link and flow meters on and off, side by side,
// and reports the meters' cost as a ratio of wall times.
func BenchmarkMeters(b *testing.B) {
	var list []string
	for i := 0; i < 16; i++ {
		list = append(list, fmt.Sprintf("{src: h%d, dst: h%d, size: 2MB, at: 0s}", i, (i+5)%16))
	}
	y := `name: bench-meters
topology: {family: ndc, n: 4, k: 1, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: pfc}
host: {transport: lossless, cc: dcqcn}
workload: [{kind: flows, list: [` + strings.Join(list, ", ") + `]}]
duration: 1s`
	run := func(bin clock.Time) time.Duration {
		_, f := newFabricOf(b, y)
		f.MeterBin = bin
		start := time.Now()
		if res := f.Run(context.Background()); !res.AllDone {
			b.Fatal("flows did not complete")
		}
		return time.Since(start)
	}
	var on, off time.Duration
	for i := 0; i < b.N; i++ { // alternate which goes first, so warm-up and neighbours hit both alike
		if i%2 == 0 {
			off += run(-1)
			on += run(0)
		} else {
			on += run(0)
			off += run(-1)
		}
	}
	b.ReportMetric(on.Seconds()/off.Seconds(), "wall-with/without")
}

// DeferRecords leaves the pause records and the meters' rows to TakeRecords, which must produce exactly
// the Log a plain Run does, with the Fabric dropped in between.
func TestDeferRecordsMatchesRun(t *testing.T) {
	y := `name: defer
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: pfc}
host: {transport: lossless}
workload: [{kind: incast, senders: 15, size: 3MB, receiver: h0, at: 0s}, {kind: flows, list: [{src: h1, dst: h2, size: 100KB, at: 5us}]}]
duration: 20ms
`
	_, plain := newFabricOf(t, y)
	if res := plain.Run(context.Background()); !res.AllDone {
		t.Fatal("flows did not complete")
	}
	_, deferred := newFabricOf(t, y)
	deferred.DeferRecords = true
	if res := deferred.Run(context.Background()); !res.AllDone {
		t.Fatal("flows did not complete")
	}
	if len(deferred.Log.Pauses) != 0 || deferred.Log.Links != nil {
		t.Fatalf("a deferred Run left %d pauses and %d link rows in the Log", len(deferred.Log.Pauses), len(deferred.Log.Links))
	}
	log, finish := deferred.Log, deferred.TakeRecords()
	deferred = nil
	finish()
	if len(plain.Log.Pauses) == 0 || len(plain.Log.FlowRx) == 0 {
		t.Fatalf("the spec should pause and meter flows: %d pauses, %d flow rows", len(plain.Log.Pauses), len(plain.Log.FlowRx))
	}
	if !reflect.DeepEqual(plain.Log.Pauses, log.Pauses) || !reflect.DeepEqual(plain.Log.Links, log.Links) ||
		!reflect.DeepEqual(plain.Log.FlowRx, log.FlowRx) || plain.Log.MeterBin != log.MeterBin {
		t.Errorf("deferred records differ: %d/%d pauses, %d/%d link rows, %d/%d flow rows", len(plain.Log.Pauses), len(log.Pauses),
			len(plain.Log.Links), len(log.Links), len(plain.Log.FlowRx), len(log.FlowRx))
	}

	// Pause records spilled to a file as they accumulate come back the same, and leave no file behind.
	dir := t.TempDir()
	_, spilled := newFabricOf(t, y)
	spilled.DeferRecords, spilled.SpillDir = true, dir
	if res := spilled.Run(context.Background()); !res.AllDone {
		t.Fatal("flows did not complete")
	}
	slog, sfinish := spilled.Log, spilled.TakeRecords()
	sfinish()
	if err := slog.SpillErr(); err != nil {
		t.Fatal(err)
	}
	if len(plain.Log.Pauses) <= 2*1024 {
		t.Fatalf("%d pauses: too few to fill the spill file's chunks", len(plain.Log.Pauses))
	}
	if !reflect.DeepEqual(plain.Log.Pauses, slog.Pauses) {
		t.Errorf("spilled pauses differ: %d, want %d", len(slog.Pauses), len(plain.Log.Pauses))
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the spill left %d files in its directory", len(left))
	}
}

// A flow whose payload reaches its host over several links (a host with two ports) gets one series, the
// sum of the links', and the links' own series are left as they were.
func TestMeterRecordsSumFlowsOverLinks(t *testing.T) {
	a := meterCounts{end: topo.End{Node: 1, Port: 0}, flows: map[uint32]int{7: 0, 8: 1}, series: [][]int64{{5, 0, 2}, {1}}}
	b := meterCounts{end: topo.End{Node: 2, Port: 1}, flows: map[uint32]int{7: 0}, series: [][]int64{{1, 1, 1, 4}}}
	c := meterCounts{end: topo.End{Node: 3, Port: 0}, flows: map[uint32]int{7: 0}, series: [][]int64{{0, 10}}}
	ms := &meterSet{width: clock.Microsecond, links: []meterCounts{a, b, c}}
	_, fb := ms.records()
	want := []records.FlowBytes{{At: 0, Flow: 7, Bytes: 6}, {At: clock.Microsecond, Flow: 7, Bytes: 11},
		{At: 2 * clock.Microsecond, Flow: 7, Bytes: 3}, {At: 3 * clock.Microsecond, Flow: 7, Bytes: 4}, {At: 0, Flow: 8, Bytes: 1}}
	if !reflect.DeepEqual(fb, want) {
		t.Fatalf("flow rows %+v, want %+v", fb, want)
	}
	if !reflect.DeepEqual(a.series, [][]int64{{5, 0, 2}, {1}}) || !reflect.DeepEqual(b.series, [][]int64{{1, 1, 1, 4}}) {
		t.Fatalf("the links' series changed: %v %v", a.series, b.series)
	}
}
