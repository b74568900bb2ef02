package agent

import (
	"sync"
	"sync/atomic"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/monitor"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/pkt"
)

// lockState is the agent's part in lockstep (netns/lockstep.go): the window the coordinator's grants
// open, the grants the control reader has posted, and what the agent last reported.
type lockState struct {
	on  bool
	win *netns.Window
	// Posted by the control reader (grant, halt), taken by the loop (pollLock).
	mu     sync.Mutex
	posted []netns.AgentMsg
	has    atomic.Bool
	// tx are the ports on cut links (counted channels out), l the smallest of their delays: the agent
	// reports how far it has got every l/4, so grants stay ahead of the wall clock.
	tx       []*port
	l        clock.Time
	reported clock.Time
	// external: a port whose peer no agent hosts (a kernel host) hands frames over at the wall time, so
	// the agent cannot promise anything past the wall time.
	external bool
	// waitSince is the wall time the window began waiting for frames a grant counts (-1: not waiting).
	waitSince clock.Time
}

// lostAfter is how long (wall time) an agent waits for frames a grant says were written before it
// counts them lost and runs on: a veth hop takes microseconds and a VXLAN hop between machines well
// under a millisecond, so a frame missing after this was dropped (a receive buffer overflowed).
const lostAfter = 2 * clock.Second

func (l *lockState) post(m netns.AgentMsg) {
	l.mu.Lock()
	l.posted = append(l.posted, m)
	l.has.Store(true)
	l.mu.Unlock()
}

// initLock sets lockstep up from the setup: which ports are cut, the lookahead.
func (a *agent) initLock() {
	a.lock.on = a.setup.Lockstep
	a.lock.win = netns.NewWindow()
	a.lock.reported, a.lock.waitSince = -1, -1
	for _, p := range a.ports {
		if p.cfg.TxChan != 0 {
			a.lock.tx = append(a.lock.tx, p)
			if a.lock.l == 0 || p.link.delay < a.lock.l {
				a.lock.l = p.link.delay
			}
		}
		if p.cfg.TxChan == 0 && p.peer == nil {
			a.lock.external = true
		}
	}
	if a.lock.l == 0 {
		// No cut link here: the coordinator still needs reports (the deadlock monitor merges a tick once
		// every agent has passed it), at about the pace of the shortest link.
		for _, p := range a.ports {
			if a.lock.l == 0 || p.link.delay < a.lock.l {
				a.lock.l = p.link.delay
			}
		}
	}
}

// limit is the last engine time the agent may run an event at: the run's end, and in lockstep the grant.
func (a *agent) limit() clock.Time {
	if !a.lock.on {
		return a.end
	}
	return min(a.end, a.lock.win.Limit()-1)
}

// pollLock applies what the coordinator sent: grants (once their frames are read) and a lowered end.
func (a *agent) pollLock() {
	l := &a.lock
	if !l.on {
		return
	}
	// Completions other agents reported come first: the backend relays them before the grant that
	// lets this agent run past them, and a flow waiting for one starts on time only if it is released
	// before the clock moves on.
	a.releaseRemote()
	if l.has.Load() {
		l.mu.Lock()
		msgs := l.posted
		l.posted = nil
		l.has.Store(false)
		l.mu.Unlock()
		for _, m := range msgs {
			switch m.Type {
			case "grant":
				l.win.Grant(m.Until, m.Counts)
			case "halt":
				a.end = min(a.end, max(m.End, a.clk.Now()))
			}
		}
	}
	l.win.Advance()
	switch {
	case !l.win.Waiting():
		l.waitSince = -1
	case l.waitSince < 0:
		l.waitSince = a.clk.Wall()
	case a.clk.Wall()-l.waitSince > lostAfter:
		l.win.GiveUp()
		l.waitSince = -1
	}
	a.fid.LostCross = l.win.Lost
	a.fid.StaleCross = l.win.Stale
}

// safeTime is the time before which the agent has run every event and no event can appear any more:
// its grant, its next timer, the arrival of a frame between its own devices it has written but not read
// yet, and (with a kernel host) the wall time. Frames from other agents arrive at or after the grant.
func (a *agent) safeTime(finished bool) clock.Time {
	if finished {
		return a.end + 1 // it runs nothing more, so it sends nothing more
	}
	t := min(a.lock.win.Limit(), a.end+1)
	if next, ok := a.clk.Next(); ok {
		t = min(t, next)
	}
	for _, p := range a.ports {
		if p.ehead < len(p.expect) {
			t = min(t, p.expect[p.ehead].due)
		}
	}
	for _, p := range a.lock.tx {
		// A frame on a cut link that has left but is not written yet is not in the counts: the
		// receiver would not wait for it.
		if len(p.due) > 0 {
			t = min(t, p.due[0]-p.link.delay)
		}
	}
	t = min(t, a.dueMin) // frames between its own devices not written yet (batched data path)
	if a.lock.external {
		t = min(t, max(a.clk.Wall(), a.clk.Now()))
	}
	return t
}

// wallReports is the longest the loop may sleep: an agent with a kernel host's port can promise no
// more than the wall time (safeTime), so while it idles, the time it reports, and the grants of the
// agents across its cut links, advance only as often as it wakes. Waking every quarter lookahead keeps
// their grants ahead of the wall clock; without it an idle agent slept up to maxSleep and the others'
// timers ran tens of milliseconds late waiting for its report.
func (l *lockState) wallReports() clock.Time {
	if !l.on || !l.external || l.l <= 0 {
		return maxSleep
	}
	return max(l.l/4, clock.Microsecond)
}

