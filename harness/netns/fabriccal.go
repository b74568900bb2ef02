package netns

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab"
)

// The two-fabric power law (forecast.go) cannot reach past its larger fabric's 324 ports: the cost of
// a frame-hop steepens beyond it (fat-tree k=8's agent moved 205-220 k frame-hops per CPU-second on
// the quiet 2-core VM where the law forecast 361 k, b9f1196). So a run is forecast from its own
// fabric: a short catch-up run of the very lab (its topology, switch, host and routing settings and
// its first stretch of traffic) at D=fabricCalDilation, with one agent and with two, measuring the
// frame-hops the agents move per second of wall time while behind. It is cached per machine and
// fabric (FabricKey), so a sweep over seeds, loads or durations of one fabric pays it once.

// fabricCalDilation is the calibration's dilation: low enough that the agent is behind the wall
// clock from the first frame (every shipped fabric needs more than its CPU at D=100), so it moves
// frames as fast as it can and the count measures its capacity.
const fabricCalDilation = 100

// fabricCalFrames is how many frame-hops the calibration's window of traffic is cut to hold (by the
// workload's frame rate, FrameRate): about 3-5 s of one agent on the 2-core VM, enough that the
// start (empty queues, the first flows' handshakes-free ramp) weighs little.
const fabricCalFrames = 1_200_000

// fabricCalMinWindow is the shortest window of engine time the calibration runs, for workloads so
// light that fabricCalFrames would need less.
const fabricCalMinWindow = 50 * clock.Microsecond

// fabricCalVersion changes whenever what a fabric calibration measures does, so older entries are
// measured again.
const fabricCalVersion = "fabric-1"

// AgentsCost is one calibration run of a fabric with Agents agents, catching up.
type AgentsCost struct {
	Agents     int     `json:"agents"`
	Frames     uint64  `json:"frames"`      // frame-hops the agents wrote
	CPUSeconds float64 `json:"cpu_seconds"` // the agents' CPU, all of them
	// WallSeconds is the schedule's wall time (common start to the records): the agents were behind
	// all of it, so Frames / WallSeconds is what they move per second of wall time.
	WallSeconds float64 `json:"wall_seconds"`
	// Pace is WallSeconds over the dilated engine time the run covered: above 1 the agents were behind.
	// Near 1 they kept up with a workload too light to measure them, and PerAgent is only a lower
	// bound (String says so).
	Pace float64 `json:"pace"`
}

// PerAgent is each agent's frame-hops per second of wall time while behind: what the forecast
// divides a run's need by (lockstep's waits and the machine's other work included, as measured).
func (a AgentsCost) PerAgent() float64 {
	if a.WallSeconds <= 0 || a.Agents <= 0 {
		return 0
	}
	return float64(a.Frames) / a.WallSeconds / float64(a.Agents)
}

// PerCPUSecond is the agents' frame-hops per CPU-second.
func (a AgentsCost) PerCPUSecond() float64 {
	if a.CPUSeconds <= 0 {
		return 0
	}
	return float64(a.Frames) / a.CPUSeconds
}

// FabricCost is the agent measured on one fabric of this machine: one run per agent count.
type FabricCost struct {
	Key    string       `json:"key"`    // FabricKey
	Fabric string       `json:"fabric"` // what it is, for people
	Ports  int          `json:"ports"`  // AgentPorts
	Runs   []AgentsCost `json:"runs"`
	// CostSeconds is the wall time the calibration took in all (bring-up, runs, teardown).
	CostSeconds float64   `json:"cost_seconds"`
	At          time.Time `json:"at"`
}

// Measured returns the run with agents agents, if one was.
func (f *FabricCost) Measured(agents int) (AgentsCost, bool) {
	if f == nil {
		return AgentsCost{}, false
	}
	for _, r := range f.Runs {
		if r.Agents == agents && r.PerAgent() > 0 {
			return r, true
		}
	}
	return AgentsCost{}, false
}

