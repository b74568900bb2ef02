package netns

import (
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// The clock tolerance is half the shortest dilated delay of a link between machines; links inside a
// machine do not count; links of no delay leave a tenth of a frame time.
func TestClockTolerance(t *testing.T) {
	g := &topo.Graph{Nodes: []topo.Node{{Name: "a"}, {Name: "b"}, {Name: "c"}},
		Links: []topo.Link{{A: topo.End{Node: 0}, B: topo.End{Node: 1}, RateBps: 100e9}, {A: topo.End{Node: 1}, B: topo.End{Node: 2}, RateBps: 100e9}}}
	delay := []clock.Time{clock.Millisecond, 5 * clock.Millisecond}
	split := map[int]int{0: 0, 1: 1, 2: 1} // link 0 crosses, link 1 does not
	if got := ClockTolerance(1058, g, delay, split, 1000); got != 500*time.Microsecond {
		t.Errorf("tolerance %v, want 500us (half link 0's 1 ms)", got)
	}
	if got := ClockTolerance(1058, g, []clock.Time{0, 0}, split, 1000); got < 8400*time.Nanosecond || got > 8500*time.Nanosecond {
		t.Errorf("no delay: %v, want a tenth of 1058 B at 100 Mb/s (8.46 us)", got)
	}
	if got := ClockTolerance(1058, g, delay, map[int]int{0: 0, 1: 0, 2: 0}, 1000); got != time.Hour {
		t.Errorf("one machine: %v", got)
	}
}
