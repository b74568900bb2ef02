// Package agent is the process that hosts switch and NIC engines for the netns backend. The backend
// re-executes its own binary with FABRICLAB_AGENT=1; this package's init then takes the process over
// (the reexec pattern), so any binary that imports it — `lab`, a Ginkgo suite — can run agents without
// a second executable to build and find.
//
// One agent hosts one or more devices on a single event loop: a goroutine locked to its OS thread with
// 1 ns timer slack, owning a clock.Real, the engines and every port socket. It sleeps in ppoll on the
// sockets with the next timer's deadline as the timeout, so frames and timers both wake it within
// microseconds, and every engine call is serialized on it (engines are single-threaded by contract).
package agent

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"

	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/nslink"

	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/clock"
)

func init() {
	lockstep.AgentLinked = true
	if os.Getenv(nslink.AgentEnv) != "1" {
		return
	}
	os.Exit(Main(os.Stdin, os.Stdout))
}

// Main runs the agent protocol on in/out (the backend's pipes) and returns the exit status.
func Main(in io.Reader, out io.Writer) int {
	// The backend sets PR_SET_PDEATHSIG on the child; re-check here in case the parent died between
	// fork and now (the signal only covers deaths after the prctl). The backend names itself: in a
	// container the agent server that starts agents is PID 1, which an orphan's parent becomes too.
	want := os.Getenv(nslink.AgentParentEnv)
	if want == "" && os.Getppid() == 1 || want != "" && want != strconv.Itoa(os.Getppid()) {
		return 2
	}
	return Serve(lockstep.NewStreamControl(in, out, nil))
}

// Serve runs the agent protocol (lockstep.AgentMsg) on ctl, whatever carries it, and returns the exit
// status.
func Serve(ctl lockstep.Control) int {
	c := &conn{ctl: ctl}
	var m lockstep.AgentMsg
	if err := ctl.Recv(&m); err != nil || m.Type != "setup" || m.Setup == nil {
		c.fail(fmt.Errorf("first message must be setup: %v", err))
		return 1
	}
	// A garbage collection stops the loop thread until the collector's own (ordinary-priority) threads
	// finish, and on a busy machine they wait for a CPU: stalls of tens of milliseconds were measured.
	// An agent's heap grows by little more than its records, so it collects only near a generous limit.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(1 << 30)
	a, err := newAgent(m.Setup)
	if err != nil {
		c.fail(err)
		return 1
	}
	defer a.close()
	// FABRICLAB_AGENT_CPUPROFILE=PREFIX writes each agent's CPU profile to PREFIX.<pid> (go tool pprof),
	// for finding where a loop that cannot keep up spends its time.
	stopProfile := func() {}
	if prefix := os.Getenv("FABRICLAB_AGENT_CPUPROFILE"); prefix != "" {
		if f, err := os.Create(fmt.Sprintf("%s.%d", prefix, os.Getpid())); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				// Stopped before the records go out: the backend may end the process once it has them.
				stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
			}
		}
	}
	if err := c.send(lockstep.AgentMsg{Type: "ready"}); err != nil {
		return 1
	}
	if err := ctl.Recv(&m); err != nil || m.Type != "start" {
		c.fail(fmt.Errorf("expected start: %v %q", err, m.Type))
		return 1
	}
	if err := a.readControl(ctl); err != nil {
		c.fail(err)
		return 1
	}
	a.completedFn = func(ids []uint32, at []clock.Time) {
		c.send(lockstep.AgentMsg{Type: "completed", Flows: ids, Finish: at})
	}
	a.live.reply = func(r *lockstep.LiveMsg) { c.send(lockstep.AgentMsg{Type: "live", Live: r}) }
	a.progressFn = func(now clock.Time, done int) { c.send(lockstep.AgentMsg{Type: "progress", Now: now, Done: done}) }
	a.sendFn = c.send
	if err := a.run(m.Epoch, m.End, func() { c.send(lockstep.AgentMsg{Type: "done", Now: a.lastFinish, Done: a.done}) },
		func() { c.send(lockstep.AgentMsg{Type: "end"}) }); err != nil {
		c.fail(err)
		return 1
	}
	stopProfile()
	log, fid, now := a.finish()
	msg := lockstep.AgentMsg{Type: "records", Log: log, Fidelity: fid, Now: now}
	if a.mon != nil {
		v := a.mon.Verdict()
		msg.Deadlock = &v
	}
	if err := c.send(msg); err != nil {
		return 1
	}
	return 0
}

