package virtual_test

import (
	"context"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"syscall"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
)

// The six scenarios matched against htsim (docs/performance.md): lab/experiments/matched-htsim.
var matched = []string{"incast-k4", "incast-k8", "incast-k12", "perm-k4", "perm-k8", "perm-k12"}

func cpuTime() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

type matchedRun struct {
	cpu, packets, events, peakHeap float64
}

// runMatched builds and runs one scenario with the monitor as asked ("watch", "poll" or "none") and
// measures it: CPU time (user+sys, so other load on the machine does not count), data packets sent,
// events fired, and the Go heap's peak, sampled every few thousand events.
func runMatched(b *testing.B, name, mon string) matchedRun {
	b.Helper()
	s, err := spec.Load(filepath.Join("..", "..", "lab", "experiments", "matched-htsim", name+".yaml"))
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	heap := func() {
		metrics.Read(sample)
		peak = max(peak, sample[0].Value.Uint64())
	}
	t0 := cpuTime()
	l, err := lab.Build(s)
	if err != nil {
		b.Fatal(err)
	}
	f, err := virtual.New(l)
	if err != nil {
		b.Fatal(err)
	}
	switch mon {
	case "none":
		f.Monitor = nil
	case "poll":
		f.PollMonitor = true
	}
	f.Progress = func(_ clock.Time, _, _ int) { heap() }
	res := f.Run(context.Background())
	heap()
	cpu := cpuTime() - t0
	if !res.AllDone || res.Deadlock.Detected {
		b.Fatalf("%s: flows did not all complete: %+v", name, res)
	}
	var pkts uint64
	for _, nic := range f.NICs {
		pkts += nic.Stats().TxData
	}
	return matchedRun{cpu: cpu, packets: float64(pkts), events: float64(res.Events), peakHeap: float64(peak)}
}

// BenchmarkMatched runs the six matched scenarios (incast and permutation of 1000-frame flows on
// fat-tree k = 4, 8, 12; 100 Gb/s, 1 us links, PFC, line-rate go-back-N) and reports CPU microseconds
// per data packet, events per data packet and the peak Go heap. Whole-process CPU and peak RSS against
// htsim come from `lab run` (docs/performance.md).
//
//	go test -run XXX -bench Matched -benchtime 1x ./harness/virtual
func BenchmarkMatched(b *testing.B) {
	for _, name := range matched {
		b.Run(name, func(b *testing.B) {
			var sum matchedRun
			for i := 0; i < b.N; i++ {
				r := runMatched(b, name, "watch")
				sum.cpu += r.cpu
				sum.packets += r.packets
				sum.events += r.events
				sum.peakHeap = max(sum.peakHeap, r.peakHeap)
			}
			b.ReportMetric(sum.cpu*1e6/sum.packets, "cpu-us/pkt")
			b.ReportMetric(sum.events/sum.packets, "events/pkt")
			b.ReportMetric(sum.peakHeap/1e6, "peak-heap-MB")
			b.ReportMetric(sum.packets/float64(b.N), "pkts/run")
		})
	}
}

// BenchmarkMonitorCost runs the k=12 incast (the scenario with the most pauses) without a deadlock
// monitor, with the event-driven watch and with the periodic pass, alternating, and reports each one's
// CPU per data packet and the watch's and the periodic pass's cost over none, in percent.
//
//	go test -run XXX -bench MonitorCost -benchtime 3x ./harness/virtual
func BenchmarkMonitorCost(b *testing.B) {
	cpu := map[string]float64{}
	var pkts float64
	for i := 0; i < b.N; i++ {
		order := []string{"none", "watch", "poll"}
		if i%2 == 1 { // alternate which of the two compared runs goes first, so drift hits both alike
			order = []string{"watch", "none", "poll"}
		}
		for _, mon := range order {
			r := runMatched(b, "incast-k12", mon)
			cpu[mon] += r.cpu
			if mon == "none" {
				pkts += r.packets
			}
		}
	}
	for _, mon := range []string{"none", "watch", "poll"} {
		b.ReportMetric(cpu[mon]*1e6/pkts, mon+"-cpu-us/pkt")
	}
	b.ReportMetric(100*(cpu["watch"]/cpu["none"]-1), "watch-cost-%")
	b.ReportMetric(100*(cpu["poll"]/cpu["none"]-1), "poll-cost-%")
}

// BenchmarkEventCostScaling runs the fat-tree k=8 and k=16 permutations (128 and 1,024 hosts), in
// turn, and reports each one's CPU nanoseconds per event and their ratio: the cost of an event should
// not grow with the fabric (issue 38's target: k=16 within 1.5x of k=8).
//
//	go test -run XXX -bench EventCostScaling -benchtime 1x ./harness/virtual
func BenchmarkEventCostScaling(b *testing.B) {
	cpu, events := map[string]float64{}, map[string]float64{}
	for i := 0; i < b.N; i++ {
		order := []string{"perm-k8", "perm-k16"}
		if i%2 == 1 {
			order = []string{"perm-k16", "perm-k8"}
		}
		for _, name := range order {
			r := runMatched(b, name, "watch")
			cpu[name] += r.cpu
			events[name] += r.events
		}
	}
	k8, k16 := cpu["perm-k8"]*1e9/events["perm-k8"], cpu["perm-k16"]*1e9/events["perm-k16"]
	b.ReportMetric(k8, "k8-cpu-ns/event")
	b.ReportMetric(k16, "k16-cpu-ns/event")
	b.ReportMetric(k16/k8, "k16/k8")
}
