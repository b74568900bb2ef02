package virtual

import (
	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/wire"
)

// Device is what a link delivers to: a switch or a NIC engine.
type Device interface {
	Receive(port int, p *pkt.Packet)
}

// link is one direction of a cable. The sender's egress port has already spent the serialization time;
// the link adds the propagation delay. Frames cannot overtake each other on a cable, so in-flight frames
// form a FIFO and one timer (for the head) is enough, which keeps the event heap small on long links.
//
// What Send and deliver read fills the struct's first two cache lines (it is 256 bytes, so they are
// one aligned 128-byte pair): on a large fabric a link's state is out of cache by its next frame, and
// the flags Send tests sat two lines further on, behind the meter.
type link struct {
	clk    *clock.Virtual
	delay  clock.Time
	flight ring
	check  *bool // Fabric.CheckFrames
	// meter counts the bytes the link carries per bin (nil: not metered). It points at m, inside the
	// link: a meter of its own was one more cache line to miss per frame.
	meter *linkMeter

	to      Device
	port    int
	ord     clock.Order // the receiving port's arrivals (clock.ArrivalOrder)
	pending bool
	// pcap, when set, records every frame the link carries, encoded by wire, at the time the netns
	// backend's capture would stamp it (when the frame leaves for the peer, after the link delay).
	pcap *capture
	// cross, on a link between two parts of a parallel run, takes the frames Send would put in flight:
	// its receiver's half (cross.rx) holds them from the next window edge on (parallel.go).
	cross *crossing

	// unwired is told about every frame the real wire could not carry (wire.Check): the netns backend
	// would fail to send it, so the virtual run must not quietly deliver it.
	unwired func(p *pkt.Packet, err error)
	m       linkMeter
}

type inFlight struct {
	at clock.Time
	p  *pkt.Packet
}

func newLink(clk *clock.Virtual, delay clock.Time, to Device, node, port int, unwired func(*pkt.Packet, error), check *bool) *link {
	l := &link{clk: clk, delay: delay, to: to, port: port, ord: clock.ArrivalOrder(node, port), unwired: unwired, check: check}
	return l
}

func (l *link) Send(p *pkt.Packet) {
	if *l.check {
		if err := wire.Check(p); err != nil {
			l.unwired(p, err)
			return
		}
	}
	if l.pcap != nil {
		l.pcap.write(l.clk.Now()+l.delay, p)
	}
	if l.meter != nil {
		l.meter.add(l.clk.Now(), p)
	}
	if l.cross != nil {
		l.cross.send(inFlight{at: l.clk.Now() + l.delay, p: p})
		return
	}
	l.flight.push(inFlight{at: l.clk.Now() + l.delay, p: p})
	if !l.pending {
		l.pending = true
		l.clk.ScheduleHandler(l.delay, l.ord, l)
	}
}

func (l *link) deliver() {
	now := l.clk.Now()
	for l.flight.n > 0 && l.flight.front().at <= now {
		l.to.Receive(l.port, l.flight.pop())
	}
	if l.flight.n == 0 {
		l.pending = false
		return
	}
	l.clk.ScheduleHandler(l.flight.front().at-now, l.ord, l)
}

// Fire delivers the frames due now: the link is the clock's Handler of its own arrivals.
func (l *link) Fire() { l.deliver() }

// ring is a link's in-flight frames, oldest first, in a circular buffer that grows (doubling) only when
// full, so it holds the most frames the link ever carried at once: about 12 data frames on a 1 us link
// at 100 Gb/s, 200 minimum-size ones. The slice it replaced was compacted only once 256 frames had left
// it, which kept every busy link at hundreds of entries: 3.6 MB of the fat-tree k=12 incast's 41 MB
// live heap (a shared pool of fifo chunks held as little but cost 1.4% more instructions at k=8).
type ring struct {
	buf     []inFlight // len is a power of two, or 0
	head, n int32
}

func (r *ring) push(f inFlight) {
	if int(r.n) == len(r.buf) {
		r.grow()
	}
	r.buf[int(r.head+r.n)&(len(r.buf)-1)] = f
	r.n++
}

func (r *ring) grow() {
	buf := make([]inFlight, max(8, 2*len(r.buf)))
	for i := 0; i < int(r.n); i++ {
		buf[i] = r.buf[(int(r.head)+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}

func (r *ring) front() *inFlight { return &r.buf[r.head] }

// pop removes the oldest frame; the ring must not be empty. Its slot lets go of the packet.
func (r *ring) pop() *pkt.Packet {
	f := &r.buf[r.head]
	p := f.p
	f.p = nil
	r.head = (r.head + 1) & int32(len(r.buf)-1)
	r.n--
	return p
}
