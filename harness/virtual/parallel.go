package virtual

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/monitor"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
)

// The parallel virtual backend (docs/architecture.md §The parallel virtual backend). The fabric is split
// into parts, each with its own clock, log and packet pool, run by one worker goroutine each, in windows
// no longer than the lookahead: the smallest delay of a link between two parts. A frame sent in a window
// arrives after it ends, so within a window the parts cannot affect each other, and at its edge the
// frames a part sent across are handed to their receivers' halves of the links. Every event keeps the
// key it has in the sequential run (time, device Order; a device's events all live in one part, where
// they keep their scheduling order), so the engines see the same events in the same order.
//
// What is not local to a part is kept in the sequential order by the coordinator, at window edges:
//   - harness events (the deadlock monitor's checks, faults) stay on Fabric.Clock and fire between
//     windows, which end at the next harness event, so they see every device's events of their instant
//     and nothing later;
//   - the pauses the monitor hears are applied in event order (monitor.Watch.Defer); windows never cross
//     its grid, on which the checks they arm fall;
//   - flow records, violations and reorder notes go to Log in event order (each part marks the events
//     that wrote some);
//   - a run that stops once every flow is done stops after the very event that completed the last
//     flow: the parts still holding flows run first and stop when their last flow completes, then the
//     others run up to that event and no further;
//   - a run past its end fires exactly one event beyond it, as the sequential loop does.
// The byte meters widen their bins per part; detachMeters evens them.
//
// Flows that wait for others (after:) are released on the part's own clock (releaseIn): the split keeps
// a flow's source NIC with its predecessors' (netns.TrafficParts' dependency groups; NewParallel refuses
// any other), so a completion and the release it causes happen in one part. A release and a deadlock
// check due at one instant fire in the order the sequential clock scheduled them (releaseFirst).

// part is one worker's share of the fabric.
type part struct {
	clk  *clock.Virtual
	log  *records.Log
	pool *pkt.Pool
	bin  *meterBin // its links' meters' bins

	started int
	rem     int  // flows sent from here not yet completed
	stop    bool // the event just fired completed rem's last flow (stop-when-done runs)
	// paused, pauseAt, pauseO: the part stopped in this window at the event (pauseAt, pauseO).
	paused  bool
	pauseAt clock.Time
	pauseO  clock.Order

	dirty   []*crossing // its links into other parts that carry frames not yet handed over
	notes   []func()    // the monitor's pauses (monitor.Watch.Defer), applied by the coordinator
	unwired uint64      // frames the wire could not carry (Fabric.Unwired)
	unwIdx  []int       // indices into log.Violations that are unwired-frame notes, for the cap
	unwKept int         // unwired notes written in all (at most maxUnwired+1 are worth writing)
	marks   []mark      // the events of this window that wrote flow records, violations, reorders or notes
	mi      int         // marks[:mi] are merged
	mk      mark        // lengths at the last mark
	cur     mark        // lengths already moved by the coordinator
	// unjust is the latest time of stopped events this part discarded after its last fired event: a
	// sequential clock would still hold them if the run went idle now (Horizon).
	unjust clock.Time
	// rel is the release fired last at this part's instant relAt (releaseIn): the events after it at
	// that instant are it and its cascade, and their marks carry its key.
	rel   relKey
	relAt clock.Time
	// rels holds the keys of the releases scheduled and not yet fired, by the time they are due, in
	// the order they fire (their scheduling order): the coordinator places each among the deadlock
	// checks due at its instant (releaseFirst).
	rels map[clock.Time][]relKey
}

// relKey places a release, and the events it causes at its instant, among the harness-class events
// of that instant: by when and by which device's event it was scheduled (the sequential clock's
// sequence). on is false for the events before any release of the instant. n is the count of events
// the part had fired with that one (clock.Virtual.Fired): it orders two events of one device at one
// instant, which lie in one part.
type relKey struct {
	on bool
	at clock.Time
	o  clock.Order
	n  uint64
}

