package netns

import (
	"math"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/records"
)

func TestPaperTimes(t *testing.T) {
	for _, c := range []struct {
		in   string
		d    float64
		want string
	}{
		{"switch 4 port 1 queue 3: lossless drop (headroom) of flow 2 psn 7 from port 0 at 1.5ms", 1000, "switch 4 port 1 queue 3: lossless drop (headroom) of flow 2 psn 7 from port 0 at 1.5us"},
		{"x at 2s and at 40us", 2, "x at 1s and at 20us"},
		{"no time here, at least", 1000, "no time here, at least"},
		{"at 3ms", 1, "at 3ms"},
	} {
		if got := paperTimes(c.in, c.d); got != c.want {
			t.Errorf("paperTimes(%q, %g) = %q, want %q", c.in, c.d, got, c.want)
		}
	}
}

// Flows are paired by id: the averages cover only flows both runs completed, and the others are named.
func TestPairFlows(t *testing.T) {
	us := clock.Microsecond
	netns := []records.Flow{
		{ID: 1, Completed: true, Start: 0, Finish: 1000 * 10 * us}, // D=1000: 10 us
		{ID: 2, Completed: true, Start: 0, Finish: 1000 * 30 * us},
		{ID: 4, Completed: true, Start: 0, Finish: 1000 * 500 * us},
		{ID: 5},
	}
	virt := []records.Flow{
		{ID: 1, Completed: true, Start: 0, Finish: 10 * us},
		{ID: 2, Completed: true, Start: 0, Finish: 20 * us},
		{ID: 3, Completed: true, Start: 0, Finish: 90 * us},
		{ID: 5},
	}
	end := clock.Second
	p := pairFlows(netns, virt, 1000, end, end)
	if p.both != 2 || math.Abs(p.netns-20e-6) > 1e-12 || math.Abs(p.virtual-15e-6) > 1e-12 {
		t.Fatalf("pairs %+v", p)
	}
	if d := p.setDiff(); !strings.Contains(d, "only on netns [4]") || !strings.Contains(d, "schedule-keeping run [3]") {
		t.Fatalf("setDiff = %q", d)
	}
	if d := pairFlows(virt, virt, 1, end, end).setDiff(); d != "" {
		t.Fatalf("identical runs: %q", d)
	}
	// Flow 4 completed 500 us into a 502 us run (netns, D=1000): within 3% of its FCT of the end, so the
	// other run may have missed it by a tolerated difference.
	if d := pairFlows(netns, virt, 1000, 1000*502*us, 1000*502*us).setDiff(); strings.Contains(d, "[4]") {
		t.Fatalf("a flow completed at the run's edge was held against the other run: %q", d)
	}
}
