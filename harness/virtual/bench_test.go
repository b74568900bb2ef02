package virtual_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/harness/virtual"
)

// BenchmarkNDC41LongFlows is the yardstick: NDC(4,1) at 100 Gb/s with 16 long flows (a shifted
// permutation, so half the flows take 4-hop relay paths), PFC and DCQCN. It reports events per wall
// second and simulated time per wall second.
func BenchmarkNDC41LongFlows(b *testing.B) {
	var list []string
	for i := 0; i < 16; i++ {
		list = append(list, fmt.Sprintf("{src: h%d, dst: h%d, size: 10MB, at: 0s}", i, (i+5)%16))
	}
	yaml := `
name: bench
topology: {family: ndc, n: 4, k: 1, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: pfc}
host: {transport: lossless, cc: dcqcn}
workload: [{kind: flows, list: [` + strings.Join(list, ", ") + `]}]
duration: 1s`
	var events uint64
	var simulated, wall float64
	for i := 0; i < b.N; i++ {
		_, f := virtual.FabricOf(b, yaml)
		start := time.Now()
		res := f.Run(context.Background())
		wall += time.Since(start).Seconds()
		if !res.AllDone {
			b.Fatalf("flows did not complete: %+v", res)
		}
		events += res.Events
		simulated += res.End.Seconds()
	}
	b.ReportMetric(float64(events)/wall, "events/s")
	b.ReportMetric(simulated/wall, "sim-s/wall-s")
	b.ReportMetric(float64(events)/float64(b.N), "events/run")
}