// armKey is the sequential sequence of a harness-class event, told by the event that scheduled it:
// its time, its device (clock.Harness for a harness event or an event a release caused, which come
// after every device's events of their instant) and n, as relKey's. The sequential clock numbers
// events as they are scheduled, and events are scheduled as others fire, in this order.
type armKey struct {
	at clock.Time
	o  clock.Order // device's Order (class ignored) or clock.Harness
	n  uint64
}

func (a armKey) before(b armKey) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if da, db := a.o.Device(), b.o.Device(); da != db {
		return da < db
	}
	return a.n < b.n
}

// checkClock is Fabric.Clock as the deadlock monitor's watcher of a split run sees it: every check
// it schedules is noted, by the time it is due, with the key of the event that armed it (arming, set
// by merge as it applies a pause; a check's own re-arming, at a tick, is a harness event's), so that
// the coordinator can fire the checks and the parts' releases of one instant in the sequential order
// (releaseFirst). The watcher never stops a check (monitor.Watch.arm), so the notes of an instant
// are popped in the order its checks fire.
type checkClock struct {
	v      *clock.Virtual
	keys   map[clock.Time][]armKey
	arming *armKey
}

func (c *checkClock) Now() clock.Time { return c.v.Now() }

func (c *checkClock) note(d clock.Time) (clock.Time, func()) {
	at := c.v.Now() + max(d, 0)
	k := armKey{at: c.v.Now(), o: clock.Harness}
	if c.arming != nil {
		k = *c.arming
	}
	c.keys[at] = append(c.keys[at], k)
	return at, func() {
		if q := c.keys[at]; len(q) > 1 {
			c.keys[at] = q[1:]
		} else {
			delete(c.keys, at)
		}
	}
}

func (c *checkClock) Schedule(d clock.Time, f func()) {
	_, pop := c.note(d)
	c.v.Schedule(d, func() { pop(); f() })
}

func (c *checkClock) AfterFunc(d clock.Time, f func()) clock.Timer {
	_, pop := c.note(d)
	return c.v.AfterFunc(d, func() { pop(); f() })
}

// front is the key of the check that fires first at t (ok false: none due at t).
func (c *checkClock) front(t clock.Time) (armKey, bool) {
	if q := c.keys[t]; len(q) > 0 {
		return q[0], true
	}
	return armKey{}, false
}

// mark is the lengths of a part's lists after one event that grew them, and the event's key.
type mark struct {
	at                        clock.Time
	o                         clock.Order
	n                         uint64 // the part's events fired with this one (relKey.n)
	rel                       relKey
	flows, viol, reord, notes int
}

// arm is the armKey of the event of mark m: a check its pause arms comes in the sequential sequence
// where that event scheduled it.
func (m *mark) arm() armKey {
	if m.rel.on {
		return armKey{at: m.at, o: clock.Harness}
	}
	return armKey{at: m.at, o: m.o, n: m.n}
}

// before says whether the event of mark m comes before the event of mark b, of another part, in the
// sequential run. At one instant the sequential clock fires every device's events (by Order), then the
// harness-class events by their sequence, each release followed by the events it causes at that
// instant (a device's, so of smaller Order than Harness). A release's sequence is the order in which
// the sequential run scheduled it: by the instant and device of the completion that did (completions
// are events of a source NIC receiving an acknowledgement, never caused by a release at their instant,
// which only starts flows), and one device's releases all lie in one part, where they keep their order.
func (m *mark) before(b *mark) bool {
	if m.at != b.at {
		return m.at < b.at
	}
	if m.rel.on != b.rel.on {
		return !m.rel.on
	}
	if m.rel.on {
		return m.rel.at < b.rel.at || m.rel.at == b.rel.at && m.rel.o < b.rel.o
	}
	return m.o < b.o
}

// crossing is the sender's side of a link between parts: the frames sent in the current window.
type crossing struct {
	rx     *link // the receiver's half
	from   *part
	out    []inFlight
	listed bool // in from.dirty
}

func (c *crossing) send(fl inFlight) {
	c.out = append(c.out, fl)
	if !c.listed {
		c.listed = true
		c.from.dirty = append(c.from.dirty, c)
	}
}

