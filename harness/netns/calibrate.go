package netns

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/harness/portio"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
)

// Calibration is what this machine's agent measured: frame-hops per CPU-second of one agent busy
// catching up (as many frames as it can move) under WebSearch, on a small fabric (the top-level
// fields, and Small) and on a larger one (Large): the cost model of forecast.go.
type Calibration struct {
	FramesPerCPUSecond float64   `json:"frames_per_cpu_second"` // the small fabric's
	Frames             uint64    `json:"frames"`
	CPUSeconds         float64   `json:"cpu_seconds"`
	Small              CostPoint `json:"small"`
	Large              CostPoint `json:"large"`
	Key                string    `json:"key"` // what it holds for: calibrationKey
	At                 time.Time `json:"at"`
}

// Model is the calibration's cost model (forecast.go).
func (c Calibration) Model() CostModel { return CostModel{Small: c.Small, Large: c.Large} }

// calibrationVersion changes whenever the agent's data path does, so a cached calibration of an older
// agent is measured again.
const calibrationVersion = "xdp-2" // xdp-2: receive stocks of 64 frames, the control channel read by the loop

// calibrationModel changes whenever what a calibration measures does (the fabrics it runs, the
// fields the forecast reads), so an older cache is measured again. ports-1: two fabrics, the cost
// per frame-hop as a power of the ports (forecast.go); ports-2: each fabric measured twice, the faster kept.
const calibrationModel = "ports-2"

// calibrationKey names the machine and agent a calibration holds for: kernel release, CPU model,
// CPUs, data path.
func calibrationKey() string {
	var u unix.Utsname
	rel := "?"
	if unix.Uname(&u) == nil {
		rel = unix.ByteSliceToString(u.Release[:])
	}
	model := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	dp := calibrationVersion
	if d := portio.DatapathFromEnv(); d != portio.DefaultDatapath {
		dp = d
	}
	return fmt.Sprintf("%s|%s|%d cpus|%s|%s", rel, model, runtime.NumCPU(), dp, calibrationModel)
}

// CalibrationPath is where the calibration is cached: $FABRICLAB_CALIBRATION if set, else
// $XDG_CACHE_HOME/fabriclab (~/.cache/fabriclab), else /var/cache/fabriclab.
func CalibrationPath() string {
	if p := os.Getenv("FABRICLAB_CALIBRATION"); p != "" {
		return p
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = "/var/cache"
	}
	return filepath.Join(dir, "fabriclab", "agent-calibration.json")
}

// LoadCalibration returns the cached calibration if it holds for this machine and agent and is not
// older than calibrationStale.
func LoadCalibration() (Calibration, bool) {
	var c Calibration
	b, err := os.ReadFile(CalibrationPath())
	if err != nil || json.Unmarshal(b, &c) != nil {
		return c, false
	}
	if c.Key != calibrationKey() || time.Since(c.At) > calibrationStale || c.Small.FramesPerCPUSecond <= 0 || c.Large.FramesPerCPUSecond <= 0 {
		return c, false
	}
	return c, true
}

// calibrationSpec is the calibration's small fabric: NDC(2,1) (8 devices, 16 ports) under WebSearch
// at load 0.6 for 2 ms, at D=100, which no agent keeps up with in real time on the machines we have,
// so it runs behind the wall clock, catching up, moving frames as fast as it can. Its batches are as
// large as at any D (link delay and frame time both scale with D), so the number holds for the D it
// is used for.
const calibrationSpec = `name: %s
backend: netns
dilation: 100
topology: {family: ndc, n: 2, k: 1, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: lossy}
workload:
  - {kind: poisson, cdf: websearch, load: 0.6, duration: 2ms}
duration: 3ms
`

