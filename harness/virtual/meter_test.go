package virtual

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/clock"
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