// handOver moves the frames sent across into their receivers' links, as Send would have put them in
// flight: a receiver's link with nothing due yet gets its delivery event at the first frame's arrival.
func (c *crossing) handOver() {
	rx := c.rx
	for i := range c.out {
		rx.flight.push(c.out[i])
		c.out[i].p = nil
	}
	if !rx.pending && rx.flight.n > 0 {
		rx.pending = true
		rx.clk.ScheduleHandler(rx.flight.front().at-rx.clk.Now(), rx.ord, rx)
	}
	c.out = c.out[:0]
	c.listed = false
}

// SplitSlack is how far from an equal share of expected frame-hops a part may be when a fabric is split
// for workers (netns.TrafficPartsWithin): every window waits for its busiest part, and a frame between
// parts costs only a hand-over at the window's edge.
const SplitSlack = 0.02

// Split says how NewParallel split a fabric.
type Split struct {
	Parts     int        // parts (workers); 1: the fabric runs as New's
	Lookahead clock.Time // the smallest delay of a link between parts (the window)
	CutLinks  int        // links between parts
	Kept      int        // links of zero delay that would have been cut, kept inside a part
	Devices   []int      // devices per part
}

func (s Split) String() string {
	if s.Parts < 2 {
		return "1 part"
	}
	return fmt.Sprintf("%d parts of %v devices, %d links between them, lookahead %v", s.Parts, s.Devices, s.CutLinks, s.Lookahead)
}

// NewParallel builds the fabric split into parts (graph node -> part, e.g. the netns agents' traffic
// split, netns.TrafficParts), to run each part on a worker goroutine. A link of zero delay between
// parts would leave no lookahead: its ends are put in one part. Parts left empty are dropped; a split
// into one part gives New's fabric. Every output of Run is byte-identical to New's run of the lab.
func NewParallel(l *lab.Lab, parts map[int]int) (*Fabric, Split, error) {
	g := l.Graph
	devs := map[int]bool{}
	for _, s := range l.Switches {
		devs[s.Node] = true
	}
	for _, h := range l.Hosts {
		devs[h.Node] = true
	}
	// Union the ends of zero-delay links; each group goes to the part of its smallest node.
	up := make([]int, len(g.Nodes))
	for i := range up {
		up[i] = i
	}
	var find func(int) int
	find = func(x int) int {
		for up[x] != x {
			up[x] = up[up[x]]
			x = up[x]
		}
		return x
	}
	split := Split{}
	for _, lk := range g.Links {
		if lk.Delay <= 0 {
			a, b := find(lk.A.Node), find(lk.B.Node)
			if a != b {
				if parts[lk.A.Node] != parts[lk.B.Node] {
					split.Kept++
				}
				up[max(a, b)] = min(a, b)
			}
		}
	}
	of := map[int]int{}
	for v := range devs {
		p, ok := parts[find(v)]
		if !ok {
			return nil, Split{}, fmt.Errorf("workers: device %s has no part", g.Nodes[find(v)].Name)
		}
		of[v] = p
	}
	// Number the parts densely, in order of their smallest node.
	ids := map[int]int{}
	for v := range g.Nodes {
		if p, ok := of[v]; ok {
			if _, seen := ids[p]; !seen {
				ids[p] = len(ids)
			}
		}
	}
	for v, p := range of {
		of[v] = ids[p]
	}
	// A flow released by a completion must start in the part of that completion: a release is a
	// harness event at the completion's instant, which another part, a lookahead behind or ahead,
	// could not place (netns.TrafficParts keeps these groups together).
	src := make(map[uint32]int, len(l.Flows))
	for _, fp := range l.Flows {
		src[fp.ID] = fp.SrcNode
	}
	for _, fp := range l.Flows {
		for _, a := range fp.After {
			if s, ok := src[a]; ok && of[s] != of[fp.SrcNode] {
				return nil, Split{}, fmt.Errorf("workers: flow %d (from %s) waits for flow %d (from %s), in another part: a release must happen in the part of the completion that causes it; keep both sources in one part (netns.TrafficParts does)",
					fp.ID, g.Nodes[fp.SrcNode].Name, a, g.Nodes[s].Name)
			}
		}
	}
	if len(ids) < 2 {
		f, err := New(l)
		return f, Split{Parts: 1}, err
	}
	split.Parts = len(ids)
	split.Devices = make([]int, len(ids))
	for _, p := range of {
		split.Devices[p]++
	}
	split.Lookahead = math.MaxInt64
	for _, lk := range g.Links {
		if of[lk.A.Node] != of[lk.B.Node] {
			split.CutLinks++
			split.Lookahead = min(split.Lookahead, lk.Delay)
		}
	}
	f, err := build(l, of)
	if err != nil {
		return nil, Split{}, err
	}
	f.par = &parallel{lookahead: split.Lookahead}
	return f, split, nil
}

