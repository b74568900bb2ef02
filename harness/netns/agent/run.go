package agent

import (
	"errors"
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
	"golang.org/x/sys/unix"
)

// maxSleep bounds one ppoll so a stop request is never missed for long even if the eventfd were lost.
const maxSleep = 50 * clock.Millisecond

func (a *agent) loop(end clock.Time, done, reachedEnd func()) error {
	a.end = end
	a.schedule()
	sentDone := false
	wall0 := a.clk.Wall()
	// The busy time of the last iteration (the run's final catch-up, often the longest stretch of work
	// of a loop behind the wall clock) is counted however the loop ends.
	defer func() { a.fid.BusyTime += a.clk.Wall() - wall0 }()
	for !a.stop.Load() {
		a.runLive()
		a.pollLock()
		if err := a.catchUp(); err != nil {
			return err
		}
		if err := a.flushIfDue(); err != nil {
			return err
		}
		a.collect()
		a.progress()
		if !sentDone && a.done >= a.flows {
			sentDone = true
			done()
		}
		if !sentDone && a.mon != nil && a.mon.Detected() {
			sentDone = true // a deadlock never resolves: the rest of the run would only wait for its end
			done()
		}
		wall := a.clk.Wall()
		// The run's end is reached in engine time: a loop running behind the wall clock (it keeps the
		// schedule, just later) still has the rest of its timers to fire before it.
		next, pending := a.clk.Next()
		if a.flushAt != never && (!pending || a.flushAt < next) {
			next, pending = a.flushAt, true // frames waiting to be written are work still to do
		}
		// a.end, not end: it comes down to the last completion once every flow is done (collect), or
		// when the coordinator halts the run. In lockstep the end is reached once it is granted.
		granted := !a.lock.on || a.lock.win.Limit() > a.end
		if a.clk.Now() >= a.end || granted && wall > a.end && (!pending || next > a.end) || a.stop.Load() {
			a.report(true)
			if !sentDone {
				done() // nothing more will happen here; the backend decides when to stop
			}
			if !a.stop.Load() {
				reachedEnd()
				a.fid.BusyTime += a.clk.Wall() - wall0
				a.waitStop()
				wall0 = a.clk.Wall()
			}
			break
		}
		a.report(false)
		d := maxSleep
		if next, ok := a.clk.Next(); ok && next-wall < d && next <= a.limit() {
			// (A timer past the grant waits for the grant, which the wake fd signals.)
			d = next - wall
		}
		if a.flushAt != never && a.flushAt-wall < d {
			d = a.flushAt - wall
		}
		d = min(d, a.lock.wallReports())
		d = max(d, a.quantum)
		if a.unwatched && d > a.quantum && a.inFlight() {
			d = a.quantum // unwatchRings
		}
		before := a.clk.Wall()
		a.fid.BusyTime += before - wall0
		ready, err := a.waiter.wait(d)
		wall0 = a.clk.Wall()
		a.fid.PollTime += wall0 - before
		a.fid.Loops++
		if len(ready) == 0 && err == nil {
			a.fid.PollTimeout++
		} else {
			a.fid.PollWakes++
		}
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("waiting for frames: %w", err)
		}
		if err := a.receiveReady(ready, true); err != nil {
			return err
		}
		if err := a.scanUnwatched(); err != nil {
			return err
		}
	}
	return nil
}

// waitStop blocks until the backend says stop (or goes away).
func (a *agent) waitStop() {
	fds := []unix.PollFd{{Fd: int32(a.wake.fd), Events: unix.POLLIN}}
	if a.ctl != nil {
		fds = append(fds, unix.PollFd{Fd: int32(a.ctlFd), Events: unix.POLLIN})
	}
	for !a.stop.Load() {
		ts := clock.ToTimespec(maxSleep)
		unix.Ppoll(fds, &ts, nil)
		a.wake.drain()
		a.ctlReady = true
		a.pollControl()
	}
}

// schedule arms the start of every flow that waits for nothing; the others start from collect once the
// flows they wait for have completed (here or, told by the backend, in another agent).
func (a *agent) schedule() {
	byNode := map[int]*device{}
	for _, d := range a.devs {
		byNode[d.node] = d
	}
	a.deps = map[uint32][]int{}
	a.waiting = make([]int, len(a.setup.Flows))
	a.after = make([]clock.Time, len(a.setup.Flows))
	for i, f := range a.setup.Flows {
		a.starts = append(a.starts, a.starter(byNode[f.Node].nic, f.Flow))
		if len(f.After) > 0 {
			a.waiting[i] = len(f.After)
			for _, id := range f.After {
				a.deps[id] = append(a.deps[id], i)
			}
			continue
		}
		a.clk.AfterFuncOrdered(f.At, clock.DeviceOrder(f.Node), a.starts[i]) // an event of the NIC
	}
}

