package netns

import (
	"math"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
)

// The smallest round D at which each agent needs at most PaceMargin of the measured capacity.
func TestChooseDilation(t *testing.T) {
	need := Need{FrameHops: 300_000, Span: clock.Millisecond} // 300 M frame-hops per engine second
	for _, c := range []struct {
		agents   int
		capacity float64
		want     float64
	}{
		{1, 300_000, 2000},                  // D=1000: 300 k > 150 k; D=2000: 150 k <= 150 k
		{1, 250_000, 5000},                  // D=2000: 150 k > 125 k
		{2, 300_000, 1000},                  // 150 M each: D=1000 needs 150 k
		{1, 3e9, 100},                       // the smallest on offer
		{1, 1, Dilations[len(Dilations)-1]}, // nothing keeps up: the largest
	} {
		got := ChooseDilation(need, c.agents, c.capacity)
		if got.D != c.want {
			t.Errorf("%d agents, capacity %g: D=%g, want %g (%s)", c.agents, c.capacity, got.D, c.want, got.Why)
		}
		if got.PerAgent*got.D != need.PerSecond()/float64(c.agents) && math.Abs(got.PerAgent*got.D/(need.PerSecond()/float64(c.agents))-1) > 1e-9 {
			t.Errorf("PerAgent %g at D=%g does not match the need", got.PerAgent, got.D)
		}
	}
	got := ChooseDilation(need, 1, 250_000)
	for _, s := range []string{"D=5000", "60 k frame-hops/s per agent", "150 k at D=2000", "250 k per CPU-second"} {
		if !strings.Contains(got.Why, s) {
			t.Errorf("reason %q lacks %q", got.Why, s)
		}
	}
	if c := ChooseDilation(need, 1, 0); c.D != 1000 || !strings.Contains(c.Why, "no calibration") {
		t.Errorf("no capacity: %+v", c)
	}
	if c := ChooseDilation(Need{}, 1, 1e5); c.D != Dilations[0] {
		t.Errorf("no traffic: %+v", c)
	}
	if ok, why := CheckDilation(need, 1, 250_000, 1000); ok || !strings.Contains(why, "dilation 1000") || !strings.Contains(why, "1.2x") {
		t.Errorf("D=1000 at 250 k: ok %v, %q", ok, why)
	}
	if ok, _ := CheckDilation(need, 1, 250_000, 2000); !ok {
		t.Error("D=2000 at 250 k (150 k needed) was refused")
	}
}

// FrameRate counts data frames and acknowledgements over each flow's links and spreads them from the
// first start to the last ideal finish.
func TestFrameRate(t *testing.T) {
	s, err := spec.Parse([]byte(`name: fr
backend: netns
topology: {family: ndc, n: 2, k: 1, link: {rate: 100Gbps, delay: 1us}}
host: {mtu: 1000}
workload: [{kind: flows, list: [{src: h0, dst: h1, size: 10000, at: 0s}, {src: h0, dst: h3, size: 1500, at: 10us}]}]
duration: 1ms`))
	if err != nil {
		t.Fatal(err)
	}
	if !s.AutoDilation() {
		t.Fatal("a netns spec without dilation is not automatic")
	}
	l, err := lab.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	n := FrameRate(l)
	want := 0.0
	var last clock.Time
	for _, f := range l.Flows {
		data := math.Ceil(float64(f.Size) / 1000)
		want += 2 * data * float64(len(f.Route))
		last = max(last, f.At+f.Ideal)
	}
	if n.FrameHops != want || n.Span != last {
		t.Fatalf("need %+v, want %g frame-hops over %v", n, want, last)
	}
	if want < 2*(10+2)*2 {
		t.Fatalf("routes too short: %g", want)
	}
}

// Kernel-tcp hosts send frames of the spec's MTU although the Go hosts' config refuses their transport:
// a 9000-byte kernel lab was counted at the Go hosts' 1000-byte default, nine times its frames.
func TestFrameRateKernelMTU(t *testing.T) {
	s, err := spec.Parse([]byte(`name: frk
backend: netns
dilation: 2000
topology: {family: ring, n: 3, hosts_per_switch: 1, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: lossy}
host: {transport: kernel-tcp, cc: cubic, mtu: 9000}
routing: {algorithm: shortest}
workload: [{kind: flows, list: [{src: h0, dst: h1, size: 20MB, at: 0s}]}]
duration: 1s`))
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	f := l.Flows[0]
	hops := float64(max(len(f.Route), f.Path.Hops(), 2))
	want := 2 * math.Ceil(float64(f.Size)/9000) * hops
	if n := FrameRate(l); n.FrameHops != want {
		t.Fatalf("need %+v, want %g frame-hops (%g hops, 9000-byte frames)", n, want, hops)
	}
}