// makeParts gives every part its clock, log and pool.
func (f *Fabric) makeParts(of map[int]int) {
	n := 0
	for _, p := range of {
		n = max(n, p+1)
	}
	f.partOf = of
	f.parts = make([]part, n)
	for i := range f.parts {
		f.parts[i] = part{clk: clock.NewVirtual(), log: &records.Log{}, pool: &pkt.Pool{}, unjust: -1, relAt: -1}
	}
}

// unwiredPart is unwired for a link out of a part: the note goes to the part's log, marked, so that the
// coordinator keeps the first maxUnwired in the sequential order.
func (f *Fabric) unwiredPart(p *part, device string, port int) func(*pkt.Packet, error) {
	return func(pk *pkt.Packet, err error) {
		p.unwired++
		if p.unwKept > maxUnwired {
			return // later than the first maxUnwired+1 of the whole run
		}
		p.unwKept++
		p.unwIdx = append(p.unwIdx, len(p.log.Violations))
		p.log.Violations = append(p.log.Violations, fmt.Sprintf("%s p%d at %v: the wire cannot carry this %v frame: %v",
			device, port, p.clk.Now(), pk.Kind, err))
	}
}

// parallel is the coordinator's state.
type parallel struct {
	stats     ParallelStats
	lookahead clock.Time
	unwSeen   uint64 // unwired notes moved to Log, in order
	hUnjust   clock.Time
	workers   []chan window
	done      chan struct{}
	wg        sync.WaitGroup
	// checks is the watcher's view of Fabric.Clock; faultAt the times the lab's faults fire, sorted
	// (the first harness events of their instant: scheduled before the run).
	checks  checkClock
	faultAt []clock.Time
}

// ParallelStats is what a parallel run spent where (Fabric.ParallelStats).
type ParallelStats struct {
	Windows    int             // windows run (all parts to one edge)
	Serial     int             // windows a stop-when-done run ran in two phases
	Busy       []time.Duration // per part: wall time running its events
	Events     []uint64        // per part: events fired
	Coordinate time.Duration   // wall time of the coordinator's own work between windows (merge, hand-over)
}

// ParallelStats is the parallel run's accounting (zero for a sequential fabric).
func (f *Fabric) ParallelStats() ParallelStats {
	if f.par == nil {
		return ParallelStats{}
	}
	s := f.par.stats
	s.Events = make([]uint64, len(f.parts))
	for i := range f.parts {
		s.Events[i] = f.parts[i].clk.Fired()
	}
	return s
}

// window is a worker's order: run its part up to (at, o) inclusive.
type window struct {
	at clock.Time
	o  clock.Order
}

// run fires the part's events up to (at, o), marking those that wrote what the coordinator orders,
// and stops early after the event that completed its last flow if p.stop is set by it.
func (p *part) run(at clock.Time, o clock.Order) {
	for p.step(at, o) {
		if p.stop {
			p.stop = false
			p.paused, p.pauseAt, p.pauseO = true, p.clk.Now(), p.mk.o
			return
		}
	}
}

