package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/report"
	"github.com/fabriclab/fabriclab/traffic"
	"github.com/fabriclab/fabriclab/units"
)

// showProgress is set by lab run unless -q; backends draw a progress bar when it is set and stderr is
// a terminal.
var showProgress bool

// sampleEvery is lab run --sample-every: the switches' queue sampling period (0: off).
var sampleEvery timeFlag

// checkSampling refuses a --sample-every that would record more queue samples than the work budget
// allows (a 1ps period on a 2 ms run ran out of memory), before the run starts.
func checkSampling(l *lab.Lab) error {
	if sampleEvery <= 0 {
		return nil
	}
	b, err := workBudget()
	if err != nil {
		return err
	}
	return b.CheckSamples(l, sampleEvery.Clock(), "--sample-every "+sampleEvery.String())
}

// timeFlag is a command-line time with a unit (10us, 1ms), as specs write them.
type timeFlag clock.Time

func (t *timeFlag) String() string { return clock.Time(*t).String() }
func (t *timeFlag) Type() string   { return "time" }
func (t *timeFlag) Set(v string) error {
	x, err := units.ParseTime(v)
	if err != nil {
		return err
	}
	if x < 0 {
		return fmt.Errorf("%s is negative", v)
	}
	*t = timeFlag(x)
	return nil
}
func (t timeFlag) Clock() clock.Time { return clock.Time(t) }

// writeSchedule writes the flow schedule before the run starts, as HPCC's flow.txt and as an htsim
// connection matrix (flow.cm, current csg-htsim syntax: starts in picoseconds), so the exact workload of
// a run (interrupted or not) can be replayed by lab, by the HPCC simulator or by htsim (the matched
// comparison, lab/experiments/matched-htsim/README.md). flow.txt cannot say "starts when these
// complete"; flow.cm can, so only flow.cm keeps a schedule's dependencies (ps, moe, htsim triggers).
func writeSchedule(out string, l *lab.Lab) error {
	s := make(traffic.Schedule, len(l.Flows))
	for i, f := range l.Flows {
		s[i] = f.Flow
	}
	var b bytes.Buffer
	if err := traffic.WriteHPCC(&b, s); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, report.ScheduleFile), b.Bytes(), 0o644); err != nil {
		return err
	}
	b.Reset()
	if err := traffic.WriteHTSim(&b, s, len(l.Graph.Hosts)); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, report.HTSimScheduleFile), b.Bytes(), 0o644)
}

// writeSamples writes queues.csv when the run sampled queues.
func writeSamples(out string, log *records.Log, meta report.Meta) error {
	if len(log.Samples) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err := report.WriteQueuesCSV(&b, log, meta); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, report.QueuesFile), b.Bytes(), 0o644)
}

// backendsWithDependencies lists the backends that start a flow only after the flows in its After have
// completed (ps, moe and htsim triggers need it); a backend joins when it does.
var backendsWithDependencies = map[string]bool{"virtual": true}

// checkDependencies refuses a schedule with dependencies on a backend that would start those flows at
// their planned time regardless, which would silently measure a different workload.
func checkDependencies(backend string, l *lab.Lab) error {
	if backendsWithDependencies[backend] {
		return nil
	}
	for _, f := range l.Flows {
		if len(f.After) > 0 {
			return fmt.Errorf("backend: %s does not yet start flows on their dependencies' completion, which workload %q needs (ps, moe and htsim triggers do); run it on backend virtual", backend, f.Class)
		}
	}
	return nil
}
