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
type link struct {
	clk     *clock.Virtual
	delay   clock.Time
	to      Device
	port    int
	flight  []inFlight
	head    int
	pending bool
	fire    func()
	// unwired is told about every frame the real wire could not carry (wire.Check): the netns backend
	// would fail to send it, so the virtual run must not quietly deliver it.
	unwired func(p *pkt.Packet, err error)
	// pcap, when set, records every frame the link carries, encoded by wire, at the time the netns
	// backend's capture would stamp it (when the frame leaves for the peer, after the link delay).
	pcap *capture
	// meter counts the bytes the link carries per bin (nil: not metered). It points at m, inside the
	// link: a meter of its own was one more cache line to miss per frame.
	meter *linkMeter
	m     linkMeter
	check *bool // Fabric.CheckFrames
}

type inFlight struct {
	at clock.Time
	p  *pkt.Packet
}

func newLink(clk *clock.Virtual, delay clock.Time, to Device, port int, unwired func(*pkt.Packet, error), check *bool) *link {
	l := &link{clk: clk, delay: delay, to: to, port: port, unwired: unwired, check: check}
	l.fire = l.deliver
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
	l.flight = append(l.flight, inFlight{at: l.clk.Now() + l.delay, p: p})
	if !l.pending {
		l.pending = true
		l.clk.Schedule(l.delay, l.fire)
	}
}

func (l *link) deliver() {
	now := l.clk.Now()
	for l.head < len(l.flight) && l.flight[l.head].at <= now {
		p := l.flight[l.head].p
		l.flight[l.head].p = nil
		l.head++
		l.to.Receive(l.port, p)
	}
	if l.head == len(l.flight) {
		l.flight, l.head = l.flight[:0], 0
		l.pending = false
		return
	}
	if l.head > 256 && l.head*2 > len(l.flight) { // a link that never drains must not grow forever
		n := copy(l.flight, l.flight[l.head:])
		l.flight, l.head = l.flight[:n], 0
	}
	l.clk.Schedule(l.flight[l.head].at-now, l.fire)
}