func (a *agent) starter(nic *nodes.NIC, fl nodes.Flow) func() {
	return func() {
		if err := nic.StartFlow(fl); err != nil {
			a.violation(fmt.Sprintf("flow %d did not start: %v", fl.ID, err))
		}
	}
}

// collect counts the flows completed since its last call, starts the flows that waited only for them
// (at their planned time or now, whichever is later: the virtual backend's rule), and tells the backend
// which of them other agents wait for. Completions other agents reported (remote) count the same.
func (a *agent) collect() {
	var out []uint32
	var outAt []clock.Time
	for ; a.seen < len(a.log.Flows); a.seen++ {
		r := &a.log.Flows[a.seen]
		if !r.Completed {
			continue
		}
		a.done++
		a.lastFinish = max(a.lastFinish, r.Finish)
		a.release(r.ID, r.Finish)
		if a.setup.Remote[r.ID] {
			out = append(out, r.ID)
			outAt = append(outAt, r.Finish)
		}
	}
	if a.done >= a.flows && a.setup.StopWhenDone {
		// The run ends at its last completion, as on the virtual backend: an agent that ran behind the
		// wall clock would otherwise race on through idle timers to the run's duration.
		a.end = min(a.end, a.clk.Now())
	}
	if len(out) > 0 && a.completedFn != nil {
		a.completedFn(out, outAt)
	}
	a.releaseRemote()
}

// releaseRemote starts what waited for the completions other agents reported.
func (a *agent) releaseRemote() {
	if !a.remotePending.Load() {
		return
	}
	a.remoteMu.Lock()
	ids, at := a.remote, a.remoteAt
	a.remote, a.remoteAt = nil, nil
	a.remotePending.Store(false)
	a.remoteMu.Unlock()
	for i, id := range ids {
		a.release(id, at[i])
	}
}

// release counts flow id, completed at finish, off the flows waiting for it; one waiting for nothing more
// starts at its planned time, the latest completion it waited for, or now, whichever is latest. (An
// agent whose clock runs behind another's must not start a flow before, in engine time, the flow it
// waited for completed over there.)
func (a *agent) release(id uint32, finish clock.Time) {
	for _, i := range a.deps[id] {
		a.after[i] = max(a.after[i], finish)
		if a.waiting[i]--; a.waiting[i] == 0 {
			at := max(a.setup.Flows[i].At, a.after[i])
			if at < a.clk.Now() {
				// A completion in another agent heard of after this agent's clock passed it (lockstep
				// lets agents run a lookahead apart): the flow starts late, and the verdict says so.
				a.fid.LateStarts++
			}
			a.clk.AfterFuncOrdered(at-a.clk.Now(), clock.DeviceOrder(a.setup.Flows[i].Node), a.starts[i])
		}
	}
	delete(a.deps, id)
}

// progressEvery is how often (wall time) the agent tells the backend how far its clock has got.
const progressEvery = 250 * clock.Millisecond

func (a *agent) progress() {
	if a.progressFn == nil {
		return
	}
	if w := a.clk.Wall(); w >= a.nextProgress {
		a.nextProgress = w + progressEvery
		a.progressFn(min(a.clk.Now(), a.end), a.done)
	}
}

// catchUp fires the timers that fell due while the loop was away. When it woke more than one step
// late (a stall: the CPU went elsewhere), it fires them a step at a time, and between steps writes
// what the devices sent and reads what they received, processing it at the step's time. Without the
// steps, a stall's worth of one device's departures reached its neighbours in one burst after every
// timer had fired: the neighbours' egress schedules slipped by the whole stall and a PFC pause sent
// during it was read only after the burst (lossless drops on an idle path after a 69 ms stall). Frames
// between this agent's own devices are in the kernel's queue as soon as the write returns (veth
// delivers in the sender's context), so each step sees what the previous one sent.
//
// It never runs a timer past the run's end (a loop far behind the wall clock would otherwise play the
// run on past its duration: more completions, a deadlock "after" the end) and returns between steps
// once a stop is requested, so Ctrl-C ends even a run that is far behind within a step.
func (a *agent) catchUp() error {
	for {
		a.pollControl()
		a.pollLock()
		lim := a.limit()
		next, ok := a.clk.Next()
		wall := a.clk.Wall()
		if a.stop.Load() {
			return nil
		}
		if !ok || next > wall || next+a.step >= wall || next > lim {
			// Up to the wall clock (read once: the frames written early must be held by then).
			w := a.clk.Wall()
			if err := a.flushBefore(w); err != nil {
				return err
			}
			a.clk.RunDueUntil(min(lim, w))
			return nil
		}
		t := min(next+a.step, lim)
		if err := a.flushBefore(t); err != nil {
			return err
		}
		a.clk.RunDueUntil(t)
		a.clk.AdvanceTo(t)
		a.fid.CatchUpSteps++
		if err := a.flushAndRead(false); err != nil {
			return err
		}
		a.collect()
		a.progress()
		a.report(false)
	}
}

