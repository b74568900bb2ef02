package virtual_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/records"
)

// BenchmarkParallelWorkers runs the parallel backend's two benchmark scenarios (docs/performance.md
// §Parallel virtual runs) with 1 and 2 workers, alternating, and reports the wall-time ratio
// (speedup, target >= 1.6 on a 2-core machine with nothing else running) and the CPU ratio (the
// parallel run's overhead), failing if the records differ. Wall time is what this measures: on a
// loaded machine the ratio says how much of two cores the run got, not what the backend can do.
//
//	go test ./harness/virtual -run '^$' -bench ParallelWorkers -benchtime 1x -timeout 60m
//
// FABRICLAB_PARALLEL_BENCH=perm-k16 (or dragonfly-d3-perm) runs one scenario.
func BenchmarkParallelWorkers(b *testing.B) {
	scenarios := map[string]string{
		"perm-k16":          "matched-htsim/perm-k16.yaml",
		"dragonfly-d3-perm": "parallel/dragonfly-d3-perm.yaml",
	}
	for name, path := range scenarios {
		if only := os.Getenv("FABRICLAB_PARALLEL_BENCH"); only != "" && only != name {
			continue
		}
		b.Run(name, func(b *testing.B) {
			var wall, cpu [2]time.Duration
			var logs [2]*records.Log
			var res [2]virtual.Result
			for i := 0; i < b.N; i++ {
				for w := range 2 {
					l := loadLab(b, path)
					var f *virtual.Fabric
					var err error
					if w == 0 {
						f, err = virtual.New(l)
					} else {
						parts, _ := netns.TrafficPartsWithin(l, &netns.Dilated{Switches: l.Switches, Hosts: l.Hosts}, 2, virtual.SplitSlack)
						f, _, err = virtual.NewParallel(l, parts)
					}
					if err != nil {
						b.Fatal(err)
					}
					c0, t0 := cpuTime(), time.Now()
					res[w] = f.Run(context.Background())
					wall[w] += time.Since(t0)
					cpu[w] += time.Duration((cpuTime() - c0) * 1e9)
					logs[w] = f.Log
				}
				if d := diffLogs(logs[0], logs[1]); d != "" || fmt.Sprint(res[0]) != fmt.Sprint(res[1]) {
					b.Fatalf("2 workers differ from 1: %s; results %+v and %+v", d, res[0], res[1])
				}
			}
			b.ReportMetric(wall[0].Seconds()/float64(b.N), "wall-1w-s")
			b.ReportMetric(wall[1].Seconds()/float64(b.N), "wall-2w-s")
			b.ReportMetric(wall[0].Seconds()/wall[1].Seconds(), "speedup")
			b.ReportMetric(cpu[1].Seconds()/cpu[0].Seconds(), "cpu-2w/1w")
			b.Logf("%s: wall 1 worker %v, 2 workers %v (x%.2f); CPU %v and %v; %d events; load average %s",
				name, wall[0]/time.Duration(b.N), wall[1]/time.Duration(b.N), wall[0].Seconds()/wall[1].Seconds(),
				cpu[0]/time.Duration(b.N), cpu[1]/time.Duration(b.N), res[0].Events, loadAverage())
		})
	}
}

func loadLab(b *testing.B, path string) *lab.Lab {
	b.Helper()
	s, err := spec.Load(filepath.Join("..", "..", "lab", "experiments", path))
	if err != nil {
		b.Fatal(err)
	}
	l, err := lab.Build(s)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
