package netns

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/nodes"
)

// A netns run is faithful only while its agents keep up with the frames the workload puts on the
// fabric; dilation D slows the fabric down by D so that they can. These functions choose D: the
// frame-hops per second of wall time the workload needs at D (FrameRate / D, per agent) against the
// frame-hops per CPU-second this machine's agent moves on a fabric of the lab's size (Calibration,
// calibrate.go; the cost model, forecast.go).

// Dilations are the round values the automatic choice takes, smallest first.
var Dilations = []float64{100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000, 1e6}

// PaceMargin is the share of its measured capacity an agent may be asked for. The calibration runs
// in catch-up (the agent as busy as it can be, its batches as full as they get); at real-time pace it
// writes smaller batches and sleeps between them, so it moves fewer frames per CPU-second, and the
// machine's other work takes some of the CPU. [I] on NDC(4,1) under WebSearch 0.5 (load average
// 10-15 on 2 cores): the estimate is 281 k frame-hops/s at D=1000 (312 k were moved), the calibration
// 322 k per CPU-second, and the pace at D=1000 1.12 (behind real time: at 87% of capacity); at D=2000,
// the choice, it keeps pace.
const PaceMargin = 0.5

// Need is the frame rate a lab's workload puts on the fabric, in engine time (before dilation).
type Need struct {
	FrameHops float64    // frames x links crossed, data and acknowledgements
	Span      clock.Time // engine time they are spread over: first start to the last ideal finish
}

// PerSecond is frame-hops per second of engine time (0 when nothing is sent).
func (n Need) PerSecond() float64 {
	if n.Span <= 0 {
		return 0
	}
	return n.FrameHops / n.Span.Seconds()
}

// FrameRate estimates the frames the lab's flows put on its links: each flow's data frames (its size
// over the MTU payload) and acknowledgements (one per AckEvery data frames) cross its route's links,
// spread over the time from the first flow's start to the latest ideal finish. It is a lower bound
// (no retransmissions, pauses or CNPs), which the margin covers.
func FrameRate(l *lab.Lab) Need {
	mtu, ackEvery := nodes.DefaultMTU, 1
	if len(l.Hosts) > 0 {
		if c, err := l.Hosts[0].Config.WithDefaults(); err == nil {
			mtu, ackEvery = c.MTU, c.AckEvery
		} else if c := l.Hosts[0].Config; c.MTU > 0 {
			// Kernel-tcp hosts are not the Go hosts this config describes (it refuses their transport),
			// but they send frames of the spec's MTU: counted at the Go hosts' default instead, a 9000-byte
			// kernel lab's need came out nine times too high and its dilation a step or two too.
			mtu = c.MTU
		}
	}
	var n Need
	first, last := clock.Time(math.MaxInt64), clock.Time(0)
	for _, f := range l.Flows {
		hops := len(f.Route)
		if hops == 0 {
			hops = max(f.Path.Hops(), 2)
		}
		data := math.Ceil(float64(max(f.Size, 1)) / float64(mtu))
		acks := math.Ceil(data / float64(ackEvery))
		n.FrameHops += (data + acks) * float64(hops)
		first = min(first, f.At)
		last = max(last, f.At+f.Ideal)
	}
	if len(l.Flows) > 0 {
		n.Span = max(last-first, clock.Microsecond)
	}
	return n
}

// Choice is an automatic dilation and why it was chosen.
type Choice struct {
	D        float64
	PerAgent float64 // frame-hops per wall second one agent must move at D
	Capacity float64 // frame-hops per CPU-second this machine's agent measured
	Why      string
	// Forecast is the run's forecast at D (ChooseDilationFor; zero from ChooseDilation).
	Forecast Forecast
}

// ChooseDilationFor is ChooseDilation at the capacity this machine's cost model forecasts for agents
// agents serving ports ports in all, with the forecast pace at the chosen D in Why.
func ChooseDilationFor(need Need, ports, agents int, m CostModel) Choice {
	agents = max(agents, 1)
	capacity := ForecastRun(need, ports, agents, m, 1).Capacity
	c := ChooseDilation(need, agents, capacity)
	if capacity <= 0 {
		return c
	}
	c.Forecast = ForecastRun(need, ports, agents, m, c.D)
	per := "agent"
	if agents > 1 {
		per = fmt.Sprintf("agent of %d in lockstep", agents)
	}
	c.Why = strings.Replace(c.Why, "this machine's agent does",
		fmt.Sprintf("this machine's %s serving %d ports does", per, c.Forecast.Ports), 1)
	if m.Fabric.PerAgent(agents) > 0 { // measured per second of wall time while behind, not of CPU
		c.Why = strings.Replace(c.Why, "per CPU-second (keeping", "per second catching up on this fabric (keeping", 1)
	}
	c.Why += "; " + c.Forecast.String()
	return c
}

// ChooseDilation returns the smallest of Dilations at which each of agents agents needs at most
// PaceMargin of capacity (frame-hops per CPU-second), given the workload's need in engine time. With
// no capacity measured it returns 1000, the suites' value, and says so.
func ChooseDilation(need Need, agents int, capacity float64) Choice {
	agents = max(agents, 1)
	rate := need.PerSecond() / float64(agents)
	if capacity <= 0 {
		return Choice{D: 1000, PerAgent: rate / 1000, Why: "D=1000: no calibration of this machine's agent"}
	}
	if rate == 0 {
		return Choice{D: Dilations[0], Capacity: capacity, Why: fmt.Sprintf("D=%g: the workload sends nothing", Dilations[0])}
	}
	for i, d := range Dilations {
		if rate/d <= PaceMargin*capacity || i == len(Dilations)-1 {
			c := Choice{D: d, PerAgent: rate / d, Capacity: capacity}
			c.Why = fmt.Sprintf("D=%g: needs %s frame-hops/s per agent", d, kilo(c.PerAgent))
			if i > 0 {
				c.Why += fmt.Sprintf(" (%s at D=%g)", kilo(rate/Dilations[i-1]), Dilations[i-1])
			}
			c.Why += fmt.Sprintf(", this machine's agent does %s per CPU-second (keeping within %.0f%% of it)",
				kilo(capacity), 100*PaceMargin)
			return c
		}
	}
	panic("unreachable")
}

// CheckDilation says whether an explicit D keeps pace, and if not, why (a warning to print before
// the run; the run still goes, slower than real time, and the fidelity verdict judges it).
func CheckDilation(need Need, agents int, capacity, d float64) (ok bool, why string) {
	if capacity <= 0 || d <= 0 {
		return true, ""
	}
	rate := need.PerSecond() / float64(max(agents, 1)) / d
	if rate <= capacity {
		return true, ""
	}
	return false, fmt.Sprintf("dilation %g: the workload needs %s frame-hops/s per agent, this machine's agent does %s per CPU-second: expect about %.1fx real time (slower, still faithful while it keeps the schedule), or raise dilation",
		d, kilo(rate), kilo(capacity), rate/capacity)
}

func kilo(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.3g M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.3g k", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}

// calibrationStale is how old a calibration may be before it is measured again.
const calibrationStale = 7 * 24 * time.Hour
