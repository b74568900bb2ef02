package netns

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/monitor"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/records"
)

// coordination is the backend's side of a run with several agents: the lockstep coordinator, the
// merged deadlock monitor, and stop-when-done across agents.
type coordination struct {
	lock *lockstep.Coordinator
	// mon watches the agents' stalled queues merged by tick time (pending, until every agent has
	// reached past the tick).
	mon     *monitor.Monitor
	pending map[clock.Time][]monitor.QueueState
	// tick is the monitor's interval: every agent is held at each tick (Coordinator.Hold) until the
	// tick is judged, so a deadlock ends the run at the tick that found it, as with one agent.
	tick clock.Time
	// done[i]: agent i's flows have all completed, the last at finish[i].
	done   []bool
	finish []clock.Time
	halted bool
	// late is each agent's count of cross-agent frames read after their due time (from reached).
	late []uint64
	// kernelPending: the lab's kernel hosts are still running flows; kernelFinish is their last
	// completion (agent time).
	kernelPending bool
	kernelFinish  clock.Time
}

// newCoordination numbers the cut links' channels (already set on the setups' ports by SplitAgents)
// and starts the coordinator.
func newCoordination(l *lab.Lab, dl *Dilated, setups []*lockstep.AgentSetup) *coordination {
	agentOf := map[int]int{}
	for i, s := range setups {
		for _, d := range s.Devices {
			agentOf[d.Node] = i
		}
	}
	var chans []lockstep.LockChan
	for i, s := range setups {
		for _, d := range s.Devices {
			for _, p := range d.Ports {
				if p.TxChan != 0 {
					chans = append(chans, lockstep.LockChan{ID: p.TxChan, From: i, To: agentOf[p.PeerNode], Delay: p.Delay})
				}
			}
		}
	}
	slices.SortFunc(chans, func(a, b lockstep.LockChan) int { return a.ID - b.ID })
	c := &coordination{lock: lockstep.NewCoordinator(len(setups), chans, dl.End), done: make([]bool, len(setups)),
		finish: make([]clock.Time, len(setups)), late: make([]uint64, len(setups)), pending: map[clock.Time][]monitor.QueueState{}}
	if setups[0].Sample != nil {
		m := setups[0].Sample
		c.mon = monitor.New(m.Graph, m.Config)
		c.tick = m.Config.WithDefaults().Interval // the agents' (sampleStalls)
		c.lock.SetHold(c.tick + 1)                // the first grants (Start) stop there
	}
	return c
}

// describe is the progress note's account of the split.
func (c *coordination) describe() string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf(", in lockstep over %d cut-link channels (lookahead %v)", c.lock.Channels(), c.lock.Lookahead())
}

// send hands each grant to its agent. An agent that cannot be written to has died: its exit ends the run.
func (c *coordination) send(procs []*agentProc, gs []lockstep.Grant) {
	for _, g := range gs {
		procs[g.Agent].send(lockstep.AgentMsg{Type: "grant", Until: g.Until, Counts: g.Counts})
	}
}

// halt ends the run at t in every agent (every flow done, or a deadlock found).
func (c *coordination) halt(procs []*agentProc, t clock.Time) {
	if c.halted {
		return
	}
	c.halted = true
	for _, p := range procs {
		p.send(lockstep.AgentMsg{Type: "halt", End: t})
	}
	c.send(procs, c.lock.End(t))
}

// reached takes an agent's report: new grants, and every monitor tick all agents have passed.
func (c *coordination) reached(procs []*agentProc, i int, m lockstep.AgentMsg) error {
	gs, err := c.lock.Reached(i, m.Now, m.Counts)
	if err != nil {
		return fmt.Errorf("%s: %w", procs[i].name(), err)
	}
	c.late[i] = m.Late
	c.send(procs, gs)
	if c.mon == nil {
		return nil
	}
	slowest := c.lock.Slowest()
	var ticks []clock.Time
	for at := range c.pending {
		if at < slowest {
			ticks = append(ticks, at)
		}
	}
	slices.Sort(ticks)
	for _, at := range ticks {
		qs := c.pending[at]
		delete(c.pending, at)
		if !c.mon.Detected() && c.mon.Observe(monitor.Snapshot{At: at, Queues: qs}) {
			c.halt(procs, at) // a deadlock never resolves: the run ends where it is found, as on one agent
		}
	}
	if !c.mon.Detected() {
		// Every tick before the slowest agent is judged: hold everyone at the next one.
		if next := max((slowest+c.tick-1)/c.tick*c.tick, c.tick); next+1 != c.lock.Held() {
			c.send(procs, c.lock.Hold(next+1))
		}
	}
	return nil
}

// stalled buffers an agent's paused queues at a monitor tick until every agent has passed the tick.
func (c *coordination) stalled(s *monitor.Snapshot) {
	if c.mon == nil || s == nil || c.mon.Detected() {
		return
	}
	c.pending[s.At] = append(c.pending[s.At], s.Queues...)
}

