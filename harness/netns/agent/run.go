package agent

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/wire"
	"golang.org/x/sys/unix"
)

// maxSleep bounds one ppoll so a stop request is never missed for long even if the eventfd were lost.
const maxSleep = 50 * clock.Millisecond

func (a *agent) loop(end clock.Time, done, reachedEnd func()) error {
	byNode := map[int]*device{}
	for _, d := range a.devs {
		byNode[d.node] = d
	}
	for _, f := range a.setup.Flows {
		nic, fl := byNode[f.Node].nic, f.Flow
		a.clk.AfterFunc(f.At, func() {
			if err := nic.StartFlow(fl); err != nil {
				a.violation(fmt.Sprintf("flow %d did not start: %v", fl.ID, err))
			}
		})
	}
	sentDone := false
	seen := -1
	wall0 := a.clk.Wall()
	for !a.stop.Load() {
		if err := a.catchUp(); err != nil {
			return err
		}
		for _, p := range a.ports {
			if err := p.flush(a); err != nil {
				return err
			}
		}
		if n := len(a.log.Flows); !sentDone && n != seen {
			seen = n
			if a.completed() >= a.flows {
				sentDone = true
				done()
			}
		}
		if !sentDone && a.mon != nil && a.mon.Detected() {
			sentDone = true // a deadlock never resolves: the rest of the run would only wait for its end
			done()
		}
		wall := a.clk.Wall()
		// The run's end is reached in engine time: a loop running behind the wall clock (it keeps the
		// schedule, just later) still has the rest of its timers to fire before it.
		next, pending := a.clk.Next()
		if a.clk.Now() >= end || wall > end && (!pending || next > end) {
			if !sentDone {
				done() // nothing more will happen here; the backend decides when to stop
			}
			reachedEnd()
			a.waitStop()
			break
		}
		d := maxSleep
		if next, ok := a.clk.Next(); ok && next-wall < d {
			d = next - wall
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
	}
	return nil
}

// waitStop blocks until the backend says stop (or goes away).
func (a *agent) waitStop() {
	for !a.stop.Load() {
		ts := clock.ToTimespec(maxSleep)
		unix.Ppoll(a.fds[len(a.ports):], &ts, nil)
	}
}

func (a *agent) completed() int {
	n := 0
	for i := range a.log.Flows {
		if a.log.Flows[i].Completed {
			n++
		}
	}
	return n
}

// catchUp fires the timers that fell due while the loop was away. When it woke more than one step
// late (a stall: the CPU went elsewhere), it fires them a step at a time, and between steps writes
// what the devices sent and reads what they received, processing it at the step's time. Without the
// steps, a stall's worth of one device's departures reached its neighbours in one burst after every
// timer had fired: the neighbours' egress schedules slipped by the whole stall and a PFC pause sent
// during it was read only after the burst (lossless drops on an idle path after a 69 ms stall). Frames
// between this agent's own devices are in the kernel's queue as soon as the write returns (veth
// delivers in the sender's context), so each step sees what the previous one sent.
func (a *agent) catchUp() error {
	for {
		next, ok := a.clk.Next()
		wall := a.clk.Wall()
		if !ok || next > wall || next+a.step >= wall {
			a.clk.RunDue()
			return nil
		}
		t := next + a.step
		a.clk.RunDueUntil(t)
		a.clk.AdvanceTo(t)
		a.fid.CatchUpSteps++
		for _, p := range a.ports {
			if err := p.flush(a); err != nil {
				return err
			}
		}
		// Only the ports with frames waiting: one epoll call, where reading every port cost a system
		// call each.
		ready, err := a.waiter.wait(0)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("waiting for frames: %w", err)
		}
		if err := a.receiveReady(ready, false); err != nil {
			return err
		}
	}
}

// receiveReady reads the ports the waiter found ready (index len(ports) is the wake fd).
func (a *agent) receiveReady(ready []int, sync bool) error {
	for _, i := range ready {
		if i == len(a.ports) {
			a.wake.drain()
			continue
		}
		if err := a.receive(a.ports[i], sync); err != nil {
			return err
		}
	}
	return nil
}

// receive hands every waiting frame of p to its engine: a frame this agent wrote at its scheduled
// arrival time (port.arrival), any other at the wall time (sync) or, while catching up, at the logical
// time the loop has reached. A frame that does not decode is counted as
// malformed and dropped: the wire is shared with the kernel and with anyone running tcpdump -w and
// tcpreplay into the lab, so garbage must never reach an engine or crash the agent.
func (a *agent) receive(p *port, sync bool) error {
	_, err := p.sock.Recv(func(frame []byte) {
		a.fid.RxFrames++
		if p.pcap != nil {
			p.pcap.WriteAt(a.clk.Wall(), frame)
		}
		pk := new(pkt.Packet)
		if err := wire.Decode(frame, pk); err != nil {
			p.dev.malformed++
			a.fid.Malformed++
			return
		}
		// Decode aliases Route and Raw to the frame, whose buffer the next recvmmsg overwrites while the
		// packet may still wait in an egress queue. (Only Raw was copied once: queued relay and switch
		// frames then left with a later frame's route and were dropped as no-route downstream.)
		if pk.Raw != nil {
			pk.Raw = bytes.Clone(pk.Raw)
		}
		if pk.Route != nil {
			pk.Route = bytes.Clone(pk.Route)
		}
		if at, ok := p.arrival(frame); ok {
			// How late the engine takes the frame against its scheduled arrival is the whole of the
			// distortion for frames an agent sends itself: the fidelity verdict judges those by it.
			f := &a.fid
			f.Arrivals++
			if e := a.clk.AdvanceTo(at) - at; e > 0 {
				f.SumArrivalErr += e
				f.MaxArrivalErr = max(f.MaxArrivalErr, e)
				if e > p.yard {
					f.LateArrivals++
				}
			}
		} else if sync {
			a.clk.Sync()
		}
		p.dev.eng.Receive(p.index, pk)
	})
	return err
}

// finish flushes the engines (flow records of unfinished flows, counters) and returns what the backend
// pulls.
func (a *agent) finish() (*records.Log, *netns.AgentFidelity, clock.Time) {
	if a.stopped {
		return &a.log, &a.fid, a.clk.Now()
	}
	a.stopped = true
	a.clk.Sync()
	for _, d := range a.devs {
		n := len(a.log.Counters)
		d.eng.Flush()
		for i := n; i < len(a.log.Counters); i++ {
			if a.log.Counters[i].Device == int32(d.node) {
				a.log.Counters[i].Malformed += d.malformed
			}
		}
		if len(a.log.Counters) == n && d.malformed > 0 {
			a.log.Counters = append(a.log.Counters, records.Counters{Device: int32(d.node), Malformed: d.malformed})
		}
	}
	lag := a.clk.Lag()
	a.fid.TimerLagAt = lag.MaxAt
	a.fid.Timers, a.fid.TimerLagMax, a.fid.TimerLagSum, a.fid.LagOver = lag.Fired, lag.Max, lag.Sum, lag.Over
	for _, p := range a.ports {
		if p.pcap != nil {
			p.pcap.Flush()
		}
	}
	return &a.log, &a.fid, a.clk.Now()
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
