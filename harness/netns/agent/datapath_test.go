package agent

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/wire"
)

func dataFrame(t testing.TB, psn uint32, route []uint8) []byte {
	p := pkt.Packet{Kind: pkt.Data, Src: 1, Dst: 2, Flow: 77, SPort: 50000, DPort: wire.RoCEv2Port, Proto: 17,
		Prio: 3, ECN: pkt.ECT0, PSN: psn, Payload: 1000, Route: route, Hop: 1}
	p.Size = int32(pkt.DataSize(int(p.Payload), len(route)))
	b, err := wire.Encode(&p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A decoded packet's route outlives the receive buffer it came from (the next read overwrites it while
// the packet may still wait in a queue), cannot be appended into, and one copy serves every packet of
// the same path.
func TestDecodeRouteOutlivesBuffer(t *testing.T) {
	a := &agent{dp: batched, pool: new(pkt.Pool)}
	buf := dataFrame(t, 1, []uint8{1, 2, 3, 4})
	p1, err := a.decode(buf)
	if err != nil {
		t.Fatal(err)
	}
	copy(buf, dataFrame(t, 2, []uint8{9, 9, 9, 9})) // the port reuses its buffer
	p2, err := a.decode(buf)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p1.Route, []uint8{1, 2, 3, 4}) || p1.PSN != 1 {
		t.Fatalf("first packet changed with the buffer: route %v psn %d", p1.Route, p1.PSN)
	}
	if !bytes.Equal(p2.Route, []uint8{9, 9, 9, 9}) || p2.PSN != 2 {
		t.Fatalf("second packet: route %v psn %d", p2.Route, p2.PSN)
	}
	if cap(p1.Route) != len(p1.Route) {
		t.Fatalf("route cap %d > len %d: an append would write into another packet's route", cap(p1.Route), len(p1.Route))
	}
	p3, err := a.decode(dataFrame(t, 3, []uint8{1, 2, 3, 4}))
	if err != nil {
		t.Fatal(err)
	}
	if &p3.Route[0] != &p1.Route[0] {
		t.Fatal("two packets of one path hold two copies of its route")
	}
}

// A packet goes back to the pool once its frame is encoded, and the next decode takes it, with nothing
// of its previous life left; a frame that does not decode gives its packet back too.
func TestPacketsRecycled(t *testing.T) {
	a := &agent{dp: batched, pool: new(pkt.Pool)}
	p := &port{dev: &device{name: "s0"}, sock: nil}
	p.link = &link{a: a, p: p}
	pk, err := a.decode(dataFrame(t, 1, []uint8{1, 2, 3, 4}))
	if err != nil {
		t.Fatal(err)
	}
	pk.ECN, pk.Queue, pk.ProbeDelay = pkt.CE, 5, 7 // what an engine may have set on the way
	p.queue(pk, 10)
	if a.pool.Free() != 1 || len(p.out) != 1 {
		t.Fatalf("after encoding: %d packets free, %d frames waiting", a.pool.Free(), len(p.out))
	}
	again, err := a.decode(dataFrame(t, 2, []uint8{7}))
	if err != nil {
		t.Fatal(err)
	}
	if again != pk {
		t.Fatal("decode did not reuse the freed packet")
	}
	if again.ECN != pkt.ECT0 || again.Queue != 0 || again.ProbeDelay != 0 || again.PSN != 2 || !bytes.Equal(again.Route, []uint8{7}) {
		t.Fatalf("the reused packet kept its past: %+v", *again)
	}
	if _, err := a.decode([]byte{1, 2, 3}); err == nil || a.pool.Free() != 1 {
		t.Fatalf("a malformed frame: %v, %d packets free (want its packet back)", err, a.pool.Free())
	}
}

// Garbage is refused (counted by the caller), never a panic, and leaves no half-decoded packet behind:
// the next good frame decodes cleanly into the slot.
func TestDecodeMalformed(t *testing.T) {
	for _, dp := range []datapath{xdp, batched, legacy} {
		a := &agent{dp: dp}
		if _, err := a.decode(nil); err == nil { // what XDPPort.Recv hands over for a bad descriptor
			t.Fatalf("%v: an empty frame decoded", dp)
		}
		good := dataFrame(t, 5, []uint8{1, 2})
		r := rand.New(rand.NewPCG(1, 2))
		bad := 0
		for i := 0; i < 20000; i++ {
			f := bytes.Clone(good)
			switch i % 3 {
			case 0:
				f = f[:r.IntN(len(f))]
			case 1:
				f[r.IntN(60)] ^= byte(1 + r.IntN(255))
			case 2:
				f = make([]byte, r.IntN(200))
				for j := range f {
					f[j] = byte(r.Uint32())
				}
			}
			if _, err := a.decode(f); err != nil {
				bad++
			}
		}
		if bad == 0 {
			t.Fatalf("%v: no corrupted frame was refused", dp)
		}
		p, err := a.decode(good)
		if err != nil || p.PSN != 5 || !bytes.Equal(p.Route, []uint8{1, 2}) || p.Raw != nil {
			t.Fatalf("%v: good frame after garbage: %+v, %v", dp, p, err)
		}
	}
}

type recvLog struct {
	clk *clock.Real
	at  []clock.Time
	psn []uint32
}

func (r *recvLog) Receive(_ int, p *pkt.Packet) {
	r.at = append(r.at, r.clk.Now())
	r.psn = append(r.psn, p.PSN)
}
func (r *recvLog) SetLink(int, egress.Link) {}
func (r *recvLog) Flush()                   {}

// A frame read before it is due reaches its engine at its due time exactly, in order, however the
// reads and the clock interleave.
func TestHeldFramesDeliveredWhenDue(t *testing.T) {
	clk := clock.NewReal(clock.MonotonicNanos() - int64(clock.Second/clock.Nanosecond)) // wall is 1 s in
	eng := &recvLog{clk: clk}
	a := &agent{clk: clk, dp: batched}
	p := &port{dev: &device{eng: eng}, early: true}
	due := []clock.Time{10, 20, 20, 35, 90}
	for i, d := range due[:3] {
		p.hold(a, &pkt.Packet{PSN: uint32(i)}, d*clock.Microsecond)
	}
	clk.RunDueUntil(20 * clock.Microsecond)
	for i, d := range due[3:] {
		p.hold(a, &pkt.Packet{PSN: uint32(3 + i)}, d*clock.Microsecond)
	}
	clk.RunDueUntil(clock.Second)
	if len(eng.at) != len(due) {
		t.Fatalf("delivered %d of %d", len(eng.at), len(due))
	}
	for i, d := range due {
		if eng.at[i] != d*clock.Microsecond || eng.psn[i] != uint32(i) {
			t.Fatalf("frame %d: delivered psn %d at %v, want psn %d at %v", i, eng.psn[i], eng.at[i], i, d*clock.Microsecond)
		}
	}
}

// Only ports whose peer this agent hosts write early, and the catch-up step stays shorter than their
// link delay (a frame written in a step is due after the step ends).
func TestEarlyPortsAndStep(t *testing.T) {
	a := &agent{dp: batched}
	mk := func(delay clock.Time) *port {
		p := &port{}
		p.link = &link{p: p, delay: delay}
		return p
	}
	local, peer, remote, nodelay := mk(clock.Millisecond), mk(clock.Millisecond), mk(clock.Millisecond), mk(0)
	local.peer, peer.peer, nodelay.peer = peer, local, peer
	a.ports = []*port{local, peer, remote, nodelay}
	a.setEarly()
	if !local.early || !peer.early || remote.early || nodelay.early {
		t.Fatalf("early: local %v peer %v remote %v no-delay %v", local.early, peer.early, remote.early, nodelay.early)
	}
	if local.slack <= 0 || local.slack >= local.link.delay {
		t.Fatalf("slack %v not within the link delay %v", local.slack, local.link.delay)
	}
	a = &agent{dp: xdp, ports: []*port{local, peer, remote}}
	local.early, peer.early = false, false
	a.setEarly()
	if !local.early || !peer.early {
		t.Fatal("the xdp data path did not write early")
	}
	a = &agent{dp: legacy, ports: []*port{local}}
	local.early = false
	a.setEarly()
	if local.early {
		t.Fatal("the legacy data path wrote early")
	}
}

// A frame's key tells apart the frames a link carries at once: the next PSN of a flow, the same frame
// marked CE on the way, a different route; the same bytes give the same key; short frames do not panic.
func TestFrameKey(t *testing.T) {
	a, b := dataFrame(t, 1, []uint8{1, 2}), dataFrame(t, 2, []uint8{1, 2})
	if keyOf(a) == keyOf(b) {
		t.Fatal("consecutive PSNs share a key")
	}
	if keyOf(a) != keyOf(bytes.Clone(a)) {
		t.Fatal("the same bytes gave two keys")
	}
	var p pkt.Packet
	if err := wire.Decode(a, &p); err != nil {
		t.Fatal(err)
	}
	p.ECN = pkt.CE
	marked, err := wire.Encode(&p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(marked) != len(a) || keyOf(marked) == keyOf(a) {
		t.Fatal("a CE-marked copy shares the unmarked frame's key")
	}
	if keyOf(dataFrame(t, 1, []uint8{1, 3})) == keyOf(a) {
		t.Fatal("another route shares the key")
	}
	// A pause and a resume of priority 7 differ only in quanta 7 (bytes 32-33).
	pause := pkt.Packet{Kind: pkt.PFC, Src: -1, Dst: -1, PauseMask: 1 << 7}
	pause.PauseQuanta[7] = 0xffff
	resume := pause
	resume.PauseQuanta[7] = 0
	pause.Size, resume.Size = pkt.MinFrame, pkt.MinFrame
	pb, err := wire.Encode(&pause, nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := wire.Encode(&resume, nil)
	if err != nil {
		t.Fatal(err)
	}
	if keyOf(pb) == keyOf(rb) {
		t.Fatal("a priority-7 pause and its resume share a key")
	}
	for n := 0; n < 40; n++ {
		keyOf(make([]byte, n))
	}
	if keyOf([]byte{1, 2, 3}) == keyOf([]byte{1, 2, 4}) {
		t.Fatal("short frames that differ share a key")
	}
}

// countPort records how many frames each Send call carried.
type countPort struct {
	fakePort
	calls []int
}

func (c *countPort) Send(frames [][]byte) (int, error) {
	c.calls = append(c.calls, len(frames))
	return len(frames), nil
}

// A flush writes at most half the peer's stock to a port whose peer this agent reads after every flush
// (ownStock), keeps the rest, with their due times, for the next flush, and asks for that flush at
// once; the frames go out in order and none is lost or written twice.
func TestFlushKeepsWithinThePeersStock(t *testing.T) {
	clk := clock.NewReal(clock.MonotonicNanos())
	a := &agent{clk: clk, dp: xdp, pool: new(pkt.Pool), flushAt: never, dueMin: never}
	sock := &countPort{}
	p := &port{dev: &device{name: "s0"}, sock: sock, slack: clock.Microsecond}
	p.link = &link{a: a, p: p}
	p.peer = &port{dev: &device{name: "s1"}, rxStock: 8}
	a.ports = []*port{p}
	for i := range 10 {
		pk, err := a.decode(dataFrame(t, uint32(i), []uint8{1}))
		if err != nil {
			t.Fatal(err)
		}
		p.queue(pk, clock.Time(i+1)*clock.Millisecond)
	}
	for flushes := 0; len(p.out) > 0; flushes++ {
		if flushes == 5 {
			t.Fatalf("%d frames still waiting after 5 flushes", len(p.out))
		}
		if err := a.flushAll(); err != nil {
			t.Fatal(err)
		}
		if len(p.out) > 0 && (a.flushAt != p.due[0]-p.slack || a.dueMin != p.due[0]) {
			t.Fatalf("frames kept (first due %v) but the next flush is asked for at %v (due min %v)", p.due[0], a.flushAt, a.dueMin)
		}
	}
	if want := []int{4, 4, 2}; !slices.Equal(sock.calls, want) {
		t.Fatalf("sends of %v frames, want %v", sock.calls, want)
	}
	if a.fid.Frames != 10 {
		t.Fatalf("%d frames counted written, want 10", a.fid.Frames)
	}
	for i, e := range p.peer.expect {
		if e.due != clock.Time(i+1)*clock.Millisecond {
			t.Fatalf("frame %d expected at the peer at %v, want %v (order or due times lost)", i, e.due, clock.Time(i+1)*clock.Millisecond)
		}
	}
	if len(p.peer.expect) != 10 {
		t.Fatalf("the peer expects %d frames, want 10", len(p.peer.expect))
	}
}
