package netns

import (
	"fmt"
	"math"

	"github.com/fabriclab/fabriclab/lab"
)

// An agent's frame-hops per CPU-second are not one number. On the 2-core VM (5acf6e9 to 564ef6f,
// 2026-12-07, WebSearch, one agent catching up, load average 9-23 from other work) it moved 550-670 k
// per CPU-second on NDC(2,1) (16 ports), 370-520 k on fat-tree k=4 (96), 250-360 k on fat-tree k=6
// (324), 186-440 k on NDC(8,1) (256), 185-400 k on Dragonfly(2,4,2) (324) and 140-210 k on fat-tree
// k=8 (768). Half of its CPU is the kernel's (the sendto that moves a batch over a veth into the
// peer's AF_XDP memory), and every port has its own rings and memory, so the more ports an agent
// serves the more of that is out of cache. A power law through two calibration fabrics (Calibrate)
// follows that up to its larger fabric's 324 ports but not beyond (fat-tree k=8 forecast 361 k where
// the agent did 205-220 k, b9f1196): so a run is forecast from its own fabric where it can be
// (CostModel.Fabric, fabriccal.go), and the power law is the fallback.

// CostPoint is one calibration run: a fabric, the ports its agent served, and what it moved.
type CostPoint struct {
	Fabric             string  `json:"fabric"`
	Ports              int     `json:"ports"`
	FramesPerCPUSecond float64 `json:"frames_per_cpu_second"`
	Frames             uint64  `json:"frames"`
	CPUSeconds         float64 `json:"cpu_seconds"`
}

// CostModel is the agent's capacity: measured on the run's own fabric (Fabric, fabriccal.go) for the
// agent counts it ran, else, as a function of the ports an agent serves, through two measured points
// (the power law): frame-hops per CPU-second = Small's x (ports / Small.Ports)^-Exponent().
type CostModel struct {
	Small, Large CostPoint
	Fabric       *FabricCost
}

// Calibrated says whether the model can forecast anything.
func (m CostModel) Calibrated() bool {
	return m.Small.FramesPerCPUSecond > 0 || m.Fabric.PerAgent(1) > 0
}

// AgentCapacity is the frame-hops per second each of agents agents moves on a lab whose agents serve
// ports ports in all, and where the number comes from: the run's own fabric when it was measured
// with that many agents (or, beyond two, with two), else the power law, with lockstepCost for an
// agent among several, else the own fabric's one agent scaled as the power law would scale it.
func (m CostModel) AgentCapacity(ports, agents int) (float64, string) {
	agents = max(agents, 1)
	per := (ports + agents - 1) / agents
	if c := m.Fabric.PerAgent(agents); c > 0 {
		return c, "measured on this fabric"
	}
	law := m.Capacity(per)
	if agents > 1 {
		law /= lockstepCost
	}
	if one := m.Fabric.PerAgent(1); one > 0 {
		if law > 0 && m.Capacity(ports) > 0 {
			return one * law / m.Capacity(ports), "this fabric's one agent, split by the two-fabric power law"
		}
		return one / lockstepCost, "this fabric's one agent, split at the lockstep's cost"
	}
	return law, "the two-fabric power law"
}

// maxCostExponent bounds the fitted exponent: a cost per frame-hop growing faster than the ports
// would be a noisy calibration (the machine busier during the large run), not the agent.
const maxCostExponent = 1

// Exponent is how the cost per frame-hop grows with the ports: ln(cost ratio) / ln(port ratio),
// within [0, maxCostExponent]; 0 with one point (every fabric costs what the small one did).
func (m CostModel) Exponent() float64 {
	s, g := m.Small, m.Large
	if s.Ports <= 0 || g.Ports <= s.Ports || s.FramesPerCPUSecond <= 0 || g.FramesPerCPUSecond <= 0 {
		return 0
	}
	b := math.Log(s.FramesPerCPUSecond/g.FramesPerCPUSecond) / math.Log(float64(g.Ports)/float64(s.Ports))
	return math.Max(0, math.Min(b, maxCostExponent))
}

// Capacity is the frame-hops per CPU-second of one agent serving ports ports (0: not calibrated).
func (m CostModel) Capacity(ports int) float64 {
	if m.Small.FramesPerCPUSecond <= 0 {
		return 0
	}
	if ports <= 0 || m.Small.Ports <= 0 {
		return m.Small.FramesPerCPUSecond
	}
	return m.Small.FramesPerCPUSecond * math.Pow(float64(ports)/float64(m.Small.Ports), -m.Exponent())
}

// lockstepCost is what a frame-hop costs several agents in lockstep against one agent serving as
// many ports: two agents kept 0.57-0.69 of one's frame-hops per CPU-second (docs/performance.md, the
// netns agents' capacity), on top of each serving half the ports.
const lockstepCost = 1.6

// AgentPorts is the ports a lab's agents serve in all: every port of its switches and of its hosts
// but kernel-tcp ones (their NIC is the kernel's).
func AgentPorts(l *lab.Lab) int {
	kernel := map[int]bool{}
	for _, h := range l.Hosts {
		if IsKernelHost(h) {
			kernel[h.Node] = true
		}
	}
	n := 0
	for i, d := range l.Graph.Nodes {
		if !kernel[i] {
			n += len(d.Ports)
		}
	}
	return n
}

// Forecast is how a run is expected to go at dilation D with Agents agents.
type Forecast struct {
	D        float64
	Agents   int
	Ports    int     // ports per agent
	PerAgent float64 // frame-hops per wall second each agent must move at D
	Capacity float64 // frame-hops per second an agent serving Ports moves while behind (lockstep included)
	Source   string  // where Capacity comes from (CostModel.AgentCapacity)
	Busy     float64 // PerAgent / Capacity: the share of a CPU each agent needs
	Pace     float64 // wall time over engine time x D: 1 keeps real time; Busy when that is over 1
}

// ForecastRun forecasts a run of a lab with the given need and ports (AgentPorts) on agents agents
// at dilation d, from this machine's cost model. An agent that needs more than its CPU falls behind
// the wall clock and catches up at the rate it can (the run is slower, not different), so the pace
// is the CPU it needs per second of the schedule; one that needs less keeps real time.
func ForecastRun(need Need, ports, agents int, m CostModel, d float64) Forecast {
	agents = max(agents, 1)
	f := Forecast{D: d, Agents: agents, Ports: (ports + agents - 1) / agents, Pace: 1}
	if d > 0 {
		f.PerAgent = need.PerSecond() / float64(agents) / d
	}
	f.Capacity, f.Source = m.AgentCapacity(ports, agents)
	if f.Capacity > 0 {
		f.Busy = f.PerAgent / f.Capacity
		f.Pace = math.Max(1, f.Busy)
	}
	return f
}

// String says the forecast in a line: "forecast pace 5.3 (each agent needs 5.3 CPUs: ...)".
func (f Forecast) String() string {
	if f.Capacity <= 0 {
		return "no forecast (no calibration of this machine's agent)"
	}
	who := "the agent"
	if f.Agents > 1 {
		who = "each agent"
	}
	if f.Busy <= 1 {
		return fmt.Sprintf("forecast pace 1 (keeps real time, %s busy %.0f%% of it; %s)", who, 100*f.Busy, f.Source)
	}
	return fmt.Sprintf("forecast pace %.2g (%s needs %.2g seconds per second of the schedule: slower than real time, not different; %s)", f.Pace, who, f.Busy, f.Source)
}