// agentDone notes that agent i's flows have all completed; once every agent's have, a run that stops
// when done ends at the last completion.
func (c *coordination) agentDone(procs []*agentProc, i int, m lockstep.AgentMsg, stopWhenDone bool) {
	if m.Done < procs[i].flows {
		return // it reached the end with flows still running
	}
	c.done[i], c.finish[i] = true, m.Now
	c.stopIfDone(procs, stopWhenDone)
}

// kernelFinished notes that the kernel hosts are done (recs are their records): the agents' clocks run
// on in real time whatever the spec's duration, so a run that stops when done ends at the later of
// the kernel hosts' last completion and the agents'.
func (c *coordination) kernelFinished(procs []*agentProc, recs []records.Flow, stopWhenDone bool) {
	c.kernelPending = false
	for _, f := range recs {
		if f.Completed {
			c.kernelFinish = max(c.kernelFinish, f.Finish)
		}
	}
	c.stopIfDone(procs, stopWhenDone)
}

func (c *coordination) stopIfDone(procs []*agentProc, stopWhenDone bool) {
	if stopWhenDone && !c.kernelPending && !slices.Contains(c.done, false) {
		c.halt(procs, max(slices.Max(c.finish), c.kernelFinish))
	}
}

// stallLimit is how long (wall time) the slowest agent's clock may stand still before the run is
// declared hung. Lockstep waits for a lagging agent however slow it is; only an agent that stopped
// moving altogether ends the run.
const stallLimit = 60 * time.Second

// hungError says which agents' clocks stood at s for d (the run's slowest), and where to look: the
// agents' own messages went to this process's stderr (the run's lab and agents are gone once it
// returns). It said only "agents hung", naming neither the agents nor what to read.
func hungError(procs []*agentProc, clocks []clock.Time, s clock.Time, d time.Duration) error {
	var stuck []string
	for i, c := range clocks {
		if c != s {
			continue
		}
		p := *procs[i]
		if len(p.devices) > 6 { // an agent of a large lab holds hundreds
			p.devices = append(p.devices[:6:6], fmt.Sprintf("... %d in all", len(procs[i].devices)))
		}
		stuck = append(stuck, p.name())
	}
	const show = 3
	more := ""
	if len(stuck) > show {
		more = fmt.Sprintf(" and %d more", len(stuck)-show)
		stuck = stuck[:show]
	}
	return fmt.Errorf("agents hung: the slowest clock has stood at %v for %v: %s%s of %d agents; their own messages, if any, are above on stderr",
		s, d, strings.Join(stuck, "; "), more, len(procs))
}

