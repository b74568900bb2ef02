package monitor

import (
	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/report"
)

// Watch is the event-driven form of Every for engines that share the watcher's clock (the virtual
// backend). It reaches the verdicts Every reaches on the same run, cycle and time, without the periodic
// pass over every queue, which cost 39% of an incast at fat-tree k=12: it does nothing while no queue is
// paused, and a pause schedules one look at that queue, at the first tick of Every's grid (multiples of
// Interval) at which the queue could count as stalled.
//
// Equivalence with Every/Observe. Observe calls a queue stalled at tick T when it is paused, holds
// bytes and T − since ≥ Stall, where since is the first tick that saw its departure count change (or
// the first tick, Interval, for a queue that never sent). A paused queue cannot send, so since is fixed
// from the moment it is paused: the first tick at or after its last departure (Port.LastDequeue), which
// the watcher computes rather than tracks. A queue can only become stalled at a tick where it is paused,
// so looking at it on the grid from ceil(since + Stall) on, while it stays paused, finds the same first
// stalled tick; and a cycle is found at the tick its last queue becomes stalled, as Observe finds it,
// since the other queues of a cycle stay stalled (none can send). Queues found stalled are kept and
// checked again against the live ports by each later search.
type Watch struct {
	m        *Monitor
	clk      clock.Clock
	sched    func(d clock.Time, f func()) // clk's allocation-free Schedule where it has one (checks are never stopped)
	onDetect func()
	idle     func() bool
	prio     PrioFunc
	// qs holds only queues that have been paused: the rest cannot be stalled, and at fat-tree k=12 an
	// entry for every queue of every port was 2.8 MB, most for queues no pause ever reaches.
	qs      []watched
	byDev   map[int][]int // device -> queues found stalled at some tick, checked live when searched
	stopped bool
	timers  int // checks on the clock, superseded ones included
	// now and deferTo are Defer's (nil: the hooks act at once).
	now     func(dev int) clock.Time
	deferTo func(dev int, apply func())
}

type watched struct {
	port   *egress.Port
	at     clock.Time // when the armed check fires
	check  func()
	dev    int32
	p      int32
	q      int8
	prio   int8 // QueueState.Prio
	armed  bool
	listed bool // found stalled at some tick (and listed in byDev)
}

// st is the queue's identity as a QueueState; the rest is read live.
func (q *watched) st() QueueState {
	return QueueState{Device: int(q.dev), Port: int(q.p), Queue: int(q.q), Prio: int(q.prio)}
}

// Watch hooks every queue of devs (graph node index -> device) that prio does not Skip and returns the
// watcher; onDetect runs once at the first deadlock. idle (may be nil) reports that nothing but the
// watcher's own checks is left on the clock, in which case a check does not re-arm (as Every stops
// ticking on an idle clock).
func (m *Monitor) Watch(clk clock.Clock, devs map[int]Device, prio PrioFunc, onDetect func(), idle func() bool) *Watch {
	w := &Watch{m: m, clk: clk, sched: clock.ScheduleFunc(clk), onDetect: onDetect, idle: idle, prio: prio}
	for dev, d := range devs {
		for p := 0; p < d.NumPorts(); p++ {
			w.hook(dev, p, d.Port(p))
		}
	}
	return w
}

// hook listens to one port's pauses. A queue's entry is made at its first pause: idx[q] is 0 before,
// -1 for a queue prio skips, and 1 + its index in qs after.
func (w *Watch) hook(dev, p int, port *egress.Port) {
	var idx []int32
	paused := func(q int, at clock.Time) {
		if idx == nil {
			idx = make([]int32, port.NumQueues())
		}
		i := idx[q]
		if i == 0 {
			i = w.add(dev, p, q, port)
			idx[q] = i
		}
		if i > 0 {
			if at < 0 {
				at = w.earliest(int(i - 1))
			}
			w.arm(int(i-1), at)
		}
	}
	port.OnPause(func(q int, on bool) {
		if !on {
			return // a resume arms nothing: the armed check sees it
		}
		if w.deferTo != nil {
			// What the pause decides is read now, from the port and its device's clock; the watcher's
			// own state changes when the caller applies it.
			at := max(w.ceil(w.now(dev)), w.ceil(w.ceil(port.LastDequeue(q))+w.m.cfg.Stall))
			w.deferTo(dev, func() { paused(q, at) })
			return
		}
		paused(q, -1)
	})
}

// Defer makes the watcher's hooks, which run in the events of the engines, hand each pause to
// queue(dev, apply) instead of acting on it: the check time it arms is computed at once (from the port
// and now(dev), the clock of the device's own events), the rest when the caller runs apply, on one
// goroutine, in the order of the events that paused. The parallel virtual backend runs engines on
// several goroutines and applies the pauses at its window edges; the checks it arms fall on the grid
// at or after the pause, so a window that never crosses a tick of the grid (Interval) applies them
// before any of them is due. Call it before the run.
func (w *Watch) Defer(now func(dev int) clock.Time, queue func(dev int, apply func())) {
	w.now, w.deferTo = now, queue
}

// add makes queue q's entry and returns idx's code for it (-1 when prio skips it).
func (w *Watch) add(dev, p, q int, port *egress.Port) int32 {
	pr := -1
	if w.prio != nil {
		if pr = w.prio(dev, p, q); pr == Skip {
			return -1
		}
	}
	i := len(w.qs)
	w.qs = append(w.qs, watched{port: port, dev: int32(dev), p: int32(p), q: int8(q), prio: int8(pr)})
	w.qs[i].check = func() { w.fire(i) }
	return int32(i + 1)
}