// receiveReady reads the ports the waiter found ready (index len(ports) is the wake fd).
func (a *agent) receiveReady(ready []int, sync bool) error {
	for _, i := range ready {
		if i == len(a.ports) {
			a.wake.drain()
			continue
		}
		if i == len(a.ports)+1 {
			a.ctlReady = true
			a.pollControl()
			continue
		}
		if err := a.receive(a.ports[i], sync); err != nil {
			return err
		}
	}
	return nil
}

// receive hands every waiting frame of p to its engine: a frame this agent wrote at its scheduled
// arrival time (port.arrival), any other no earlier than the wall time it was read at (external;
// sync: the loop is not catching up, so the clock may follow the wall). A frame that does not decode
// is counted as malformed and dropped: the wire is shared with the kernel and with anyone running
// tcpdump -w and tcpreplay into the lab, so garbage must never reach an engine or crash the agent.
func (a *agent) receive(p *port, sync bool) error {
	i := 0
	if sync {
		i = 1
	}
	if p.take[i] == nil {
		p.take[i] = func(frame []byte) { a.take(p, frame, sync) }
	}
	for {
		n, err := p.sock.Recv(p.take[i])
		if err != nil || n < netns.PortBatch {
			return err
		}
	}
}

// take hands one frame read on p to its engine (receive).
func (a *agent) take(p *port, frame []byte, sync bool) {
	if a.clk.Halted() {
		return // the run ended at a deadlock: this frame is not part of it
	}
	a.fid.RxFrames++
	p.rxFrames++
	p.rxBytes += uint64(len(frame))
	if p.inFault != nil && p.inFault.Down {
		return // the cable is down (lab link): what a kernel host sends into it is lost
	}
	if p.pcap != nil {
		p.pcap.WriteAt(a.clk.Wall(), frame)
	}
	var due clock.Time
	if p.cfg.RxChan != 0 {
		var ok bool
		if frame, due, ok = a.crossFrame(p, frame); !ok {
			return
		}
	}
	// The packet owns its route (decode; only copying Raw once let queued relay and switch frames
	// leave with a later frame's route, dropped as no-route downstream).
	pk, err := a.decode(frame)
	if err != nil {
		a.malformed(p)
		return
	}
	if p.cfg.RxChan != 0 {
		a.deliverAt(p, pk, due)
		return
	}
	if at, ok := p.arrival(frame); ok {
		a.fid.Arrivals++ // one this agent wrote: taken at its scheduled arrival (or counted late)
		if at > a.end {
			return // due after the run's end: it never arrives within the run
		}
		if at > a.clk.Now() && p.early {
			p.hold(a, pk, at) // written early (batched data path): taken exactly when due
			return
		}
		// How late the engine takes the frame against its scheduled arrival is the whole of the
		// distortion for frames an agent sends itself: the fidelity verdict judges those by it.
		f := &a.fid
		if e := a.clk.AdvanceTo(at) - at; e > 0 {
			f.SumArrivalErr += float64(e)
			f.MaxArrivalErr = max(f.MaxArrivalErr, e)
			if e > p.yard {
				f.LateArrivals++
			}
		}
	} else {
		a.external(p, pk, sync)
		return
	}
	p.dev.eng.Receive(p.index, pk)
}

