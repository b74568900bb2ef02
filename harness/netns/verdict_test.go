package netns

import (
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/records"
)

// A lossless drop is the machine's only when an agent stalled past what headroom covers; otherwise it
// stays the engines' and the run stays faithful, so a suite fails on the drop itself.
func TestStallVerdict(t *testing.T) {
	budget := stallBudget(&Dilated{LinkDelay: []clock.Time{3 * clock.Millisecond, clock.Millisecond}})
	if budget != 2*clock.Millisecond {
		t.Fatalf("budget %v, want 2ms (twice the shortest dilated link delay)", budget)
	}
	ok := Verdict(lockstep.AgentFidelity{Frames: 100}, DefaultFidelityBound)
	lossless := &records.Log{Drops: []records.Drop{{Lossless: true, Reason: "headroom"}, {Reason: "buffer"}}}
	lossy := &records.Log{Drops: []records.Drop{{Reason: "buffer"}}}
	for _, c := range []struct {
		name     string
		lag      clock.Time
		log      *records.Log
		faithful bool
	}{
		{"long stall, lossless drop", 5 * clock.Millisecond, lossless, false},
		{"short stall, lossless drop", clock.Millisecond, lossless, true},
		{"long stall, only lossy drops", 5 * clock.Millisecond, lossy, true},
	} {
		f := stallVerdict(ok, lockstep.AgentFidelity{TimerLagMax: c.lag}, c.log, budget)
		if f.Faithful != c.faithful {
			t.Errorf("%s: faithful %v, want %v (%s)", c.name, f.Faithful, c.faithful, f.Reason)
		}
		if !c.faithful && !strings.Contains(f.Reason, "1 lossless drops after an agent stalled 5ms") {
			t.Errorf("%s: reason %q does not name the drops and the stall", c.name, f.Reason)
		}
	}
}

// A lab whose agents read only frames they wrote themselves is judged by how late the engines took
// frames against their schedule, not by how late they left in wall time; any other lab by the latter.
func TestVerdictScheduled(t *testing.T) {
	for _, c := range []struct {
		name     string
		m        lockstep.AgentFidelity
		faithful bool
		why      string
	}{
		{"scheduled, on time though late in wall time", lockstep.AgentFidelity{Frames: 100, LateFrames: 90, RxFrames: 100, Arrivals: 100, LateArrivals: 1}, true, "1 of 100 frames"},
		{"scheduled, taken late", lockstep.AgentFidelity{Frames: 100, RxFrames: 100, Arrivals: 100, LateArrivals: 10}, false, "could not keep up with the schedule"},
		{"scheduled, the kernel refused frames", lockstep.AgentFidelity{Frames: 100, RxFrames: 100, Arrivals: 100, KernelFull: 3}, false, "the kernel refused 3 frames"},
		{"frames from elsewhere, late in wall time", lockstep.AgentFidelity{Frames: 100, LateFrames: 90, RxFrames: 100, Arrivals: 50}, false, "90 of 100 frames (90.00%) left"},
		{"frames from elsewhere, on time", lockstep.AgentFidelity{Frames: 100, LateFrames: 1, RxFrames: 100, Arrivals: 50, LateArrivals: 50}, true, "1 of 100 frames (1.00%) left"},
	} {
		f := Verdict(c.m, DefaultFidelityBound)
		if f.Faithful != c.faithful || !strings.Contains(f.Reason, c.why) {
			t.Errorf("%s: faithful %v (%s), want %v and a reason with %q", c.name, f.Faithful, f.Reason, c.faithful, c.why)
		}
	}
	// A scheduled lab kept its schedule through any stall: a lossless drop there is the engines'.
	drop := &records.Log{Drops: []records.Drop{{Lossless: true, Reason: "headroom"}}}
	m := lockstep.AgentFidelity{Frames: 100, RxFrames: 100, Arrivals: 100, TimerLagMax: clock.Second}
	if f := stallVerdict(Verdict(m, DefaultFidelityBound), m, drop, clock.Millisecond); !f.Faithful {
		t.Errorf("a scheduled lab's drop after a stall was put on the machine: %s", f.Reason)
	}
}

// Kernel hosts in lockstep: the lab is not scheduled (kernel frames are taken when read), yet a frame
// between agents read after its due time, or lost, still breaks the run.
func TestVerdictKernelLockstep(t *testing.T) {
	m := lockstep.AgentFidelity{Frames: 1000, RxFrames: 1000, Arrivals: 300, CrossFrames: 300}
	if m.Scheduled() {
		t.Fatal("a lab whose agents read kernel frames is not scheduled")
	}
	if f := Verdict(m, DefaultFidelityBound); !f.Faithful {
		t.Fatalf("no late frame, nothing lost: %s", f.Reason)
	}
	for _, c := range []lockstep.AgentFidelity{{LateCross: 1, MaxCrossLate: clock.Microsecond}, {LostCross: 2}} {
		bad := m
		bad.LateCross, bad.MaxCrossLate, bad.LostCross = c.LateCross, c.MaxCrossLate, c.LostCross
		if f := Verdict(bad, DefaultFidelityBound); f.Faithful || !strings.Contains(f.Reason, "lockstep failed") {
			t.Errorf("late %d, lost %d: faithful %v (%s)", c.LateCross, c.LostCross, f.Faithful, f.Reason)
		}
	}
}
