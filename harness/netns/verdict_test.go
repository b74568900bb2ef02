package netns

import (
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/records"
)

// A lossless drop is the machine's only when an agent stalled past what headroom covers; otherwise it
// stays the engines' and the run stays faithful, so a suite fails on the drop itself.
func TestStallVerdict(t *testing.T) {
	budget := stallBudget(&Dilated{LinkDelay: []clock.Time{3 * clock.Millisecond, clock.Millisecond}})
	if budget != 2*clock.Millisecond {
		t.Fatalf("budget %v, want 2ms (twice the shortest dilated link delay)", budget)
	}
	ok := Verdict(AgentFidelity{Frames: 100}, DefaultFidelityBound)
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
		f := stallVerdict(ok, AgentFidelity{TimerLagMax: c.lag}, c.log, budget)
		if f.Faithful != c.faithful {
			t.Errorf("%s: faithful %v, want %v (%s)", c.name, f.Faithful, c.faithful, f.Reason)
		}
		if !c.faithful && !strings.Contains(f.Reason, "1 lossless drops after an agent stalled 5ms") {
			t.Errorf("%s: reason %q does not name the drops and the stall", c.name, f.Reason)
		}
	}
}