// wait runs the run to its end: every agent's "end" (its clock reached the run's end, or the end the
// coordinator set), or, with one agent that stops when done, its "done"; Ctrl-C or an agent's death
// end it early. It relays completions between agents and, in lockstep, grants time.
func (r *netnsRun) wait(ctx context.Context, kernelDone chan kernelOut) ([]records.Flow, error) {
	if r.coord != nil && r.setups[0].Realtime > 0 {
		// The coordinator is on the path of every grant: see realtimeThread.
		defer realtimeThread(r.setups[0].Realtime)()
	}
	var deadline <-chan time.Time
	if r.coord == nil || len(r.dl.Kernel) > 0 {
		// One agent keeps the schedule even when it runs behind the wall clock (agent catchUp), so its
		// run may take longer than its length: up to 10 times, then it counts as timed out. (Lockstep
		// waits for a lagging agent instead; only a hang ends it, see stallLimit.)
		lead := max(r.opts.StartLead, 100*time.Millisecond)
		endWall := lead + r.dl.End.Duration() + 2*time.Second
		if len(r.dl.Kernel) > 0 {
			endWall += 10 * time.Second // connection setup and the kernel's own retransmission timers
		} else {
			endWall += 9*r.dl.End.Duration() + 30*time.Second
		}
		t := time.NewTimer(endWall)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	stopWhenDone := r.l.Spec.StopWhenDone()
	n := len(r.procs)
	doneCount, endCount := 0, 0
	clocks, dones := make([]clock.Time, n), make([]int, n)
	var kernelRecs []records.Flow
	kernelPending := kernelDone != nil
	slowest, moved := clock.Time(-1), time.Now()
	for kernelPending || endCount < n && (r.coord != nil || doneCount < n || !stopWhenDone) {
		select {
		case k := <-kernelDone:
			kernelPending = false
			if k.err != nil {
				return nil, fmt.Errorf("kernel hosts: %w", k.err)
			}
			kernelRecs = k.flows
			if r.coord != nil {
				r.coord.kernelFinished(r.procs, kernelRecs, stopWhenDone)
			}
		case ev := <-r.cases:
			p := r.procs[ev.i]
			switch {
			case ev.exit && r.opts.Machines != nil:
				r.machineLost(ev.i, ev.err)
				return r.kernelRest(kernelPending, kernelDone, kernelRecs), nil
			case ev.exit:
				return nil, fmt.Errorf("%s died mid-run: %v", p.name(), ev.err)
			case ev.m.Type == "error":
				return nil, fmt.Errorf("%s: %s", p.name(), ev.m.Err)
			case ev.m.Type == "done":
				doneCount++
				if r.coord != nil {
					r.coord.agentDone(r.procs, ev.i, ev.m, stopWhenDone)
				}
			case ev.m.Type == "end":
				endCount++
			case ev.m.Type == "completed":
				if err := r.relay(ev.i, ev.m); err != nil {
					return nil, err
				}
			case ev.m.Type == "reached" && r.coord != nil:
				if err := r.coord.reached(r.procs, ev.i, ev.m); err != nil {
					return nil, err
				}
			case ev.m.Type == "stalled" && r.coord != nil:
				r.coord.stalled(ev.m.Snapshot)
			case ev.m.Type == "progress":
				clocks[ev.i], dones[ev.i] = ev.m.Now, ev.m.Done
				r.onClock(clocks, dones, len(kernelRecs))
			}
		case <-tick.C:
			if s := slices.Min(clocks); s > slowest {
				slowest, moved = s, time.Now()
			} else if r.coord != nil && time.Since(moved) > stallLimit {
				if r.opts.Machines == nil {
					return nil, hungError(r.procs, clocks, s, stallLimit)
				}
				// A machine whose server still beats but whose agent stopped moving is lost like one
				// that fell silent: the others hand over what they measured.
				for i, c := range clocks {
					if c == s {
						r.machineLost(i, fmt.Errorf("stalled: its clock stood at %v for %v", s, stallLimit))
						r.procs[i].ctl.Close() // its server removes its part
					}
				}
				return r.kernelRest(kernelPending, kernelDone, kernelRecs), nil
			}
		case <-deadline:
			r.res.TimedOut = true
			return r.kernelRest(kernelPending, kernelDone, kernelRecs), nil
		case <-ctx.Done():
			r.res.Cancelled = true
			return r.kernelRest(kernelPending, kernelDone, kernelRecs), nil
		}
	}
	return r.kernelRest(kernelPending, kernelDone, kernelRecs), nil
}

// kernelRest cancels the kernel hosts after the run was cut short and waits for what they recorded.
func (r *netnsRun) kernelRest(pending bool, ch chan kernelOut, recs []records.Flow) []records.Flow {
	r.kcancel()
	if pending {
		if k := <-ch; k.err == nil {
			recs = k.flows
		}
	}
	return recs
}

// relay hands the completions one agent reports to every other: flows there may wait for them.
func (r *netnsRun) relay(from int, m lockstep.AgentMsg) error {
	for j, q := range r.procs {
		if j != from {
			if err := q.send(lockstep.AgentMsg{Type: "completed", Flows: m.Flows, Finish: m.Finish}); err != nil {
				return fmt.Errorf("%s: relaying completions: %w", q.name(), err)
			}
		}
	}
	return nil
}

// onClock reports the slowest agent's clock (paper units) and the completed flows.
func (r *netnsRun) onClock(clocks []clock.Time, dones []int, kernel int) {
	if r.opts.OnClock == nil {
		return
	}
	now, n := clocks[0], kernel
	for j := range clocks {
		now = min(now, clocks[j])
		n += dones[j]
	}
	r.opts.OnClock(clock.Time(float64(now)/r.res.Dilation), n, len(r.l.Flows))
}

// realtimeThread locks the calling goroutine to its thread and moves the thread to SCHED_FIFO at prio,
// for the goroutines that pass lockstep messages: on a loaded machine (load average 20 on 2 cores) an
// ordinary thread waits a scheduler slice before it reads a grant, and every agent waiting for it idles.
// Failing to get the priority is not fatal (the run is only slower). A thread already real-time at prio
// or above is left as it is. The returned func undoes the lock.
func realtimeThread(prio int) func() {
	runtime.LockOSThread()
	prev, err := unix.SchedGetAttr(0, 0)
	if err != nil || (prev.Policy == unix.SCHED_FIFO || prev.Policy == unix.SCHED_RR) && prev.Priority >= uint32(prio) {
		return runtime.UnlockOSThread // unchanged (or unknown, so not changed): it may be reused
	}
	if err := clock.RealtimeThread(prio); err != nil {
		return runtime.UnlockOSThread // still an ordinary thread: it may be reused
	}
	// A thread left real-time must not be handed to other goroutines. Go discards a thread whose
	// goroutine exits locked, but this may be the main goroutine, which outlives the run (a sweep builds
	// the next lab, or runs the virtual backend, on it): the thread goes back to the policy, priority and
	// nice value it had (`nice -n 19 lab run` stays nice: SCHED_OTHER at nice 0 would not) and is
	// unlocked, and stays locked (discarded, or parked if it is the main thread) only if it cannot.
	return func() {
		if unix.SchedSetAttr(0, prev, 0) == nil {
			runtime.UnlockOSThread()
		}
	}
}
