package agent

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/lockstep"
)

// fakePort hands its queued frames to the loop on Recv, as a socket whose peer wrote them.
type fakePort struct{ frames [][]byte }

func (f *fakePort) Send(frames [][]byte) (int, error) { return len(frames), nil }
func (f *fakePort) Recv(fn func([]byte)) (int, error) {
	n := len(f.frames)
	for _, b := range f.frames {
		fn(b)
	}
	f.frames = nil
	return n, nil
}
func (f *fakePort) Fd() int      { return -1 }
func (f *fakePort) Ring() bool   { return true }
func (f *fakePort) Close() error { return nil }

// stalledAgent is an agent whose loop was away for stall: its clock is at 0, the wall clock a stall
// later, and a timer (a frame in flight elsewhere) fell due early in the stall, so the loop catches up
// in steps. Its one port is a kernel host's, whose cable delay the agent applies on ingress.
func stalledAgent(stall, ingress clock.Time) (*agent, *port, *fakePort, *taker) {
	clk := clock.NewReal(clock.MonotonicNanos() - int64(stall/clock.Nanosecond))
	eng := &taker{clk: clk}
	a := &agent{clk: clk, dp: batched, end: clock.Second, setup: &lockstep.AgentSetup{},
		flushAt: never, dueMin: never, scanRings: true, step: 10 * clock.Microsecond}
	sock := &fakePort{}
	p := &port{dev: &device{eng: eng}, sock: sock, cfg: lockstep.AgentPort{IngressDelay: ingress}}
	p.link = &link{a: a, p: p, delay: ingress}
	p.inbox.fire = func() { p.releaseInbox(a) }
	a.ports = []*port{p}
	clk.AfterFunc(100*clock.Microsecond, func() {})
	return a, p, sock, eng
}

// A frame a kernel host sent during a stall is taken no earlier than the wall time the loop read it
// at (plus the cable's delay), never at the logical time the catch-up had reached: that delivered it to
// the far host before it was sent, round trips under the model in live labs.
func TestExternalFrameNotTakenBeforeItWasRead(t *testing.T) {
	for _, ingress := range []clock.Time{0, clock.Millisecond} {
		a, _, sock, eng := stalledAgent(20*clock.Millisecond, ingress)
		sent := a.clk.Wall() // the host sends now, 20 ms into the stall
		sock.frames = append(sock.frames, dataFrame(t, 1, []uint8{1}))
		if err := a.catchUp(); err != nil {
			t.Fatal(err)
		}
		a.clk.SleepUntil(sent + ingress + 100*clock.Microsecond)
		if err := a.catchUp(); err != nil {
			t.Fatal(err)
		}
		if len(eng.at) != 1 {
			t.Fatalf("ingress %v: %d frames taken, want 1", ingress, len(eng.at))
		}
		if eng.at[0] < sent+ingress {
			t.Fatalf("ingress %v: taken at %v, %v before the host sent it plus the cable's delay (%v)",
				ingress, eng.at[0], sent+ingress-eng.at[0], sent+ingress)
		}
		if a.fid.CatchUpSteps == 0 {
			t.Fatal("the loop did not catch up in steps: the test does not stall it")
		}
	}
}

// Outside a catch-up the frame is taken at the wall time of the read, plus the cable's delay.
func TestExternalFrameSync(t *testing.T) {
	a, p, _, eng := stalledAgent(0, clock.Millisecond)
	a.clk.SleepUntil(200 * clock.Microsecond)
	a.clk.RunDueUntil(a.clk.Wall())
	read := a.clk.Wall()
	a.take(p, dataFrame(t, 1, []uint8{1}), true)
	if len(eng.at) != 0 {
		t.Fatal("taken before the cable's delay")
	}
	a.clk.SleepUntil(read + 1100*clock.Microsecond) // the host's cable, then the timer
	a.clk.RunDueUntil(a.clk.Wall())
	if len(eng.at) != 1 || eng.at[0] < read+clock.Millisecond || eng.at[0] > read+5*clock.Millisecond {
		t.Fatalf("taken at %v, want %v plus at most the read's own time", eng.at, read+clock.Millisecond)
	}
}

// In lockstep an agent with a kernel host's port may run only to its grant: a frame the host sent
// after the grant is not taken at the grant (before it was sent) but held, and taken once a grant
// lets the clock reach the wall time it was read at.
func TestExternalFrameWaitsForTheGrant(t *testing.T) {
	a, p, _, eng := stalledAgent(5*clock.Millisecond, 0)
	a.lock = lockState{on: true, win: lockstep.NewWindow()}
	a.lock.win.Grant(clock.Millisecond, nil)
	a.lock.win.Advance()
	a.clk.RunDueUntil(a.limit()) // the stall's timer: the clock is at it, the grant ahead of both
	read := a.clk.Wall()
	a.take(p, dataFrame(t, 1, []uint8{1}), true)
	a.clk.RunDueUntil(a.limit())
	if len(eng.at) != 0 {
		t.Fatalf("taken at %v, before the grant let the clock reach its read at %v", eng.at, read)
	}
	a.lock.win.Grant(clock.Second, nil)
	a.lock.win.Advance()
	a.clk.RunDueUntil(a.limit())
	if len(eng.at) != 1 || eng.at[0] < read {
		t.Fatalf("taken at %v, want one frame at %v or later", eng.at, read)
	}
}