// step fires the part's next event if it comes at or before (at, o), and marks it if it wrote what
// the coordinator orders.
func (p *part) step(at clock.Time, o clock.Order) bool {
	fo, dr, ok := p.clk.StepUntil(at, o)
	if !ok {
		p.unjust = max(p.unjust, dr)
		return false
	}
	p.unjust = -1
	p.mk.o = fo
	if len(p.log.Flows) != p.mk.flows || len(p.log.Violations) != p.mk.viol || len(p.log.Reorders) != p.mk.reord || len(p.notes) != p.mk.notes {
		var rel relKey
		if p.relAt == p.clk.Now() {
			rel = p.rel
		}
		p.mk = mark{at: p.clk.Now(), o: fo, n: p.clk.Fired(), rel: rel, flows: len(p.log.Flows), viol: len(p.log.Violations), reord: len(p.log.Reorders), notes: len(p.notes)}
		p.marks = append(p.marks, p.mk)
	}
	return true
}

// startWorkers starts a goroutine for every part but the first, which the coordinator runs itself.
func (f *Fabric) startWorkers() {
	c := f.par
	c.done = make(chan struct{}, len(f.parts))
	c.stats.Busy = make([]time.Duration, len(f.parts))
	c.workers = make([]chan window, len(f.parts))
	for i := 1; i < len(f.parts); i++ {
		ch := make(chan window, 1)
		c.workers[i] = ch
		p := &f.parts[i]
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for w := range ch {
				t := time.Now()
				p.run(w.at, w.o)
				c.stats.Busy[i] += time.Since(t)
				c.done <- struct{}{}
			}
		}()
	}
}

func (f *Fabric) stopWorkers() {
	for _, ch := range f.par.workers {
		if ch != nil {
			close(ch)
		}
	}
	f.par.wg.Wait()
}

// runParts runs the parts which says to (at, o), at once, and waits for them.
func (f *Fabric) runParts(which func(i int) bool, at clock.Time, o clock.Order) {
	c := f.par
	sent := 0
	for i := 1; i < len(f.parts); i++ {
		if which(i) {
			c.workers[i] <- window{at, o}
			sent++
		}
	}
	if which(0) {
		t := time.Now()
		f.parts[0].run(at, o)
		c.stats.Busy[0] += time.Since(t)
	}
	for ; sent > 0; sent-- {
		<-c.done
	}
}