// external hands pk, a frame from outside the agent (a kernel host, another machine's agent in a live
// lab) read on p, to its engine no earlier than the wall time it was read at, plus the cable's delay
// when the sender is a kernel host (whose side cannot apply it). When it was sent is not known, only
// that it was by then; taken at the logical time instead, a frame read while the loop catches up
// after a stall (the clock up to a stall behind the wall) reached its host before the host sent it:
// live labs measured round trips of 0.25-11.7 ms over a 12 ms model, an agent without SCHED_FIFO
// stalled by the scheduler or SIGSTOP. Late, it is counted with the timers' lag when the catch-up fires it.
func (a *agent) external(p *port, pk *pkt.Packet, sync bool) {
	w := a.clk.Wall()
	if sync {
		// Not catching up: the clock follows the wall, but never past the run's end or the grant.
		a.clk.AdvanceTo(min(w, a.limit()))
	}
	if at := max(w, a.clk.Now()) + p.cfg.IngressDelay; at > a.clk.Now() {
		p.hold(a, pk, at) // in read order, so the inbox stays in due order
		return
	}
	p.dev.eng.Receive(p.index, pk)
}

// malformed counts a frame read on p and dropped as malformed: for the port (lab inspect, ports.csv),
// its device (the run's counters) and the fidelity record, which must all add up.
func (a *agent) malformed(p *port) {
	p.malformed++
	p.dev.malformed++
	a.fid.Malformed++
}

// flushIfDue writes the waiting frames once the earliest of them must go, and reads what the flush
// delivered to this agent's own ports, so a frame written early is held before it is due.
func (a *agent) flushIfDue() error {
	if !a.flushDue(a.clk.Wall()) {
		return nil
	}
	return a.flushAndRead(true)
}

// flushBefore writes and reads the waiting frames if any of them is due by t: the clock is about to
// run to t, and a frame must be held by its port before its due time passes.
func (a *agent) flushBefore(t clock.Time) error {
	if a.dueMin > t {
		return nil
	}
	return a.flushAndRead(false)
}

// flushAndRead writes every waiting frame and reads the ports that have frames: only those, with one
// epoll call, where reading every port cost a system call each.
func (a *agent) flushAndRead(sync bool) error {
	if err := a.flushAll(); err != nil {
		return err
	}
	if a.scanRings {
		// Every frame comes from this agent and every port has a ring: looking at each ring is a few
		// memory reads, where epoll is a system call.
		for _, p := range a.ports {
			if err := a.receive(p, sync); err != nil {
				return err
			}
		}
		return nil
	}
	ready, err := a.waiter.wait(0)
	if err != nil && !errors.Is(err, unix.EINTR) {
		return fmt.Errorf("waiting for frames: %w", err)
	}
	return a.receiveReady(ready, sync)
}

// finish flushes the engines (flow records of unfinished flows, counters) and returns what the backend
// pulls.
func (a *agent) finish() (*records.Log, *netns.AgentFidelity, clock.Time) {
	// The run's length is the engine time the loop reached, never the wall clock's: a loop that ran
	// behind stopped short of the wall time, and one that overshot its end by a wake-up did not run past it.
	now := min(a.clk.Now(), a.end)
	if a.stopped {
		return &a.log, &a.fid, now
	}
	a.stopped = true
	for _, d := range a.devs {
		n := len(a.log.Counters)
		d.eng.Flush()
		if len(a.log.Counters) == n && d.malformed > 0 {
			a.log.Counters = append(a.log.Counters, records.Counters{Device: int32(d.node)})
		}
		for i := n; i < len(a.log.Counters); i++ {
			if c := &a.log.Counters[i]; c.Device == int32(d.node) && d.malformed > 0 {
				c.Malformed += d.malformed
				c.MalformedPorts = make([]uint64, len(d.ports))
				for j, p := range d.ports {
					c.MalformedPorts[j] = p.malformed
				}
				break
			}
		}
	}
	a.fid.CPUTime = processCPU() - a.cpu0
	a.xdpFinish()
	lag := a.clk.Lag()
	a.fid.TimerLagAt = lag.MaxAt
	a.fid.Timers, a.fid.TimerLagMax, a.fid.TimerLagSum, a.fid.LagOver = lag.Fired, lag.Max, lag.Sum, lag.Over
	for _, p := range a.ports {
		if p.pcap != nil {
			p.pcap.Flush()
		}
	}
	return &a.log, &a.fid, now
}

func (a *agent) close() {
	if a.waiter != nil {
		a.waiter.close()
	}
	for _, p := range a.ports {
		p.sock.Close()
		if p.pfile != nil {
			if p.pcap != nil {
				p.pcap.Flush()
			}
			p.pfile.Close()
		}
	}
	if a.wake != nil {
		unix.Close(a.wake.fd)
	}
}
