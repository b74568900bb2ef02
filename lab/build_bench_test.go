package lab_test

import (
	"runtime"
	"testing"

	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
)

// BenchmarkBuild times lab.Build on the largest matched spec and reports what the built lab keeps live
// (live-MB: heap in use after a collection with the lab held, less before), the routes and device
// configs a run holds to its end (issue 15).
func BenchmarkBuild(b *testing.B) {
	for _, name := range []string{"incast-k12", "perm-k12"} {
		b.Run(name, func(b *testing.B) {
			s, err := spec.Load("experiments/matched-htsim/" + name + ".yaml")
			if err != nil {
				b.Fatal(err)
			}
			var live float64
			for b.Loop() {
				var before, after runtime.MemStats
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&before)
				b.StartTimer()
				l, err := lab.Build(s)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&after)
				live = float64(after.HeapAlloc-before.HeapAlloc) / 1e6
				runtime.KeepAlive(l)
				b.StartTimer()
			}
			b.ReportMetric(live, "live-MB")
		})
	}
}
