package netns

import (
	"math"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
)

// A model through 600 k frame-hops per CPU-second on 16 ports and 300 k on 324: the cost per
// frame-hop doubles over 20.25 times the ports, so it grows as ports^(ln 2 / ln 20.25).
var testModel = CostModel{
	Small: CostPoint{Fabric: "small", Ports: 16, FramesPerCPUSecond: 600_000},
	Large: CostPoint{Fabric: "large", Ports: 324, FramesPerCPUSecond: 300_000},
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

func TestCostModel(t *testing.T) {
	m := testModel
	if b := m.Exponent(); !near(b, math.Log(2)/math.Log(20.25)) {
		t.Fatalf("exponent %g", b)
	}
	for _, c := range []struct {
		ports int
		want  float64
	}{
		{16, 600_000},
		{324, 300_000},
		{6561, 150_000}, // 20.25 x 20.25 times the small fabric's ports: twice as costly twice over
		{0, 600_000},    // unknown: the small fabric's
	} {
		if got := m.Capacity(c.ports); !near(got, c.want) {
			t.Errorf("capacity at %d ports: %g, want %g", c.ports, got, c.want)
		}
	}
	// Beyond the large fabric the power law goes on: 4 times 324 ports cost 4^b times as much.
	if got, want := m.Capacity(4*324), 300_000/math.Pow(4, m.Exponent()); !near(got, want) {
		t.Errorf("capacity at %d ports: %g, want %g", 4*324, got, want)
	}
	// A large fabric measured faster than the small one (a busier machine during the small run) does
	// not make big fabrics cheaper; one slower than the ports grew is bounded to cost ~ ports.
	fast := CostModel{Small: m.Small, Large: CostPoint{Ports: 324, FramesPerCPUSecond: 700_000}}
	if fast.Exponent() != 0 || fast.Capacity(5000) != 600_000 {
		t.Errorf("a faster large fabric: exponent %g, capacity %g", fast.Exponent(), fast.Capacity(5000))
	}
	slow := CostModel{Small: m.Small, Large: CostPoint{Ports: 32, FramesPerCPUSecond: 1000}}
	if slow.Exponent() != maxCostExponent {
		t.Errorf("a slow large fabric: exponent %g", slow.Exponent())
	}
	if (CostModel{}).Capacity(100) != 0 {
		t.Error("an empty model has a capacity")
	}
	if one := (CostModel{Small: m.Small}); one.Exponent() != 0 || one.Capacity(1000) != 600_000 {
		t.Errorf("one point: exponent %g, capacity %g", one.Exponent(), one.Capacity(1000))
	}
}

func TestForecastRun(t *testing.T) {
	need := Need{FrameHops: 1_200_000, Span: clock.Millisecond} // 1.2 G frame-hops per engine second
	// One agent on 324 ports at D=1000: 1.2 M frame-hops a wall second against 300 k: pace 4.
	f := ForecastRun(need, 324, 1, testModel, 1000)
	if f.Ports != 324 || !near(f.PerAgent, 1.2e6) || !near(f.Capacity, 300_000) || !near(f.Pace, 4) || !near(f.Busy, 4) {
		t.Fatalf("one agent: %+v", f)
	}
	if !strings.Contains(f.String(), "forecast pace 4 ") {
		t.Errorf("%q", f.String())
	}
	// At D=10000 it needs 120 k: real time, busy 40%.
	f = ForecastRun(need, 324, 1, testModel, 10000)
	if f.Pace != 1 || !near(f.Busy, 0.4) || !strings.Contains(f.String(), "keeps real time, the agent busy 40%") {
		t.Fatalf("D=10000: %+v %q", f, f.String())
	}
	// Two agents serve 162 ports each, each at the lockstep's cost.
	f = ForecastRun(need, 324, 2, testModel, 1000)
	if want := testModel.Capacity(162) / lockstepCost; f.Ports != 162 || !near(f.Capacity, want) || !near(f.Pace, 600_000/want) {
		t.Fatalf("two agents: %+v", f)
	}
	if f := ForecastRun(need, 324, 1, CostModel{}, 1000); f.Pace != 1 || !strings.Contains(f.String(), "no calibration") {
		t.Errorf("no model: %+v", f)
	}
}

// ChooseDilationFor reads the capacity off the model at the lab's ports per agent.
func TestChooseDilationFor(t *testing.T) {
	need := Need{FrameHops: 1_200_000, Span: clock.Millisecond}
	// 1.2 G/s: at 300 k (324 ports) with the 50% margin D = 1.2e9 / 150e3 = 8000: 10000.
	c := ChooseDilationFor(need, 324, 1, testModel)
	if c.D != 10000 || !near(c.Capacity, 300_000) || c.Forecast.D != 10000 || c.Forecast.Pace != 1 {
		t.Fatalf("324 ports: %+v", c)
	}
	for _, s := range []string{"D=10000", "serving 324 ports does 300 k per CPU-second", "forecast pace 1 (keeps real time, the agent busy 40%"} {
		if !strings.Contains(c.Why, s) {
			t.Errorf("reason %q lacks %q", c.Why, s)
		}
	}
	// On 16 ports the same need gets 600 k: D = 4000, so 5000.
	if c := ChooseDilationFor(need, 16, 1, testModel); c.D != 5000 {
		t.Errorf("16 ports: D=%g (%s)", c.D, c.Why)
	}
	// Without a calibration: D=1000, as before.
	if c := ChooseDilationFor(need, 16, 1, CostModel{}); c.D != 1000 || !strings.Contains(c.Why, "no calibration") {
		t.Errorf("no calibration: %+v", c)
	}
}
