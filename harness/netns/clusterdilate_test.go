package netns

import (
	"strings"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
)

// A run over machines takes the D its slowest machine keeps pace at, by the one-machine rule with one
// agent per machine, and a larger one when a machine's clock needs it.
func TestClusterDilation(t *testing.T) {
	s, err := spec.Parse([]byte(`name: cd
backend: netns
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: pfc}
host: {transport: lossless, cc: none}
workload: [{kind: incast, senders: 8, size: 200KB, receiver: h0, at: 0s}]
duration: 100ms`))
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	fast := Calibration{Small: testModel.Small, Large: testModel.Large}
	slow := fast
	slow.Small.FramesPerCPUSecond /= 30 // a VM under emulation
	slow.Large.FramesPerCPUSecond /= 30
	need, ports := FrameRate(l), AgentPorts(l)
	wantFast := ChooseDilationFor(need, ports, 2, fast.Model()).D
	wantSlow := ChooseDilationFor(need, ports, 2, slow.Model()).D
	if wantSlow <= wantFast {
		t.Fatalf("the slow machine's D %g is not above the fast one's %g: the test shows nothing", wantSlow, wantFast)
	}

	c, err := ClusterDilation(l, []MachineCal{{Name: "m1", Cal: fast}, {Name: "m2", Cal: fast}})
	if err != nil || c.D != wantFast {
		t.Fatalf("two fast machines: D=%g, want %g (%v)", c.D, wantFast, err)
	}
	c, err = ClusterDilation(l, []MachineCal{{Name: "m1", Cal: fast}, {Name: "m2", Cal: slow}})
	if err != nil || c.D != wantSlow {
		t.Fatalf("a slow machine: D=%g, want %g (%v)", c.D, wantSlow, err)
	}
	if !strings.Contains(c.Why, "machine m2 (the slowest of 2") {
		t.Errorf("reason %q does not name the slowest machine", c.Why)
	}

	// A clock 10 ms off needs a tolerance of 10 ms: half the dilated delay of the links between the
	// machines (1 us each here), so D >= 20000.
	c, err = ClusterDilation(l, []MachineCal{{Name: "m1", Cal: fast}, {Name: "m2", Cal: fast, ClockErr: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if c.D != 20000 || !strings.Contains(c.Why, "every machine's clock within 10ms") {
		t.Errorf("a clock 10 ms off: D=%g (%s)", c.D, c.Why)
	}
	// One no D can carry: the pace's D, for the run's clock check to refuse.
	c, err = ClusterDilation(l, []MachineCal{{Name: "m1", Cal: fast}, {Name: "m2", Cal: fast, ClockErr: time.Hour}})
	if err != nil || c.D != wantFast {
		t.Errorf("a clock an hour off: D=%g, want %g (%v)", c.D, wantFast, err)
	}
}
