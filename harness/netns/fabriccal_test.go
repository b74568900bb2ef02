package netns

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/nslink/nstest"
	"github.com/fabriclab/fabriclab/harness/portio"
)

// TestFabricKey: what changes the agent's cost per frame-hop changes the key; what a sweep varies
// without changing it (seed, load, durations, dilation) does not.
func TestFabricKey(t *testing.T) {
	base := FabricKey(nstest.Lab(t, fatTree8))
	if !strings.HasPrefix(base, "fattree k=8, poisson websearch|") {
		t.Errorf("key %q does not name the fabric", base)
	}
	same := map[string][2]string{
		"seed":     {"seed: 1", "seed: 7"},
		"load":     {"load: 0.5", "load: 0.3"},
		"duration": {"duration: 2ms}", "duration: 1ms}"},
		"dilation": {"backend: netns\n", "backend: netns\ndilation: 5000\n"},
	}
	for what, r := range same {
		if k := FabricKey(nstest.Lab(t, strings.Replace(fatTree8, r[0], r[1], 1))); k != base {
			t.Errorf("%s changed the key: %q against %q", what, k, base)
		}
	}
	differ := map[string][2]string{
		"topology":     {"k: 8", "k: 6"},
		"link":         {"delay: 1us", "delay: 2us"},
		"flow control": {"{flow_control: lossy}", "{flow_control: pfc}\nhost: {transport: lossless}"},
		"host MTU":     {"switch:", "host: {mtu: 4000}\nswitch:"},
		"traffic kind": {"cdf: websearch", "cdf: datamining"},
	}
	for what, r := range differ {
		y := strings.Replace(fatTree8, r[0], r[1], 1)
		if y == fatTree8 {
			t.Fatalf("%s: the test's replacement %q is not in the spec", what, r[0])
		}
		if k := FabricKey(nstest.Lab(t, y)); k == base {
			t.Errorf("%s did not change the key %q", what, k)
		}
	}
	t.Setenv(portio.DatapathEnv, "batched")
	if k := FabricKey(nstest.Lab(t, fatTree8)); k == base {
		t.Errorf("the data path did not change the key")
	}
}

// TestCalibrationWindow: the calibration runs the lab's own first stretch of traffic, at the
// calibration's dilation, about fabricCalFrames frame-hops of it, and leaves the lab itself alone.
func TestCalibrationWindow(t *testing.T) {
	l := nstest.Lab(t, fatTree8)
	w := calibrationWindow(l)
	if w.Spec.Dilation != fabricCalDilation || l.Spec.Dilation != 0 || w.Graph != l.Graph {
		t.Fatalf("window D=%g (lab's %g), same graph %v", w.Spec.Dilation, l.Spec.Dilation, w.Graph == l.Graph)
	}
	if w.End >= l.End || len(w.Flows) == 0 || len(w.Flows) >= len(l.Flows) {
		t.Fatalf("window end %v (lab's %v), %d flows of %d", w.End, l.End, len(w.Flows), len(l.Flows))
	}
	for _, f := range w.Flows {
		if f.At >= w.End {
			t.Fatalf("flow %d starts at %v, after the window's end %v", f.ID, f.At, w.End)
		}
	}
	if got := FrameRate(l).PerSecond() * (w.End - firstStart(w)).Seconds(); math.Abs(got-fabricCalFrames) > 0.01*fabricCalFrames {
		t.Errorf("window holds %.0f frame-hops at the workload's rate, want %d", got, fabricCalFrames)
	}
	// A light workload gets the least window, never more than the lab's own end.
	light := nstest.Lab(t, strings.Replace(strings.Replace(fatTree8, "k: 8", "k: 4", 1), "load: 0.5", "load: 0.01", 1))
	if w := calibrationWindow(light); w.End > light.End || w.End-firstStart(w) < min(fabricCalMinWindow, light.End) {
		t.Errorf("light workload: window to %v (lab's end %v)", w.End, light.End)
	}
}

// fabricated costs: one agent moves 200 k frame-hops per second on this fabric; two, each 150 k
// (300 k in all, as if a second CPU were free), or each 90 k (180 k: slower than one).
func fabricModel(two float64) CostModel {
	return CostModel{Fabric: &FabricCost{Ports: 768, Runs: []AgentsCost{
		{Agents: 1, Frames: 2_000_000, WallSeconds: 10},
		{Agents: 2, Frames: uint64(2 * two * 10), WallSeconds: 10},
	}}}
}

