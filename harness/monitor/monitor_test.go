package monitor

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/topo"
)

func ndc21(t *testing.T) *topo.Graph {
	t.Helper()
	g, err := topo.Build("ndc", map[string]string{"n": "2", "k": "1"})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// ringQueues are the egress queues of the NDC(2,1) PFC deadlock ring (lab/deadlock's cycle
// h0:p0 -> s0:p1 -> h1:p1 -> s3:p1 -> h3:p0 -> s1:p0 -> h2:p1 -> s2:p0), by name.
var ringQueues = [][2]string{{"h0", "0"}, {"s0", "1"}, {"h1", "1"}, {"s3", "1"}, {"h3", "0"}, {"s1", "0"}, {"h2", "1"}, {"s2", "0"}}

func ring(t *testing.T, g *topo.Graph, at clock.Time, deq uint64, paused bool) Snapshot {
	t.Helper()
	s := Snapshot{At: at}
	for _, rq := range ringQueues {
		n, err := g.Lookup(rq[0])
		if err != nil {
			t.Fatal(err)
		}
		port := int(rq[1][0] - '0')
		s.Queues = append(s.Queues, QueueState{Device: n, Port: port, Queue: 3, Prio: 3, Bytes: 50000, Paused: paused, Dequeued: deq})
	}
	return s
}

func TestRingDetectedOnlyAfterStall(t *testing.T) {
	g := ndc21(t)
	m := New(g, Config{Stall: clock.Millisecond})
	if m.Observe(ring(t, g, 0, 7, true)) {
		t.Fatal("detected at the first snapshot: nothing has been stalled for 1 ms yet")
	}
	if m.Observe(ring(t, g, 999*clock.Microsecond, 7, true)) {
		t.Fatal("detected before Stall elapsed")
	}
	if !m.Observe(ring(t, g, clock.Millisecond, 7, true)) {
		t.Fatal("not detected after 1 ms of paused, full, motionless queues")
	}
	v := m.Verdict()
	if !v.Detected || v.At != clock.Millisecond || len(v.Cycle) != 8 || v.Cycle[0] != "h0:p0:q3" {
		t.Fatalf("verdict %+v: want the 8-queue ring from h0:p0:q3 (node 0) at 1ms", v)
	}
}

func TestMovingOrUnpausedQueueIsNoDeadlock(t *testing.T) {
	g := ndc21(t)
	m := New(g, Config{Stall: clock.Millisecond})
	for i := 0; i <= 20; i++ {
		at := clock.Time(i) * 100 * clock.Microsecond
		s := ring(t, g, at, 7, true)
		s.Queues[5].Dequeued = uint64(i) // s1:p0 keeps sending a frame now and then
		if m.Observe(s) {
			t.Fatalf("detected at %v with s1:p0 still moving: %v", at, m.Verdict().Cycle)
		}
	}
	m = New(g, Config{Stall: clock.Millisecond})
	for i := 0; i <= 20; i++ {
		s := ring(t, g, clock.Time(i)*100*clock.Microsecond, 7, true)
		s.Queues[2].Paused = false // h1 is not paused: it waits only for its link
		if m.Observe(s) {
			t.Fatalf("detected with an unpaused queue on the ring: %v", m.Verdict().Cycle)
		}
	}
}

// A frame can only wait on a queue of the same or a higher priority (PFC*'s tag only rises).
func TestPriorityRule(t *testing.T) {
	g := ndc21(t)
	m := New(g, Config{Stall: clock.Millisecond})
	for i := 0; i <= 20; i++ {
		s := ring(t, g, clock.Time(i)*100*clock.Microsecond, 7, true)
		for j := range s.Queues {
			if j >= 4 {
				s.Queues[j].Prio = 4 // half the ring moved to a higher priority: the ring never closes back
			}
		}
		if m.Observe(s) {
			t.Fatalf("cycle across a priority drop: %v", m.Verdict().Cycle)
		}
	}
}

// Every on a virtual clock stops when the fabric is idle and once a deadlock is found.
func TestEverySchedule(t *testing.T) {
	g := ndc21(t)
	clk := clock.NewVirtual()
	m := New(g, Config{Stall: 500 * clock.Microsecond, Interval: 100 * clock.Microsecond})
	fired := 0
	stop := m.Every(clk, func() Snapshot { return ring(t, g, clk.Now(), 1, true) }, func() { fired++ }, nil)
	defer stop()
	clk.RunUntil(10 * clock.Millisecond)
	if fired != 1 || m.Verdict().At != 600*clock.Microsecond {
		t.Fatalf("onDetect fired %d times, verdict at %v; want once at 600us (first snapshot 100us + 500us)", fired, m.Verdict().At)
	}
	if m.Snapshots() != 6 {
		t.Fatalf("%d snapshots, want 6: ticking must stop at detection", m.Snapshots())
	}
	idle := New(g, Config{})
	clk2 := clock.NewVirtual()
	idle.Every(clk2, func() Snapshot { return Snapshot{At: clk2.Now()} }, nil, func() bool { return clk2.Pending() == 0 })
	clk2.RunUntil(10 * clock.Millisecond)
	if idle.Snapshots() != 1 {
		t.Fatalf("idle fabric: %d snapshots, want 1", idle.Snapshots())
	}
}
