package netns

import (
	"context"
	"fmt"
	"math"

	"github.com/fabriclab/fabriclab/lab"
)

// How many agents a run gets when the user does not say: as many as the machine's CPUs can carry and
// the fabric justifies, by the forecast (forecast.go) of each count.

// MinDevicesPerAgent is the fewest devices an agent is given when the count is chosen for the user.
// On the 2-core VM two agents took 0.75-0.8 of one's wall time on fat-tree k=4 (36 devices) and
// 0.55-0.65 on Dragonfly(2,4,2) (108), but 0.9-1.4 on NDC(2,1) and NDC(4,1) (8 and 24 devices),
// where the lockstep windows cost more than the halved work saves (DefaultAgents).
const MinDevicesPerAgent = 16

// agentGain is how much shorter a forecast run must be to take one more agent: the model knows the
// lockstep's cost per frame (lockstepCost) but not its waits, so a near tie stays with fewer.
const agentGain = 0.9

// AgentChoice is the agent count chosen for a run, with its forecast and why.
type AgentChoice struct {
	N        int
	D        float64 // the dilation the choice was made at (the spec's, or the one chosen with it)
	Forecast Forecast
	Why      string
}

// CPUs is what a run's agents can count on: the machine's CPUs and its 1-minute load average.
type CPUs struct {
	N    int
	Load float64
}

// Usable is the CPUs the load leaves free, at least one. The agents' loop threads run SCHED_FIFO
// and take a CPU from ordinary processes, yet on the 2-core VM at load average 13-16 two agents
// moved a frame-hop for 1.2-1.8 times one agent's CPU and ran no faster than one (Dragonfly(2,4,2),
// 5acf6e9, 2026-12-07): the other CPU's work, and other labs' agents, share the caches and the
// kernel's softirq time that every frame needs.
func (c CPUs) Usable() int {
	if c.N < 1 {
		return 1
	}
	return min(max(c.N-int(math.Round(c.Load)), 1), c.N)
}

func (c CPUs) String() string {
	return fmt.Sprintf("%d of %d CPUs usable at load average %.1f", c.Usable(), max(c.N, 1), c.Load)
}

// ChooseAgents chooses the agents for a run of l with the given need and ports (AgentPorts) on a
// machine whose cost model is m and whose CPUs are cpus (at most cpus.Usable() agents), at dilation d, or with the dilation chosen for each count when d is 0 (ChooseDilationFor):
// the count whose forecast run is shortest (wall time: D x pace), fewer agents on a near tie. One
// agent, and why, for a lab with kernel-tcp hosts (their TCP keeps the wall clock's time, which the
// forecast does not cover), with flows that wait for others (the split keeps each dependency inside one
// agent, so their hosts share one and the others get only switches: no balance for the forecast to
// weigh), or without a calibration.
func ChooseAgents(l *lab.Lab, need Need, ports int, m CostModel, cpus CPUs, d float64) AgentChoice {
	one := func(why string) AgentChoice {
		c := AgentChoice{N: 1, D: d, Why: "1 agent: " + why}
		if d > 0 {
			c.Forecast = ForecastRun(need, ports, 1, m, d)
		}
		return c
	}
	devices := len(l.Graph.Nodes)
	for _, h := range l.Hosts {
		if IsKernelHost(h) {
			return one("the lab has kernel-tcp hosts (--agents N splits it)")
		}
	}
	for _, f := range l.Flows {
		if len(f.After) > 0 {
			return one("flows wait for others to complete, and the split keeps their hosts in one agent (--agents N splits it all the same)")
		}
	}
	if !m.Calibrated() {
		return one("no calibration of this machine's agent")
	}
	cpuWhy := cpus.String()
	maxN := maxAgents(l, cpus)
	at := func(n int) (float64, Forecast) {
		dn := d
		if dn <= 0 {
			dn = ChooseDilationFor(need, ports, n, m).D
		}
		return dn, ForecastRun(need, ports, n, m, dn)
	}
	d1, f1 := at(1)
	best := AgentChoice{N: 1, D: d1, Forecast: f1}
	wall := func(c AgentChoice) float64 { return c.D * c.Forecast.Pace }
	for n := 2; n <= maxN; n++ {
		dn, fn := at(n)
		c := AgentChoice{N: n, D: dn, Forecast: fn}
		if wall(c) < agentGain*wall(best) {
			best = c
		}
	}
	switch {
	case maxN == 1 && cpus.Usable() == 1:
		best.Why = fmt.Sprintf("1 agent: %s", cpuWhy)
	case maxN == 1:
		best.Why = fmt.Sprintf("1 agent: %d devices (a second agent pays off from %d; %s)", devices, 2*MinDevicesPerAgent, cpuWhy)
	case best.N == 1:
		_, f2 := at(2)
		best.Why = fmt.Sprintf("1 agent: two would not be faster (forecast D=%g pace %.2g against one's D=%g pace %.2g; %s)",
			f2.D, f2.Pace, best.D, best.Forecast.Pace, cpuWhy)
	default:
		best.Why = fmt.Sprintf("%d agents: forecast D=%g pace %.2g against one's D=%g pace %.2g (%s, %d devices)",
			best.N, best.D, best.Forecast.Pace, d1, f1.Pace, cpuWhy, devices)
	}
	return best
}

// maxAgents is the most agents ChooseAgents weighs for l: the CPUs the load leaves free, one per
// MinDevicesPerAgent devices; one for a lab it keeps in one agent (kernel-tcp hosts, flows that wait
// for others).
func maxAgents(l *lab.Lab, cpus CPUs) int {
	for _, h := range l.Hosts {
		if IsKernelHost(h) {
			return 1
		}
	}
	for _, f := range l.Flows {
		if len(f.After) > 0 {
			return 1
		}
	}
	return min(cpus.Usable(), max(len(l.Graph.Nodes)/MinDevicesPerAgent, 1))
}

// AutoAgents chooses the agents of a netns run of l from its cost model (RunModel: measured on its
// own fabric, with every count it weighs, if not cached) and the machine's CPUs, at the
// spec's dilation or, when it sets none, at the one each count would be given.
func AutoAgents(ctx context.Context, l *lab.Lab, cpus CPUs, o CalibrateOptions) (AgentChoice, error) {
	var counts []int
	for n := 1; n <= min(maxAgents(l, cpus), fabricCalMaxAgents); n++ {
		counts = append(counts, n)
	}
	m, src, err := RunModel(ctx, l, counts, o)
	if err != nil {
		return AgentChoice{}, err
	}
	d := 0.0
	if !l.Spec.AutoDilation() {
		d = l.Spec.Dilation
	}
	c := ChooseAgents(l, FrameRate(l), AgentPorts(l), m, cpus, d)
	c.Why += "; " + src
	return c, nil
}
