package bench

import (
	"testing"

	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/netns"
)

// The frame count RunBinary reads is the frames written, in both of the fidelity line's forms as this
// build prints them, and in 26274ad's (a line that build printed, kept as the format it must read).
func TestFramesWrittenFromFidelityLines(t *testing.T) {
	scheduled := lockstep.AgentFidelity{Frames: 935256, LateFrames: 700, Arrivals: 935000, RxFrames: 935000}
	unscheduled := lockstep.AgentFidelity{Frames: 4242, LateFrames: 17, RxFrames: 4000}
	if scheduled.Scheduled() == unscheduled.Scheduled() {
		t.Fatal("the two cases must take the two forms")
	}
	for _, c := range []struct {
		line string
		want uint64
	}{
		{netns.Verdict(scheduled, 0.05).Reason, 935256},
		{netns.Verdict(unscheduled, 0.05).Reason, 4242},
		{"fidelity: faithful: 0 of 930205 frames (0.00%) taken more than one serialization time after their scheduled arrival (bound 5%), mean error 12.74us, max 21.16us; in wall time 913982 of 930205 left late (mean 1.25368s, max 2.65628s); timer lag", 930205},
	} {
		if got, ok := framesWritten("a/b: 106/110 flows completed\n  " + c.line + "\n"); !ok || got != c.want {
			t.Errorf("%q: read %d (%v), want %d", c.line, got, ok, c.want)
		}
	}
	if _, ok := framesWritten("no fidelity here"); ok {
		t.Error("read a count from a line without one")
	}
}
