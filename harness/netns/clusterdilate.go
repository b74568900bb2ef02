package netns

import (
	"fmt"
	"strings"
	"time"

	"github.com/fabriclab/fabriclab/lab"
)

// MachineCal is one machine of a run over several: its name, its agent's calibration (measured on
// that machine: a slow machine, such as a VM under emulation, measures slow) and how far its clock
// may be from the coordinator's (the clock probes' offset error).
type MachineCal struct {
	Name     string
	Cal      Calibration
	ClockErr time.Duration
}

// ClusterDilation chooses the dilation of a run over machines whose spec sets none, by the rule a run
// on one machine follows (ChooseDilationFor), for every machine: one agent per machine, in lockstep,
// at that machine's own calibration. The slowest machine sets D, since the others wait for it every
// window. D is raised further, if need be, until every machine's clock is within the tolerance D
// gives (ClockTolerance: half the dilated delay of the shortest link between machines, over the split
// the run will make); where no D of Dilations gives that, the largest pace D is returned and the run's
// clock check refuses it, naming the machine.
func ClusterDilation(l *lab.Lab, machines []MachineCal) (Choice, error) {
	n := len(machines)
	if n == 0 {
		return Choice{}, fmt.Errorf("no machines")
	}
	need, ports := FrameRate(l), AgentPorts(l)
	var best Choice
	slowest := 0
	for i, m := range machines {
		if c := ChooseDilationFor(need, ports, n, m.Cal.Model()); i == 0 || c.D > best.D {
			best, slowest = c, i
		}
	}
	s := machines[slowest]
	why := fmt.Sprintf("machine %s (the slowest of %d, calibrated %s): %s", s.Name, n, s.Cal.At.Format("2006-01-02 15:04 UTC"),
		strings.Replace(best.Why, "this machine's", "its", 1))
	for _, d := range Dilations {
		if d < best.D {
			continue
		}
		late, tol, err := clockFits(l, machines, d)
		if err != nil {
			return Choice{}, err
		}
		if late != "" {
			continue
		}
		if d > best.D {
			why = fmt.Sprintf("D=%g: every machine's clock within %v, half the dilated delay of the shortest link between machines (the pace alone: %s)", d, tol, why)
			best.Forecast = ForecastRun(need, ports, n, s.Cal.Model(), d)
			best.PerAgent = need.PerSecond() / float64(n) / d
		}
		best.D, best.Why = d, why
		return best, nil
	}
	best.Why = why
	return best, nil
}

// clockFits names a machine whose clock error exceeds the tolerance of a run at dilation d ("" when
// none), with the tolerance.
func clockFits(l *lab.Lab, machines []MachineCal, d float64) (string, time.Duration, error) {
	dl, err := Dilate(l, d)
	if err != nil {
		return "", 0, err
	}
	agentOf, _ := TrafficParts(l, dl, len(machines))
	tol := ClockTolerance(DataFrameBytes(l), l.Graph, dl.LinkDelay, agentOf, d)
	for _, m := range machines {
		if m.ClockErr > tol {
			return m.Name, tol, nil
		}
	}
	return "", tol, nil
}