// Stop unhooks nothing (the engines outlive the run) but makes every pending and future check a no-op.
func (w *Watch) Stop() { w.stopped = true }

// Timers is the number of the watcher's checks on the clock: a clock holding only these is idle.
func (w *Watch) Timers() int { return w.timers }

// Monitor is the monitor whose verdict the watcher sets.
func (w *Watch) Monitor() *Monitor { return w.m }

// NextTick is the first tick of Every's grid at or after t.
func (w *Watch) NextTick(t clock.Time) clock.Time { return w.ceil(t) }

// ceil is the first tick of the grid at or after t (ticks are Interval, 2 Interval, ...).
func (w *Watch) ceil(t clock.Time) clock.Time {
	iv := w.m.cfg.Interval
	if t <= iv {
		return iv
	}
	return (t + iv - 1) / iv * iv
}

// since is Observe's "last seen moving" tick for a queue that is paused now.
func (w *Watch) since(i int) clock.Time {
	q := &w.qs[i]
	return w.ceil(q.port.LastDequeue(int(q.q)))
}

// earliest is the first tick at or after now at which queue i could count as stalled.
func (w *Watch) earliest(i int) clock.Time {
	return max(w.ceil(w.clk.Now()), w.ceil(w.since(i)+w.m.cfg.Stall))
}

func (w *Watch) arm(i int, at clock.Time) {
	q := &w.qs[i]
	if w.stopped || (q.armed && q.at <= at) {
		return // the earlier check re-arms if it must
	}
	// A later check already scheduled stays on the clock and finds q.at moved; it fires as a no-op.
	q.armed, q.at = true, at
	w.timers++
	w.sched(at-w.clk.Now(), q.check)
}

func (w *Watch) fire(i int) {
	w.timers--
	q := &w.qs[i]
	now := w.clk.Now()
	if !q.armed || q.at != now {
		return // superseded by an earlier check, which re-armed as it needed
	}
	q.armed = false
	if w.stopped || w.m.verdict.Detected || !q.port.Paused(int(q.q)) {
		return // resumed: the next pause arms again
	}
	if now-w.since(i) < w.m.cfg.Stall {
		w.rearm(i, w.ceil(w.since(i)+w.m.cfg.Stall))
		return
	}
	if q.port.Bytes(int(q.q)) == 0 {
		w.rearm(i, now+w.m.cfg.Interval) // paused and empty: stalled once a frame arrives and stays
		return
	}
	w.search(i, now)
}

func (w *Watch) rearm(i int, at clock.Time) {
	if w.idle != nil && w.idle() {
		return
	}
	w.arm(i, at)
}

// isStalled is Observe's test, on the live port.
func (w *Watch) isStalled(i int, now clock.Time) bool {
	q := &w.qs[i]
	return q.port.Paused(int(q.q)) && q.port.Bytes(int(q.q)) > 0 && now-w.since(i) >= w.m.cfg.Stall
}

// search looks for a cycle through queue i, just found stalled, among the queues found stalled before
// (checked again against the live ports as the search reaches them): with no cycle before, a new one
// must pass through i, so the search is local, not a pass over every stalled queue (an incast at k=12
// holds thousands). Once a cycle exists, the verdict is Observe's: its cycle among every queue stalled
// now, from one pass over all watched queues.
func (w *Watch) search(i int, now clock.Time) {
	if w.byDev == nil {
		w.byDev = map[int][]int{}
	}
	if q := &w.qs[i]; !q.listed {
		q.listed = true
		w.byDev[int(q.dev)] = append(w.byDev[int(q.dev)], i)
	}
	if !w.cycleThrough(i, now) {
		return
	}
	var st []QueueState
	for j := range w.qs {
		if w.isStalled(j, now) {
			q := &w.qs[j]
			s := q.st()
			s.Bytes, s.Paused = q.port.Bytes(int(q.q)), true
			st = append(st, s)
		}
	}
	cycle := w.m.findCycle(st)
	if cycle == nil {
		return
	}
	names := make([]string, len(cycle))
	for k, q := range cycle {
		names[k] = w.m.Name(q)
	}
	w.m.verdict = report.DeadlockVerdict{Detected: true, Cycle: names, At: now}
	w.stopped = true
	if w.onDetect != nil {
		w.onDetect()
	}
}

// cycleThrough is a breadth-first search along findCycle's wait-for edges, among listed queues still
// stalled at now, from queue i back to it.
func (w *Watch) cycleThrough(i int, now clock.Time) bool {
	g := w.m.g
	if g == nil {
		return false
	}
	seen := map[int]bool{i: true}
	frontier := []int{i}
	for len(frontier) > 0 {
		x := frontier[0]
		frontier = frontier[1:]
		q1 := w.qs[x].st()
		if q1.Device >= len(g.Nodes) || q1.Port >= len(g.Nodes[q1.Device].Ports) {
			continue
		}
		peer := g.Peer(q1.Device, q1.Port)
		for _, j := range w.byDev[peer.Node] {
			q2 := w.qs[j].st()
			if q2.Port == peer.Port || !mayHold(q1, q2) {
				continue
			}
			if j == i {
				return true
			}
			if !seen[j] && w.isStalled(j, now) {
				seen[j] = true
				frontier = append(frontier, j)
			}
		}
	}
	return false
}