// PerAgent is each of agents agents' frame-hops per wall second on this fabric (0: not measured).
// More agents than the most measured (from two on) are taken to move what those did in all, no
// more: each would serve fewer ports (cheaper) but wait on more partners in lockstep (dearer), and
// which wins is measured, not guessed (AutoAgents measures every count it weighs, up to
// fabricCalMaxAgents).
func (f *FabricCost) PerAgent(agents int) float64 {
	if r, ok := f.Measured(agents); ok {
		return r.PerAgent()
	}
	best := AgentsCost{}
	if f != nil {
		for _, r := range f.Runs {
			if r.Agents < agents && r.Agents > best.Agents && r.Agents >= 2 && r.PerAgent() > 0 {
				best = r
			}
		}
	}
	return best.PerAgent() * float64(best.Agents) / float64(agents)
}

// keptUpPace is the calibration pace below which its agents were not behind all the run (the wall
// time is the schedule's, not the work's).
const keptUpPace = 1.5

// fabricCalMaxAgents bounds the agent counts a fabric calibration runs (each costs a run).
const fabricCalMaxAgents = 4

// String is the calibration in a line: "1 agent 205 k frame-hops/s, 2 agents 2 x 150 k".
func (f *FabricCost) String() string {
	var parts []string
	for _, r := range f.Runs {
		p := fmt.Sprintf("1 agent %s frame-hops per second (%s per CPU-second)", kilo(r.PerAgent()), kilo(r.PerCPUSecond()))
		if r.Agents > 1 {
			p = fmt.Sprintf("%d agents %d x %s (%s per CPU-second)", r.Agents, r.Agents, kilo(r.PerAgent()), kilo(r.PerCPUSecond()))
		}
		if r.Pace > 0 && r.Pace < keptUpPace {
			p += fmt.Sprintf(" (at least: it kept up, pace %.2g)", r.Pace)
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("%s, %d ports: %s; calibrated %s", f.Fabric, f.Ports, strings.Join(parts, ", "), f.At.Format("2006-01-02 15:04 UTC"))
}

// FabricKey names what a fabric calibration holds for: this machine and agent (calibrationKey: kernel,
// CPU, CPUs, data path), the topology with its links, the switch, host and routing settings (flow
// control, buffers, MTU, transport, ECMP...), and the traffic's kinds and size distributions, which
// set the mix of data and acknowledgement frames. Not the seed, loads, durations or dilation: a sweep
// over them runs the same fabric at much the same cost per frame-hop. The ports each agent serves
// follow from the fabric and the agent count, which the calibration measures per count.
func FabricKey(l *lab.Lab) string {
	s := l.Spec
	type traffic struct{ Kind, CDF string }
	var tr []traffic
	seen := map[traffic]bool{}
	for _, w := range s.Workload {
		t := traffic{w.Kind, w.CDF}
		if !seen[t] {
			seen[t] = true
			tr = append(tr, t)
		}
	}
	sort.Slice(tr, func(i, j int) bool { return tr[i].Kind+tr[i].CDF < tr[j].Kind+tr[j].CDF })
	routing := s.Routing
	routing.Seed = 0 // the spec's seed, by default: another seed's ECMP choices cost the same
	b, _ := json.Marshal(struct {
		Machine, Version string
		Topology, Switch any
		Host, Routing    any
		Traffic          []traffic
	}{calibrationKey(), fabricCalVersion, s.Topology, s.Switch, s.Host, routing, tr})
	h := sha256.Sum256(b)
	return fabricName(l) + "|" + hex.EncodeToString(h[:8])
}

// fabricName is the fabric for people: "fattree k=8, poisson websearch".
func fabricName(l *lab.Lab) string {
	s := l.Spec
	keys := make([]string, 0, len(s.Topology.Params))
	for k := range s.Topology.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	name := s.Topology.Family
	for _, k := range keys {
		name += fmt.Sprintf(" %s=%s", k, s.Topology.Params[k])
	}
	var kinds []string
	for _, w := range s.Workload {
		k := w.Kind
		if w.CDF != "" {
			k += " " + w.CDF
		}
		if !strings.Contains(strings.Join(kinds, ","), k) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) > 0 {
		name += ", " + strings.Join(kinds, " + ")
	}
	return name
}

// FabricCalibrationPath is where fabric calibrations are cached, beside the machine's
// (CalibrationPath): agent-calibration-fabrics.json.
func FabricCalibrationPath() string {
	return strings.TrimSuffix(CalibrationPath(), ".json") + "-fabrics.json"
}

// FabricCalibrationEnv set to "off" forecasts every run from the two-fabric power law instead of a
// calibration on its own fabric (which costs a bring-up and a few seconds of runs per new fabric).
const FabricCalibrationEnv = "FABRICLAB_FABRIC_CALIBRATION"

func loadFabricCosts() map[string]FabricCost {
	m := map[string]FabricCost{}
	if b, err := os.ReadFile(FabricCalibrationPath()); err == nil {
		_ = json.Unmarshal(b, &m) // a cache: an unreadable one is measured again
	}
	for k, f := range m {
		if time.Since(f.At) > calibrationStale {
			delete(m, k)
		}
	}
	return m
}

// LoadFabricCost returns the cached calibration of l's fabric, if one holds for this machine.
func LoadFabricCost(l *lab.Lab) (FabricCost, bool) {
	f, ok := loadFabricCosts()[FabricKey(l)]
	return f, ok
}

func saveFabricCost(f FabricCost) {
	m := loadFabricCosts()
	m[f.Key] = f
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return
	}
	p := FabricCalibrationPath()
	if os.MkdirAll(filepath.Dir(p), 0o755) == nil {
		_ = os.WriteFile(p, append(b, '\n'), 0o644) // a cache: failing to keep it only costs a re-measure
	}
}

// FabricCalibratable says whether l's fabric can be calibrated on this machine, and if not why: a lab
// with kernel-tcp hosts keeps the wall clock's time (no catch-up to measure), and the environment may
// opt out.
func FabricCalibratable(l *lab.Lab) (bool, string) {
	if os.Getenv(FabricCalibrationEnv) == "off" {
		return false, FabricCalibrationEnv + "=off"
	}
	for _, h := range l.Hosts {
		if IsKernelHost(h) {
			return false, "kernel-tcp hosts keep the wall clock's time"
		}
	}
	if len(l.Flows) == 0 {
		return false, "the workload sends nothing"
	}
	return true, ""
}

// calibrationWindow is l cut to its first stretch of traffic at fabricCalDilation: the flows that
// start within it, ending when fabricCalFrames frame-hops would have been sent at the workload's
// average rate.
func calibrationWindow(l *lab.Lab) *lab.Lab {
	need := FrameRate(l)
	first := firstStart(l)
	window := fabricCalMinWindow
	if r := need.PerSecond(); r > 0 {
		window = max(window, clock.Time(fabricCalFrames/r*float64(clock.Second)))
	}
	c := *l
	s := *l.Spec
	s.Dilation = fabricCalDilation
	c.Spec = &s
	c.End = min(l.End, first+window)
	c.Flows = nil
	for _, f := range l.Flows {
		if f.At < c.End {
			c.Flows = append(c.Flows, f)
		}
	}
	return &c
}

// Standing is a lab's namespaces brought up ahead of its run, so that a calibration on its own fabric
// and then the run itself (RunOptions.Standing) share one bring-up. Down removes it.
type Standing struct {
	nl *nslink.Lab
	// Took is how long the bring-up took.
	Took time.Duration
}

// BringUp makes l's namespaces and links as lab name, for a calibration and a run (Standing).
func BringUp(ctx context.Context, l *lab.Lab, name string) (*Standing, error) {
	if err := nslink.CheckRoot(); err != nil {
		return nil, err
	}
	start := time.Now()
	nl, err := nslink.Up(ctx, name, l.Graph, nslink.Options{MTU: labMTU(l)})
	if err != nil {
		return nil, err
	}
	return &Standing{nl: nl, Took: time.Since(start)}, nil
}

// Name is the lab's name.
func (s *Standing) Name() string { return s.nl.Name }

// Down removes the lab.
func (s *Standing) Down() error { return nslink.Down(s.nl.Name) }

// CalibrateOptions say how a calibration runs: the lab name (prefix) of its runs, where its progress
// goes, and the lab it may run on (nil: it brings the fabric up itself and down after).
type CalibrateOptions struct {
	Name     string
	Progress func(string)
	Standing *Standing
	// Keep, if set, is given the lab a calibration brought up itself, which it then leaves up for the
	// caller's run (RunOptions.Standing) and Down.
	Keep func(*Standing)
}

func (o CalibrateOptions) say(s string) {
	if o.Progress != nil {
		o.Progress(s)
	}
}

// calLead is the calibration runs' start lead, taken off their wall time.
const calLead = 100 * time.Millisecond

// CalibrateFabric measures the agent on l's own fabric with each of counts agents (a short catch-up
// run each, calibrationWindow), adds them to the cache entry of l's fabric and returns it. Counts the
// entry already holds are not run again. Needs root.
func CalibrateFabric(ctx context.Context, l *lab.Lab, counts []int, o CalibrateOptions) (FabricCost, error) {
	f, ok := LoadFabricCost(l)
	if !ok {
		f = FabricCost{Key: FabricKey(l), Fabric: fabricName(l), Ports: AgentPorts(l)}
	}
	var todo []int
	for _, n := range counts {
		n = min(n, len(l.Graph.Nodes))
		if _, done := f.Measured(n); !done && n >= 1 && !slices.Contains(todo, n) {
			todo = append(todo, n)
		}
	}
	if len(todo) == 0 {
		return f, nil
	}
	start := time.Now()
	w := calibrationWindow(l)
	o.say(fmt.Sprintf("calibrating the agent on this fabric (%s, %d ports; %v of its traffic at D=%d with %s; once per machine and fabric, cached in %s)",
		f.Fabric, f.Ports, w.End-firstStart(w), fabricCalDilation, agentCounts(todo), FabricCalibrationPath()))
	st := o.Standing
	if st == nil {
		var err error
		if st, err = BringUp(ctx, l, o.Name); err != nil {
			return f, fmt.Errorf("calibrating the agent on this fabric: %w", err)
		}
		if o.Keep != nil {
			o.Keep(st)
		} else {
			defer st.Down()
		}
	}
	for _, n := range todo {
		_, res, err := Run(ctx, w, RunOptions{Name: st.Name(), Agents: n, StartLead: calLead, CrossCheck: -1, Standing: st})
		if err != nil {
			return f, fmt.Errorf("calibrating the agent on this fabric with %s: %w", agentCounts([]int{n}), err)
		}
		if res.Cancelled {
			return f, fmt.Errorf("calibrating the agent on this fabric: interrupted")
		}
		m := res.Monitor
		wall := (res.Wall - calLead).Seconds()
		if m.Frames == 0 || wall <= 0 {
			return f, fmt.Errorf("calibrating the agent on this fabric with %s: it moved no frames", agentCounts([]int{n}))
		}
		a := AgentsCost{Agents: res.Agents, Frames: m.Frames, CPUSeconds: m.CPUTime.Seconds(), WallSeconds: wall}
		if res.End > 0 {
			a.Pace = wall / res.End.Seconds()
		}
		f.Runs = append(f.Runs, a)
	}
	sort.Slice(f.Runs, func(i, j int) bool { return f.Runs[i].Agents < f.Runs[j].Agents })
	took := time.Since(start)
	var cost string
	switch {
	case o.Standing != nil: // brought up for the run before
		cost = fmt.Sprintf("%.1f s on the run's lab", took.Seconds())
	case o.Keep != nil: // the run reuses the bring-up: the calibration costs the rest
		took -= st.Took
		cost = fmt.Sprintf("%.1f s, plus the bring-up (%.1f s) the run reuses", took.Seconds(), st.Took.Seconds())
	default:
		cost = fmt.Sprintf("%.1f s, its bring-up (%.1f s) included", took.Seconds(), st.Took.Seconds())
	}
	f.CostSeconds += took.Seconds()
	f.At = time.Now().UTC()
	saveFabricCost(f)
	o.say(fmt.Sprintf("calibrating the agent on this fabric: %s, once per machine and fabric: %s", cost, f.String()))
	return f, nil
}

func firstStart(l *lab.Lab) clock.Time {
	first := l.End
	for _, f := range l.Flows {
		first = min(first, f.At)
	}
	return first
}

func agentCounts(ns []int) string {
	var s []string
	for _, n := range ns {
		s = append(s, fmt.Sprint(n))
	}
	if len(ns) == 1 && ns[0] == 1 {
		return "1 agent"
	}
	return strings.Join(s, " and ") + " agents"
}
