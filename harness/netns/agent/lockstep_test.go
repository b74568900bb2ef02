package agent

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/pkt"
)

// taker is an engine that records when it took each packet.
type taker struct {
	clk *clock.Real
	at  []clock.Time
}

func (t *taker) Receive(int, *pkt.Packet) { t.at = append(t.at, t.clk.Now()) }
func (t *taker) SetLink(int, egress.Link) {}
func (t *taker) Flush()                   {}

func lockAgent() (*agent, *port, *taker) {
	clk := clock.NewReal(clock.MonotonicNanos())
	eng := &taker{clk: clk}
	a := &agent{clk: clk, end: clock.Second, setup: &lockstep.AgentSetup{Lockstep: true}}
	a.lock = lockState{on: true, win: lockstep.NewWindow()}
	p := &port{dev: &device{eng: eng}, cfg: lockstep.AgentPort{RxChan: 3}}
	p.inbox.fire = func() { p.releaseInbox(a) }
	return a, p, eng
}

// A frame on a cut link without a valid stamp, or with a sequence number already read, is counted and
// dropped; a good one comes back without its stamp.
func TestCrossFrameStamps(t *testing.T) {
	a, p, _ := lockAgent()
	frame := make([]byte, 60)
	good := lockstep.AppendStamp(append([]byte(nil), frame...), 5*clock.Microsecond, 1)
	for _, bad := range [][]byte{nil, good[:20], good[:len(good)-2], make([]byte, 80)} {
		if _, _, ok := a.crossFrame(p, bad); ok {
			t.Fatalf("a frame of %d bytes without a valid stamp was taken", len(bad))
		}
	}
	if a.fid.BadStamps != 4 || a.fid.Malformed != 4 || p.dev.malformed != 4 {
		t.Fatalf("bad stamps %d, malformed %d/%d, want 4", a.fid.BadStamps, a.fid.Malformed, p.dev.malformed)
	}
	body, due, ok := a.crossFrame(p, good)
	if !ok || len(body) != len(frame) || due != 5*clock.Microsecond {
		t.Fatalf("good frame: ok %v, %d bytes, due %v", ok, len(body), due)
	}
	if _, _, ok := a.crossFrame(p, good); ok || a.fid.StaleCross != 1 || a.fid.Malformed != 5 {
		t.Fatalf("a repeated frame was taken (stale %d, malformed %d)", a.fid.StaleCross, a.fid.Malformed)
	}
}

// A cross-agent frame read before its due time waits in the inbox and is taken at that time; one read
// after it is taken at once and counted late.
func TestDeliverAt(t *testing.T) {
	a, p, eng := lockAgent()
	a.clk.AdvanceTo(clock.Millisecond) // the wall clock is a little past the epoch by now
	now := a.clk.Now()
	a.deliverAt(p, &pkt.Packet{}, now+50*clock.Microsecond)
	if len(eng.at) != 0 || a.fid.LateCross != 0 {
		t.Fatal("a frame was taken before it was due")
	}
	a.clk.SleepUntil(now + 60*clock.Microsecond)
	a.clk.RunDueUntil(clock.Second)
	if len(eng.at) != 1 || eng.at[0] != now+50*clock.Microsecond {
		t.Fatalf("taken at %v, want %v", eng.at, now+50*clock.Microsecond)
	}
	a.deliverAt(p, &pkt.Packet{}, now)
	if len(eng.at) != 2 || a.fid.LateCross != 1 || a.fid.MaxCrossLate < 50*clock.Microsecond || a.fid.LateArrivals != 1 {
		t.Fatalf("late frame: taken %d, late %d (max %v), late arrivals %d", len(eng.at), a.fid.LateCross, a.fid.MaxCrossLate, a.fid.LateArrivals)
	}
	if a.fid.Arrivals != 2 || a.fid.CrossFrames != 2 {
		t.Fatalf("arrivals %d, cross frames %d, want 2", a.fid.Arrivals, a.fid.CrossFrames)
	}
}