// calibrationLargeSpec is the large fabric: fat-tree k=6 (99 devices, 324 ports, between NDC(8,1)'s
// 256 and fat-tree k=8's 768), the same load for 0.5 ms (about 2 M frame-hops: 5-9 CPU-seconds on the
// 2-core VM, plus a few seconds bringing 99 namespaces up and down). Flows and queues build up over a
// run and each frame-hop costs a little more with them (fat-tree k=6 moved 223 k per CPU-second under
// WebSearch for 2 ms against 242-257 k for 0.5 ms, alternated, 5acf6e9), which the large fabric's
// shorter run understates by about a tenth; a run as long costs four times the wait.
const calibrationLargeSpec = `name: %s
backend: netns
dilation: 100
topology: {family: fattree, k: 6, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: lossy}
workload:
  - {kind: poisson, cdf: websearch, load: 0.6, duration: 500us}
duration: 1ms
`

// measure runs one calibration spec (named name) and returns what its agent moved.
func measure(ctx context.Context, yaml, fabric, name string) (CostPoint, error) {
	s, err := spec.Parse([]byte(fmt.Sprintf(yaml, name)))
	if err != nil {
		return CostPoint{}, err
	}
	l, err := lab.Build(s)
	if err != nil {
		return CostPoint{}, err
	}
	_, res, err := Run(ctx, l, RunOptions{Name: name, CrossCheck: -1})
	if err != nil {
		return CostPoint{}, fmt.Errorf("calibrating the agent on %s: %w", fabric, err)
	}
	m := res.Monitor
	if m.CPUTime <= 0 || m.Frames == 0 {
		return CostPoint{}, fmt.Errorf("calibrating the agent on %s: it reported no frames or no CPU time", fabric)
	}
	return CostPoint{Fabric: fabric, Ports: AgentPorts(l), FramesPerCPUSecond: float64(m.Frames) / m.CPUTime.Seconds(),
		Frames: m.Frames, CPUSeconds: m.CPUTime.Seconds()}, nil
}

// calibrationRounds is how many times each calibration fabric runs, alternated; the fastest run of
// each is kept. Other work on the machine only ever slows the agent (the other CPU's processes share
// its caches and the kernel's softirq time): on the 2-core VM at load average 15-23 one fabric's
// frame-hops per CPU-second moved by up to 30% from one minute to the next, which, through two
// points 20 times the ports apart, moved the fitted exponent from 0.14 to 0.28 (5acf6e9,
// 2026-12-07). The fastest of a few is what the agent costs when it has the machine.
const calibrationRounds = 2

// Calibrate measures this machine's agent (netns runs of about 25 s in all; needs root, and the
// namespace lock where others run labs) and caches the result: the small and the large fabric
// alternated calibrationRounds times, the fastest run of each kept.
func Calibrate(ctx context.Context, name string) (Calibration, error) {
	var small, large CostPoint
	for i := 0; i < calibrationRounds; i++ {
		s, err := measure(ctx, calibrationSpec, "NDC(2,1)", name)
		if err != nil {
			return Calibration{}, err
		}
		l, err := measure(ctx, calibrationLargeSpec, "fat-tree k=6", name+"l")
		if err != nil {
			return Calibration{}, err
		}
		if s.FramesPerCPUSecond > small.FramesPerCPUSecond {
			small = s
		}
		if l.FramesPerCPUSecond > large.FramesPerCPUSecond {
			large = l
		}
	}
	c := Calibration{FramesPerCPUSecond: small.FramesPerCPUSecond, Frames: small.Frames, CPUSeconds: small.CPUSeconds,
		Small: small, Large: large, Key: calibrationKey(), At: time.Now().UTC()}
	if b, err := json.MarshalIndent(c, "", "  "); err == nil {
		p := CalibrationPath()
		if os.MkdirAll(filepath.Dir(p), 0o755) == nil {
			_ = os.WriteFile(p, append(b, '\n'), 0o644) // a cache: failing to keep it only costs a re-measure
		}
	}
	return c, nil
}

