package virtual_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/monitor"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/records"
)

// TestParallelCheckAtRelease: a deadlock check and a release due at one tick of the monitor's grid.
// One clock fires whichever was scheduled first; the check finds the deadlock and the run stops. A
// split run must do the same, both ways round:
//
//   - released before the check was armed: the release fires first and starts its flow (its events
//     counted, its record written), then the check stops the run;
//   - released after: the check stops the run first and the flow never starts.
//
// The ring deadlock gets two extra one-frame flows from one host: p, and d, which waits for p and is
// planned to start at the very tick the sequential run finds the deadlock (measured first with d
// planned past the end, which leaves the run before it unchanged). p starts at 0 and completes long
// before the loop flows start, so before any check on the deadlock is armed; or it starts 30 us before
// the tick and completes within them, after the check that finds the deadlock was armed (the
// sequential run shows which came first: whether d started).
func TestParallelCheckAtRelease(t *testing.T) {
	yaml := parallelCases(t)["pfc ring deadlock"]
	build := func(pAt, dAt clock.Time) (*lab.Lab, uint32, uint32) {
		l := buildLab(t, yaml)
		var id uint32
		for _, fp := range l.Flows {
			id = max(id, fp.ID)
		}
		p := l.Flows[0]
		p.ID, p.Size, p.At, p.After = id+1, 1000, pAt, nil
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

	l, _, _ := build(0, 1<<62)
	probe, _ := run(l, 1)
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
	for _, c := range []struct {
		name        string
		pAt         clock.Time
		doneBy      clock.Time // p completes before this
		releaseWins bool
	}{
		{"released before the check was armed", 0, loopStart, true},
		{"released after the check was armed", tick - 30*clock.Microsecond, tick, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, pID, _ := build(c.pAt, 1<<62)
			probe, probeLog := run(l, 1)
			if pr := record(probeLog, pID); pr == nil || !pr.Completed || pr.Finish >= c.doneBy || probe.Deadlock.At != tick {
				t.Fatalf("flow %d did not complete before %v, or the deadlock moved (%+v): %+v", pID, c.doneBy, probe.Deadlock, pr)
			}
			l, _, dID := build(c.pAt, tick)
			want, wantLog := run(l, 1)
			if !want.Deadlock.Detected || want.Deadlock.At != tick {
				t.Fatalf("with flow %d released at %v the deadlock is found at %+v, not at that tick", dID, tick, want.Deadlock)
			}
			dr := record(wantLog, dID)
			if started := dr != nil && dr.Start == tick; started != c.releaseWins {
				t.Fatalf("the sequential run: flow %d started at the check's tick %v: %v, want %v (%+v)", dID, tick, started, c.releaseWins, dr)
			}
			for _, n := range []int{2, 3} {
				l, _, _ := build(c.pAt, tick)
				got, log := run(l, n)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%d parts: result %+v, sequential %+v", n, got, want)
				}
				if d := diffLogs(wantLog, log); d != "" {
					t.Errorf("%d parts: %s (flow %d: %+v, sequential %+v)", n, d, dID, record(log, dID), record(wantLog, dID))
				}
			}
		})
	}
}
