package virtual_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/monitor"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/records"
)

// TestParallelCheckAtRelease: a deadlock check and a release due at one tick of the monitor's grid, the
// check armed after the release was scheduled. On one clock the release fires first (it was scheduled
// first) and starts its flow; then the check finds the deadlock and the run stops. A split run must do
// the same: the released flow started, its events counted, its record written.
//
// The ring deadlock gets two extra one-frame flows from one host: p at 0, which completes long before
// the loop flows start (so before any check on the deadlock is armed), and d, waiting for p, planned to
// start at the very tick the sequential run finds the deadlock (measured first with d planned past
// the end, which leaves the run before it unchanged).
func TestParallelCheckAtRelease(t *testing.T) {
	yaml := parallelCases(t)["pfc ring deadlock"]
	build := func(dAt clock.Time) (*lab.Lab, uint32, uint32) {
		s, err := spec.Parse([]byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		s.Backend = "virtual"
		l, err := lab.Build(s)
		if err != nil {
			t.Fatal(err)
		}
		var id uint32
		for _, fp := range l.Flows {
			id = max(id, fp.ID)
		}
		p := l.Flows[0]
		p.ID, p.Size, p.At, p.After = id+1, 1000, 0, nil
		d := p
		d.ID, d.At, d.After = id+2, dAt, []uint32{p.ID}
		l.Flows = append(l.Flows, p, d)
		return l, p.ID, d.ID
	}
	run := func(l *lab.Lab, n int) (virtual.Result, *records.Log) {
		var f *virtual.Fabric
		var err error
		if n == 1 {
			f, err = virtual.New(l)
		} else {
			f, _, err = virtual.NewParallel(l, keepDependencies(l, n))
		}
		if err != nil {
			t.Fatal(err)
		}
		f.Monitor = monitor.New(l.Graph, monitor.Config{Stall: 137 * clock.Microsecond})
		return f.Run(context.Background()), f.Log
	}
	record := func(log *records.Log, id uint32) *records.Flow {
		for i := range log.Flows {
			if log.Flows[i].ID == id {
				return &log.Flows[i]
			}
		}
		return nil
	}

	l, pID, _ := build(1 << 62)
	probe, probeLog := run(l, 1)
	tick := probe.Deadlock.At
	if !probe.Deadlock.Detected {
		t.Fatalf("the ring did not deadlock: %+v", probe)
	}
	loopStart := clock.Time(1 << 62)
	for _, fp := range l.Flows {
		if fp.Class == "loop" {
			loopStart = min(loopStart, fp.At)
		}
	}
	if pr := record(probeLog, pID); pr == nil || !pr.Completed || pr.Finish >= loopStart {
		t.Fatalf("flow %d did not complete before the loop flows start at %v: %+v", pID, loopStart, pr)
	}

	l, _, dID := build(tick)
	want, wantLog := run(l, 1)
	if !want.Deadlock.Detected || want.Deadlock.At != tick {
		t.Fatalf("with flow %d released at %v the deadlock is found at %+v, not at that tick", dID, tick, want.Deadlock)
	}
	if dr := record(wantLog, dID); dr == nil || dr.Start != tick {
		t.Fatalf("the sequential run did not start flow %d at the check's tick %v: %+v", dID, tick, dr)
	}
	for _, n := range []int{2, 3} {
		l, _, _ := build(tick)
		got, log := run(l, n)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%d parts: result %+v, sequential %+v", n, got, want)
		}
		if d := diffLogs(wantLog, log); d != "" {
			t.Errorf("%d parts: %s (flow %d: %+v, sequential %+v)", n, d, dID, record(log, dID), record(wantLog, dID))
		}
	}
}