// merge moves what the parts marked in the windows since the last merge to Log and the monitor, in
// the order of the events that wrote it, and hands the frames sent across to their receivers.
func (f *Fabric) merge() {
	for {
		best := -1
		for i := range f.parts {
			p := &f.parts[i]
			if p.mi == len(p.marks) {
				continue
			}
			if best < 0 {
				best = i
				continue
			}
			bp := &f.parts[best]
			if p.marks[p.mi].before(&bp.marks[bp.mi]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		p := &f.parts[best]
		m := p.marks[p.mi]
		p.mi++
		f.Log.Flows = append(f.Log.Flows, p.log.Flows[p.cur.flows:m.flows]...)
		for i := p.cur.viol; i < m.viol; i++ {
			if len(p.unwIdx) > 0 && p.unwIdx[0] == i {
				// Sequential: the first maxUnwired notes, then one line saying more follow.
				p.unwIdx = p.unwIdx[1:]
				f.par.unwSeen++
				if f.par.unwSeen <= maxUnwired {
					f.Log.Violations = append(f.Log.Violations, p.log.Violations[i])
				} else if f.par.unwSeen == maxUnwired+1 {
					f.Log.Violations = append(f.Log.Violations, "more frames the wire cannot carry follow; see Fabric.Unwired for the count")
				}
				continue
			}
			f.Log.Violations = append(f.Log.Violations, p.log.Violations[i])
		}
		f.Log.Reorders = append(f.Log.Reorders, p.log.Reorders[p.cur.reord:m.reord]...)
		if m.notes > p.cur.notes {
			k := m.arm()
			f.par.checks.arming = &k
			for _, apply := range p.notes[p.cur.notes:m.notes] {
				apply()
			}
			f.par.checks.arming = nil
		}
		p.cur = m
	}
	for i := range f.parts {
		p := &f.parts[i]
		p.marks, p.mi = p.marks[:0], 0
		clear(p.log.Flows)
		clear(p.notes)
		p.log.Flows, p.log.Violations, p.log.Reorders, p.notes = p.log.Flows[:0], p.log.Violations[:0], p.log.Reorders[:0], p.notes[:0]
		for j := range p.unwIdx {
			p.unwIdx[j] -= p.cur.viol
		}
		p.cur, p.mk = mark{}, mark{}
		for _, c := range p.dirty {
			c.handOver()
		}
		clear(p.dirty)
		p.dirty = p.dirty[:0]
	}
}

// live is the events that will still fire, on every clock: Clock.Live of the sequential run, once the
// frames sent across are handed over.
func (f *Fabric) live() int {
	n := f.Clock.Live()
	for i := range f.parts {
		n += f.parts[i].clk.Live()
	}
	return n
}

// now is the time of the last event fired on any clock: the sequential clock's Now.
func (f *Fabric) now() clock.Time {
	t := f.Clock.Now()
	for i := range f.parts {
		t = max(t, f.parts[i].clk.Now())
	}
	return t
}

// next is the first event due on any part: its time, Order and part (-1: none).
func (f *Fabric) next() (clock.Time, clock.Order, int) {
	best, at, o := -1, clock.Time(0), clock.Order(0)
	for i := range f.parts {
		p := &f.parts[i]
		t, po, dr, ok := p.clk.Next()
		p.unjust = max(p.unjust, dr)
		if ok && (best < 0 || t < at || t == at && po < o) {
			best, at, o = i, t, po
		}
	}
	return at, o, best
}

// horizon is Clock.Horizon of the sequential run: the latest time of any event still queued, stopped
// ones included, or of the last one fired.
func (f *Fabric) horizon() clock.Time {
	h := max(f.Clock.Horizon(), f.par.hUnjust)
	for i := range f.parts {
		h = max(h, f.parts[i].clk.Horizon(), f.parts[i].unjust)
	}
	return h
}

// runParallel is Run for a fabric split into parts: the sequential loop's every decision, taken at
// window edges where the state is the same as the sequential run's at that instant.
func (f *Fabric) runParallel(ctx context.Context) Result {
	total := len(f.Lab.Flows)
	stopWhenDone := f.Lab.Spec.StopWhenDone()
	end := f.Lab.End
	c := f.par
	c.hUnjust = -1
	var res Result
	f.startMeters()
	for i := range f.parts {
		// Chunked, not spilled (SpillDir): a part's log is merged into Log, which would not carry a
		// failure to read a part's spill file back (Log.SpillErr).
		f.parts[i].log.ChunkPauses()
	}
	for _, fp := range f.Lab.Flows {
		f.parts[f.partOf[fp.SrcNode]].rem++
	}
	for _, fl := range f.Lab.Faults {
		c.faultAt = append(c.faultAt, max(fl.At, 0)) // scheduleFaults: AfterFunc(At) at 0
	}
	slices.Sort(c.faultAt)
	for node, nic := range f.NICs {
		p := &f.parts[f.partOf[node]]
		o := clock.DeviceOrder(node)
		nic.SetOnComplete(func(id uint32, _ clock.Time) {
			if f.dependents != nil {
				f.releaseIn(p, o, id)
			}
			if p.rem--; p.rem == 0 && stopWhenDone {
				p.stop = true
			}
		})
	}

	// The monitor: the event-driven watcher, its hooks deferred to the window edges (PollMonitor's
	// periodic pass counts queued stopped events, which the parts discard at other moments).
	var watch *monitor.Watch
	if f.Monitor != nil {
		c.checks = checkClock{v: f.Clock, keys: map[clock.Time][]armKey{}}
		watch = f.Monitor.Watch(&c.checks, f.devices(), f.prio(), func() { f.deadlocked = true },
			func() bool { return f.live() == watch.Timers() })
		watch.Defer(func(dev int) clock.Time { return f.parts[f.partOf[dev]].clk.Now() },
			func(dev int, apply func()) {
				p := &f.parts[f.partOf[dev]]
				p.notes = append(p.notes, apply)
			})
		defer watch.Stop()
	}
	f.startWorkers()
	defer f.stopWorkers()
	all := func(int) bool { return true }
	const lastOrder = clock.Order(math.MaxUint64)
	for n := 0; ; n++ {
		if f.deadlocked && f.StopOnDeadlock {
			break
		}
		f.collect()
		if stopWhenDone && f.done == total && f.startedAll() == total {
			res.AllDone = true
			break
		}
		if watch != nil && f.live() == watch.Timers() {
			if t := watch.NextTick(f.horizon()); t <= end {
				f.Clock.RunUntil(t)
			} else {
				f.Clock.RunUntil(end)
				f.Clock.RunUntil(watch.NextTick(end + 1))
				res.TimedOut = true
			}
			break
		}
		if n&0x3F == 0 {
			if f.Progress != nil {
				f.Progress(f.now(), f.done, total)
			}
			if ctx.Err() != nil {
				res.Cancelled = true
				break
			}
		}
		pAt, pO, pi := f.next()
		hAt, _, hd, hOK := f.Clock.Next()
		c.hUnjust = max(c.hUnjust, hd)
		if pi < 0 && !hOK {
			break
		}
		if hOK && (pi < 0 || hAt < pAt || hAt == pAt && pO >= clock.Harness) {
			// A harness event is next: after every device's events of its instant, before any later.
			// Among the harness-class events of the instant, a fault comes first (it was scheduled
			// before the run), a check and the parts' releases by their sequential sequence.
			if hAt == pAt && watch != nil {
				if i := f.releaseFirst(hAt); i >= 0 {
					f.runRelease(i, hAt)
					continue
				}
			}
			f.Clock.Step()
			c.hUnjust = -1
			if hAt > end {
				res.TimedOut = true
				break
			}
			continue
		}
		if pAt > end {
			// The sequential loop fires the first event past the end, then stops.
			f.parts[pi].step(pAt, pO)
			f.merge()
			res.TimedOut = true
			break
		}
		lim, limO := end, lastOrder
		if c.lookahead <= end-pAt {
			lim = pAt + c.lookahead - 1
		}
		if hOK {
			lim = min(lim, hAt)
		}
		if watch != nil {
			lim = min(lim, watch.NextTick(pAt))
		}
		if lim == hAt && hOK || watch != nil && lim == watch.NextTick(pAt) && (lim > pAt || pO < clock.Harness) {
			// The window ends with the devices' events of lim: the harness's own (faults, deadlock
			// checks, some armed in this window) come before the releases due at lim.
			limO = clock.Harness - 1
		}
		c.stats.Windows++
		if !stopWhenDone || f.done == total {
			f.runParts(all, lim, limO)
			t := time.Now()
			f.merge()
			c.stats.Coordinate += time.Since(t)
			continue
		}
		// Parts still sending flows run first, each stopping after the event that completes its last
		// one. If every flow is then done, the run ends at the latest of those events: the other parts
		// run up to it. If not, they all run to the window's end.
		lead := make([]bool, len(f.parts))
		leaders := 0
		for i := range f.parts {
			if f.parts[i].rem > 0 {
				lead[i] = true
				leaders++
			}
		}
		if leaders < len(f.parts) {
			c.stats.Serial++ // the followers wait for the leaders
		}
		f.runParts(func(i int) bool { return lead[i] }, lim, limO)
		allDone := true
		last := -1
		for i := range f.parts {
			p := &f.parts[i]
			if !lead[i] {
				continue
			}
			if !p.paused {
				allDone = false
				continue
			}
			if last < 0 || p.pauseAt > f.parts[last].pauseAt || p.pauseAt == f.parts[last].pauseAt && p.pauseO > f.parts[last].pauseO {
				last = i
			}
		}
		if allDone && last >= 0 {
			t, o := f.parts[last].pauseAt, f.parts[last].pauseO
			f.runParts(func(i int) bool { return i != last }, t, o)
		} else {
			f.runParts(func(i int) bool { return !lead[i] || f.parts[i].paused }, lim, limO)
		}
		for i := range f.parts {
			f.parts[i].paused = false
		}
		t := time.Now()
		f.merge()
		c.stats.Coordinate += time.Since(t)
	}
	f.collect()
	res.AllDone = f.done == total
	res.End = f.now()
	res.Events = f.Clock.Fired()
	for i := range f.parts {
		res.Events += f.parts[i].clk.Fired()
		f.Unwired += f.parts[i].unwired
	}
	f.finish(&res)
	return res
}

// releaseFirst is the part whose next release, due at t with Fabric.Clock's next event, comes before
// that event in the sequential sequence (-1: none does). Fabric.Clock holds faults, which come first,
// and the watcher's checks (checkClock).
func (f *Fabric) releaseFirst(t clock.Time) int {
	c := f.par
	if n, _ := slices.BinarySearch(c.faultAt, t+1); n > len(f.Log.Faults) {
		return -1 // a fault due at t has not fired: it was scheduled before any release
	}
	ck, ok := c.checks.front(t)
	if !ok {
		return -1
	}
	best, bk := -1, armKey{}
	for i := range f.parts {
		q := f.parts[i].rels[t]
		if len(q) == 0 {
			continue
		}
		// The part's events due at t before its releases have fired (the window ended before them).
		if k := (armKey{at: q[0].at, o: q[0].o, n: q[0].n}); k.before(ck) && (best < 0 || k.before(bk)) {
			best, bk = i, k
		}
	}
	return best
}

// runRelease fires part i's next release, due at t, and the events it causes at t, then merges what
// they wrote and the pauses they heard (the checks those arm come after every release of t).
func (f *Fabric) runRelease(i int, t clock.Time) {
	p := &f.parts[i]
	p.step(t, clock.Harness)
	p.run(t, clock.Harness-1)
	p.paused = false
	f.merge()
}

func (f *Fabric) startedAll() int {
	n := f.started
	for i := range f.parts {
		n += f.parts[i].started
	}
	return n
}

// releaseIn is release for a fabric split into parts, called by part p's NIC of Order o as it completes
// flow id: the flows it releases start in p (NewParallel), and their release is scheduled on p's clock
// at the key it has on the sequential clock: at the completion's instant (or the flow's planned start,
// if later), of Order Harness, after every device's events of that instant. Firing it within the part
// gives the sequential order because nothing outside p can change p at that instant: every link
// between parts has a delay of at least the lookahead, which is positive, so what other parts do at
// the instant reaches p later, and the frames they sent earlier were handed over at a window edge
// before it. Among the harness-class events of the instant, which the sequential clock fires in the
// order they were scheduled, the window ends before the parts' releases at a harness event's instant;
// the coordinator then fires the faults first (scheduled before the run), and the deadlock checks and
// the releases by the keys of the events that scheduled them (armKey: releaseFirst, checkClock). The
// parts' marks carry the release's key (relKey), so that what the releases and the events they cause
// write to Log merges in the sequential order.
func (f *Fabric) releaseIn(p *part, o clock.Order, id uint32) {
	key := relKey{on: true, at: p.clk.Now(), o: o, n: p.clk.Fired()}
	for _, i := range f.dependents[id] {
		fp := &f.Lab.Flows[i]
		if f.waiting[i]--; f.waiting[i] == 0 {
			start := f.startAt[i]
			at := p.clk.Now() + max(fp.At-p.clk.Now(), 0)
			if p.rels == nil {
				p.rels = map[clock.Time][]relKey{}
			}
			p.rels[at] = append(p.rels[at], key)
			p.clk.AfterFuncOrdered(at-p.clk.Now(), clock.Harness, func() {
				if q := p.rels[at]; len(q) > 1 {
					p.rels[at] = q[1:]
				} else {
					delete(p.rels, at)
				}
				p.rel, p.relAt = key, p.clk.Now()
				start()
			})
		}
	}
}