// readControl arranges for the backend's messages after start to reach the loop: read by the loop
// itself when the channel has a descriptor (lockstep.PolledControl: it waits for it with its ports), else
// by a goroutine of their own (control).
func (a *agent) readControl(ctl lockstep.Control) error {
	if pc, ok := ctl.(lockstep.PolledControl); ok {
		if fd, ok := pc.PollFd(); ok {
			if err := a.waiter.add(fd); err != nil {
				return fmt.Errorf("control channel: %w", err) // (Recv no longer reads it)
			}
			a.ctl, a.ctlFd = pc, fd
			a.ctlReady = true // what came with the start message
			return nil
		}
	}
	go a.control(ctl)
	return nil
}

// ctlPollEvery bounds how long a busy loop goes without reading a polled control channel.
const ctlPollEvery = clock.Millisecond

// pollControl takes the messages that have arrived whole, on the loop's thread (readControl): when
// the waiter found the channel readable, and at least every ctlPollEvery of wall time in any case, for
// a loop catching up in steps waits for nothing (a stop must still end it within a step).
func (a *agent) pollControl() {
	if a.ctl == nil {
		return
	}
	if !a.ctlReady {
		if w := a.clk.Wall(); w-a.ctlPolled >= ctlPollEvery {
			a.ctlPolled = w
		} else {
			return
		}
	}
	a.ctlReady = false
	for {
		ok, err := a.ctl.Poll(&a.ctlMsg)
		if err != nil {
			a.onControl(nil, err)
			return
		}
		if !ok {
			return
		}
		if !a.onControl(&a.ctlMsg, nil) {
			return
		}
	}
}

// control reads the backend's messages after start on a goroutine of its own and hands them to the
// loop, waking its wait through the eventfd.
func (a *agent) control(ctl lockstep.Control) {
	if a.lock.on && a.setup.Realtime > 0 {
		// In lockstep a grant is on the critical path of every agent waiting for it: read it on a
		// real-time thread too, or a busy machine delays it by a scheduler slice.
		runtime.LockOSThread()
		_ = clock.RealtimeThread(a.setup.Realtime)
	}
	var m lockstep.AgentMsg
	for {
		err := ctl.Recv(&m)
		if !a.onControl(&m, err) {
			return
		}
	}
}

// onControl acts on one message from the backend (or the error reading it): stop (or the channel
// closing: the backend went away), completed (flows other agents finished), grant and halt (lockstep),
// live requests. False once there is nothing more to read.
func (a *agent) onControl(m *lockstep.AgentMsg, err error) bool {
	switch {
	case err != nil || m.Type == "stop":
		if os.Getenv("FABRICLAB_AGENT_DEBUG") != "" {
			fmt.Fprintf(os.Stderr, "agent %d: stop (%v)\n", os.Getpid(), err)
		}
		a.requestStop()
		return false
	case m.Type == "completed":
		a.completedElsewhere(m.Flows, m.Finish)
	case m.Type == "live" && m.Live != nil:
		a.liveRequest(m.Live)
	case m.Type == "grant" || m.Type == "halt":
		a.lock.post(*m)
		a.notify()
	}
	return true
}

type conn struct{ ctl lockstep.Control }

func (c *conn) send(m lockstep.AgentMsg) error { return c.ctl.Send(&m) }

func (c *conn) fail(err error) { c.send(lockstep.AgentMsg{Type: "error", Err: err.Error()}) }

// eventfd wakes the loop from another goroutine.
type wake struct{ fd int }

func newWake() (*wake, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	return &wake{fd}, nil
}

func (w *wake) signal() {
	var b [8]byte
	b[0] = 1
	unix.Write(w.fd, b[:])
}

func (w *wake) drain() {
	var b [8]byte
	unix.Read(w.fd, b[:])
}
