package monitor

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/pkt"
)

type ports []*egress.Port

func (d ports) NumPorts() int           { return len(d) }
func (d ports) Port(i int) *egress.Port { return d[i] }

// The watcher keeps entries only for queues that have been paused, and still finds the ring Observe
// finds, at the same tick: the NDC(2,1) ring's queues are paused with a frame each, one queue off the
// ring is paused too, and every other queue of the fabric is never paused.
func TestWatchEntriesOnlyForPausedQueues(t *testing.T) {
	g := ndc21(t)
	clk := clock.NewVirtual()
	devs := map[int]Device{}
	all := 0
	for n := range g.Nodes {
		d := make(ports, len(g.Nodes[n].Ports))
		for p := range d {
			var err error
			d[p], err = egress.New(egress.Config{RateBps: 100e9, Queues: 8, Strict: []int{7}}, clk,
				egress.LinkFunc(func(*pkt.Packet) {}), egress.Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			all += 8
		}
		devs[n] = d
	}
	m := New(g, Config{Stall: clock.Millisecond})
	w := m.Watch(clk, devs, func(_, _, q int) int { return q }, nil, nil)
	if len(w.qs) != 0 {
		t.Fatalf("%d entries before any pause", len(w.qs))
	}
	pause := func(dev, port, q int) {
		pt := devs[dev].Port(port)
		pt.Pause(q, true)
		pt.Enqueue(q, &pkt.Packet{Size: 1000})
	}
	for _, rq := range ringQueues {
		n, err := g.Lookup(rq[0])
		if err != nil {
			t.Fatal(err)
		}
		pause(n, int(rq[1][0]-'0'), 3)
	}
	h0, _ := g.Lookup("h0")
	pause(h0, 0, 5)
	devs[h0].Port(0).Pause(7, true) // strict: never paused, so no entry
	clk.RunUntil(2 * clock.Millisecond)
	if want := len(ringQueues) + 1; len(w.qs) != want || all < 10*want {
		t.Fatalf("%d entries for %d queues, want one per paused queue (%d)", len(w.qs), all, want)
	}
	v := m.Verdict()
	// Queues that never sent count as moving at the first tick (Interval), so Stall after it.
	if !v.Detected || v.At != DefaultInterval+clock.Millisecond || len(v.Cycle) != 8 || v.Cycle[0] != "h0:p0:q3" {
		t.Fatalf("verdict %+v: want the 8-queue ring from h0:p0:q3 at 1.05ms", v)
	}
}