// report tells the coordinator how far the agent has got, when that moved by a quarter lookahead, or the
// agent waits at its grant, or it has finished.
func (a *agent) report(finished bool) {
	l := &a.lock
	if !l.on || a.sendFn == nil {
		return
	}
	t := a.safeTime(finished)
	if t <= l.reported || !finished && t < l.reported+l.l/4 && t < l.win.Limit() {
		return
	}
	l.reported = t
	counts := make(map[int]uint64, len(l.tx))
	for _, p := range l.tx {
		counts[p.cfg.TxChan] = uint64(p.txWritten)
	}
	a.sendFn(netns.AgentMsg{Type: "reached", Now: t, Counts: counts, Late: a.fid.LateCross})
}

// crossFrame takes a frame read on a cut link: it checks the stamp and holds the frame until it is due.
// It returns false when the frame is dropped (no valid stamp, stale, or due after the run's end).
func (a *agent) crossFrame(p *port, frame []byte) ([]byte, clock.Time, bool) {
	body, due, seq, err := netns.ParseStamp(frame)
	if err != nil {
		a.malformed(p)
		a.fid.BadStamps++
		return nil, 0, false
	}
	if !a.lock.win.Read(p.cfg.RxChan, seq) {
		// A duplicate, or a frame given up on as lost: dropped, and counted with the malformed so the
		// verdict's frame accounting still adds up.
		a.fid.StaleCross = a.lock.win.Stale
		a.malformed(p)
		return nil, 0, false
	}
	return body, due, true
}

// deliverAt hands a decoded cross-agent frame to p's engine at its due time; one read after that (the
// protocol was broken, or the frame was given up on) is taken at once and counted late.
func (a *agent) deliverAt(p *port, pk *pkt.Packet, due clock.Time) {
	// Counted as arrivals (frames taken against a schedule): the verdict judges a lockstep run, like a
	// one-agent run, by when its engines took frames, not by when the loop got to them in wall time.
	f := &a.fid
	f.CrossFrames++
	f.Arrivals++
	if due > a.end {
		return // due after the run's end: it never arrives within the run
	}
	if now := a.clk.Now(); due < now {
		f.LateCross++
		f.LateArrivals++
		f.SumArrivalErr += float64(now - due)
		f.MaxArrivalErr = max(f.MaxArrivalErr, now-due)
		f.MaxCrossLate = max(f.MaxCrossLate, now-due)
		p.dev.eng.Receive(p.index, pk)
		return
	}
	p.hold(a, pk, due)
}

// inbox holds a cut link's frames read ahead of their due time, in due order (one link is FIFO with one
// delay), with one timer armed for the head.
type inbox struct {
	q     []inFlight
	head  int
	armed bool
	fire  func()
}

func (p *port) releaseInbox(a *agent) {
	in := &p.inbox
	now := a.clk.Now()
	for in.head < len(in.q) && in.q[in.head].at <= now {
		pk := in.q[in.head].p
		in.q[in.head].p = nil
		in.head++
		p.dev.eng.Receive(p.index, pk)
	}
	if in.head == len(in.q) {
		in.q, in.head, in.armed = in.q[:0], 0, false
		return
	}
	if in.head > 256 && in.head*2 > len(in.q) {
		n := copy(in.q, in.q[in.head:])
		in.q, in.head = in.q[:n], 0
	}
	a.clk.ScheduleOrdered(in.q[in.head].at-now, p.ord, in.fire)
}

// sampleStalls sends the coordinator this agent's paused, non-empty queues every monitor interval of
// engine time (the ticks fall on multiples of the interval in every agent, so the coordinator merges
// them by time): a wait-for cycle may cross agents, so only the merged snapshot can show it. Queues
// that are not paused or hold nothing cannot be on a cycle and are left out.
func (a *agent) sampleStalls() {
	s := a.setup.Sample
	if s == nil || a.sendFn == nil {
		return
	}
	devs := map[int]monitor.Device{}
	for _, d := range a.devs {
		if md, ok := d.eng.(monitor.Device); ok {
			devs[d.node] = md
		}
	}
	hosts := map[int]bool{}
	for _, d := range a.devs {
		if d.nic != nil {
			hosts[d.node] = true
		}
	}
	isHost := func(dev int) bool { return hosts[dev] }
	if s.Graph != nil {
		isHost = func(dev int) bool { return s.Graph.Nodes[dev].Kind == topo.Host }
	}
	prio := monitor.LabPrio(s.FlowControl, isHost)
	iv := s.Config.WithDefaults().Interval
	var tick func()
	tick = func() {
		snap := monitor.Sample(a.clk.Now(), devs, prio)
		keep := snap.Queues[:0]
		for _, q := range snap.Queues {
			if q.Paused && q.Bytes > 0 {
				keep = append(keep, q)
			}
		}
		if len(keep) > 0 {
			snap.Queues = keep
			a.sendFn(netns.AgentMsg{Type: "stalled", Snapshot: &snap})
		}
		a.clk.AfterFunc(iv, tick)
	}
	a.clk.AfterFunc(iv, tick)
}