// RunModel is the cost model a run of l is forecast by, for the agent counts counts: measured on l's
// own fabric (CalibrateFabric: the cached entry, or measured now for the counts it lacks, on o's
// standing lab if given), with the machine's two-fabric calibration added for the counts it did not
// run when one is cached; or, for a lab its own fabric cannot calibrate (FabricCalibratable), the
// two-fabric power law alone, measured now if none is cached. It says which, for the run's notes.
func RunModel(ctx context.Context, l *lab.Lab, counts []int, o CalibrateOptions) (CostModel, string, error) {
	if ok, why := FabricCalibratable(l); ok {
		f, err := CalibrateFabric(ctx, l, counts, o)
		if err != nil {
			return CostModel{}, "", err
		}
		m := CostModel{Fabric: &f}
		if c, ok := LoadCalibration(); ok {
			m.Small, m.Large = c.Small, c.Large
		}
		return m, "calibrated on this fabric " + f.At.Format("2006-01-02 15:04 UTC"), nil
	} else {
		cal, err := MachineCalibration(ctx, o.Name, o.Progress)
		if err != nil {
			return CostModel{}, "", err
		}
		return cal.Model(), fmt.Sprintf("two-fabric calibration of %s (not this fabric's: %s)", cal.At.Format("2006-01-02 15:04 UTC"), why), nil
	}
}

// AutoDilation chooses the dilation of a netns run of l with agents agents whose spec sets none: the
// workload's frame rate against the capacity the run's cost model (RunModel) forecasts for them.
func AutoDilation(ctx context.Context, l *lab.Lab, agents int, o CalibrateOptions) (Choice, error) {
	m, src, err := RunModel(ctx, l, []int{agents}, o)
	if err != nil {
		return Choice{}, err
	}
	c := ChooseDilationFor(FrameRate(l), AgentPorts(l), agents, m)
	c.Why += "; " + src
	return c, nil
}

// ExplicitDilationWarning is CheckDilation for an explicit dilation against the run's cost model
// (measured if need be): "" when it keeps up.
func ExplicitDilationWarning(ctx context.Context, l *lab.Lab, agents int, o CalibrateOptions) (string, error) {
	m, _, err := RunModel(ctx, l, []int{agents}, o)
	if err != nil {
		return "", err
	}
	f := ForecastRun(FrameRate(l), AgentPorts(l), agents, m, l.Spec.Dilation)
	if ok, why := CheckDilation(FrameRate(l), agents, f.Capacity, l.Spec.Dilation); !ok {
		return why, nil
	}
	return "", nil
}

// MachineCalibration is this machine's calibration: the cached one, or measured now (progress, if
// set, is told) and cached.
func MachineCalibration(ctx context.Context, name string, progress func(string)) (Calibration, error) {
	if c, ok := LoadCalibration(); ok {
		return c, nil
	}
	if progress != nil {
		progress(fmt.Sprintf("calibrating this machine's agent on two fabrics (about 25 s, once a week, cached in %s)", CalibrationPath()))
	}
	return Calibrate(ctx, name+"cal")
}

// chooseDilation sets the dilation of a run whose spec sets none (Run): l.Spec.Dilation becomes the
// chosen D, so everything downstream dilates by it; it returns why.
func chooseDilation(ctx context.Context, l *lab.Lab, opts RunOptions) (string, error) {
	agents := opts.Agents
	if agents <= 0 {
		agents = DefaultAgents
	}
	agents = min(agents, len(l.Graph.Nodes))
	name := opts.Name
	if name == "" {
		name = fmt.Sprintf("c%d", os.Getpid())
	}
	c, err := AutoDilation(ctx, l, agents, CalibrateOptions{Name: name, Progress: opts.Progress, Standing: opts.Standing})
	if err != nil {
		return "", err
	}
	l.Spec.Dilation = c.D
	if opts.Progress != nil {
		opts.Progress(c.Why)
	}
	return c.Why, nil
}
