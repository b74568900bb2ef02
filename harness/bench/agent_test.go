package bench

import (
	"context"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	_ "github.com/fabriclab/fabriclab/harness/netns/agent" // the backend re-executes the test binary as its agents
	"github.com/fabriclab/fabriclab/harness/nslink/nstest"
	"github.com/fabriclab/fabriclab/harness/portio"
	"github.com/fabriclab/fabriclab/lab"
)

// netnsLock takes /tmp/fabriclab-netns.lock, the lock file that benchmarks and runs wrapped in
// `flock /tmp/fabriclab-netns.lock ...` share, so two real-time measurements never build labs at once
// (each would starve the other's agents). `lab` itself does not take it.
func netnsLock(b *testing.B) {
	f, err := os.OpenFile("/tmp/fabriclab-netns.lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
}

// BenchmarkAgentDatapath runs NDC(2,1) under WebSearch on the netns backend with each data path,
// alternating, and reports the default's, batched's and legacy's frame-hops per CPU-second of the
// agent and the ratios to legacy (measured
// side by side, so a busy machine slows both). Needs root; takes the namespace lock itself.
//
//	go test -run - -bench AgentDatapath -benchtime 3x ./harness/bench/
func BenchmarkAgentDatapath(b *testing.B) {
	nstest.NeedRoot(b)
	netnsLock(b)
	s, err := Fabric{Family: "ndc", Params: map[string]string{"n": "2", "k": "1"}}.Spec(fmt.Sprintf("bd%d", os.Getpid()))
	if err != nil {
		b.Fatal(err)
	}
	l, err := lab.Build(s)
	if err != nil {
		b.Fatal(err)
	}
	rate := map[string]float64{}
	var frames uint64
	for b.Loop() {
		for _, dp := range portio.Datapaths {
			r, err := RunAgents(context.Background(), l, fmt.Sprintf("bd%d", os.Getpid()), 1, dp)
			if err != nil {
				b.Fatal(err)
			}
			rate[dp] += r.FramesPerCPUSecond()
			frames += r.Frames
		}
	}
	n := float64(b.N)
	def := portio.DefaultDatapath
	b.ReportMetric(rate[def]/n, "frames/cpu_s")
	b.ReportMetric(rate["batched"]/n, "batched_frames/cpu_s")
	b.ReportMetric(rate["legacy"]/n, "legacy_frames/cpu_s")
	b.ReportMetric(rate[def]/rate["legacy"], "x_legacy")
	b.ReportMetric(rate["batched"]/rate["legacy"], "batched_x_legacy")
	b.ReportMetric(float64(frames)/n/float64(len(portio.Datapaths)), "frames/run")
}