func TestForecastFromFabric(t *testing.T) {
	m := fabricModel(150_000)
	need := Need{FrameHops: 600e6, Span: clock.Second} // 600 k frame-hops per wall second at D=1000
	f := ForecastRun(need, 768, 1, m, 1000)
	if !near(f.Capacity, 200_000) || !near(f.Pace, 3) || f.Source != "measured on this fabric" {
		t.Errorf("one agent: %+v", f)
	}
	f = ForecastRun(need, 768, 2, m, 1000)
	if !near(f.Capacity, 150_000) || !near(f.Pace, 2) || f.Ports != 384 {
		t.Errorf("two agents: %+v", f)
	}
	// More agents than measured: what the most measured moved in all, no more.
	if f := ForecastRun(need, 768, 4, m, 1000); !near(f.Capacity, 75_000) || !near(f.Pace, 2) {
		t.Errorf("four agents: %+v", f)
	}
	// Two never measured: one agent's rate split, at the lockstep's cost without a power law, as
	// the power law splits it with one.
	only := CostModel{Fabric: &FabricCost{Runs: m.Fabric.Runs[:1]}}
	if f := ForecastRun(need, 768, 2, only, 1000); !near(f.Capacity, 200_000/lockstepCost) || !strings.Contains(f.Source, "lockstep") {
		t.Errorf("two agents, one measured: %+v", f)
	}
	only.Small, only.Large = testModel.Small, testModel.Large
	want := 200_000 * testModel.Capacity(384) / lockstepCost / testModel.Capacity(768)
	if f := ForecastRun(need, 768, 2, only, 1000); !near(f.Capacity, want) || !strings.Contains(f.Source, "power law") {
		t.Errorf("two agents, one measured, with the power law: %+v (want capacity %g)", f, want)
	}
	// A calibration whose agent kept up measured a lower bound, and says so.
	kept := FabricCost{Runs: []AgentsCost{{Agents: 1, Frames: 1000, WallSeconds: 1, Pace: 1.02}}}
	if s := kept.String(); !strings.Contains(s, "at least") {
		t.Errorf("kept up, not said: %q", s)
	}
	if s := m.Fabric.String(); strings.Contains(s, "at least") || !strings.Contains(s, "2 agents 2 x 150 k") {
		t.Errorf("behind: %q", s)
	}
	// Without the fabric: the power law alone, as before.
	if f := ForecastRun(need, 768, 1, testModel, 1000); !near(f.Capacity, testModel.Capacity(768)) || f.Source != "the two-fabric power law" {
		t.Errorf("power law: %+v", f)
	}
}

// TestChooseAgentsFromFabric: the choice follows the measured split. Two agents that move more in
// all than one are chosen when two CPUs are free and not when the load leaves one; two that move
// less are not chosen on any machine.
func TestChooseAgentsFromFabric(t *testing.T) {
	l := nstest.Lab(t, fatTree8)
	need, ports := FrameRate(l), AgentPorts(l)
	idle, busy := CPUs{N: 2, Load: 0.3}, CPUs{N: 2, Load: 1.2}
	faster := fabricModel(150_000)
	if c := ChooseAgents(l, need, ports, faster, idle, 1000); c.N != 2 || !strings.Contains(c.Why, "2 of 2 CPUs usable") {
		t.Errorf("two faster, idle: %+v", c)
	}
	if c := ChooseAgents(l, need, ports, faster, busy, 1000); c.N != 1 || !strings.Contains(c.Why, "1 of 2 CPUs usable at load average 1.2") {
		t.Errorf("two faster, busy: %+v", c)
	}
	slower := fabricModel(90_000)
	if c := ChooseAgents(l, need, ports, slower, CPUs{N: 8}, 1000); c.N != 1 || !strings.Contains(c.Why, "two would not be faster") {
		t.Errorf("two slower, 8 idle CPUs: %+v", c)
	}
	// Eight CPUs free, two measured faster: no more than two, as nothing says more would be.
	if c := ChooseAgents(l, need, ports, faster, CPUs{N: 8}, 1000); c.N != 2 {
		t.Errorf("two faster, 8 idle CPUs: %+v", c)
	}
}

// TestFabricCostCache: an entry is kept per fabric, found again for another seed, and counts it holds
// are not measured again (so this runs without root); a stale entry is gone.
func TestFabricCostCache(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FABRICLAB_CALIBRATION", filepath.Join(dir, "agent-calibration.json"))
	if p := FabricCalibrationPath(); p != filepath.Join(dir, "agent-calibration-fabrics.json") {
		t.Fatalf("fabric cache %s", p)
	}
	l := nstest.Lab(t, fatTree8)
	if _, ok := LoadFabricCost(l); ok {
		t.Fatal("an empty cache holds an entry")
	}
	f := FabricCost{Key: FabricKey(l), Fabric: fabricName(l), Ports: 768, At: time.Now().UTC(),
		Runs: []AgentsCost{{Agents: 1, Frames: 1e6, WallSeconds: 5}, {Agents: 2, Frames: 1.4e6, WallSeconds: 5}}}
	saveFabricCost(f)
	other := FabricCost{Key: "other", At: time.Now().UTC().Add(-2 * calibrationStale), Runs: f.Runs}
	saveFabricCost(other)
	seeded := nstest.Lab(t, strings.Replace(fatTree8, "seed: 1", "seed: 9", 1))
	got, ok := LoadFabricCost(seeded)
	if !ok || len(got.Runs) != 2 || got.PerAgent(2) != 140_000 {
		t.Fatalf("another seed's entry: %+v %v", got, ok)
	}
	if _, ok := loadFabricCosts()["other"]; ok {
		t.Error("a stale entry was kept")
	}
	// Both counts cached: nothing runs (no root, no namespaces needed).
	c, err := CalibrateFabric(context.Background(), seeded, []int{1, 2}, CalibrateOptions{Name: "never"})
	if err != nil || c.PerAgent(1) != 200_000 {
		t.Fatalf("cached calibration: %+v, %v", c, err)
	}
	m, src, err := RunModel(context.Background(), seeded, []int{1, 2}, CalibrateOptions{Name: "never"})
	if err != nil || m.Fabric == nil || !strings.Contains(src, "calibrated on this fabric") {
		t.Fatalf("run model: %+v %q %v", m, src, err)
	}
	t.Setenv(FabricCalibrationEnv, "off")
	if ok, why := FabricCalibratable(l); ok || !strings.Contains(why, "off") {
		t.Errorf("opted out: %v %q", ok, why)
	}
}
