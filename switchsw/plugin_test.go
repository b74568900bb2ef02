package switchsw

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/switchsw/fc"
)

// queueFC is a cut-down PortFC written only against the fc interface: it shows that per-egress-queue
// detection, (queue, port) pause frames sent upstream, and pausing a named egress queue on receipt fit
// the plug-in point without switch changes.
type queueFC struct {
	dev       fc.Device
	xoff, xon int
	paused    []bool // [port*2+class], class 0 = inter-hop queues, 1 = destination-direct queue
}

func init() {
	fc.Register("test-queuefc", fc.Mode{New: func(dev fc.Device, _ fc.Config) (fc.Module, error) {
		return &queueFC{dev: dev, xoff: 5000, xon: 2000, paused: make([]bool, 2*dev.NumPorts())}, nil
	}})
}

func (m *queueFC) Classify(out int, p *pkt.Packet) (int, fc.Class) {
	n := m.dev.DataQueues()
	if h, ok := m.dev.PeerHost(out); ok && h == p.Dst {
		return n - 1, fc.LosslessEgress
	}
	e := p.PortAhead(2)
	if e < 0 || e >= n-1 {
		e = n - 2
	}
	return e, fc.LosslessEgress
}

func (m *queueFC) depth(out, q int) (class, bytes int) {
	n := m.dev.DataQueues()
	if q == n-1 {
		return 1, m.dev.Port(out).Bytes(q)
	}
	for i := 0; i < n-1; i++ {
		bytes += m.dev.Port(out).Bytes(i)
	}
	return 0, bytes
}

func (m *queueFC) signal(out, q int, pause bool) {
	for port := 0; port < m.dev.NumPorts(); port++ {
		if port != out {
			m.dev.SendControl(port, &pkt.Packet{Kind: pkt.PortFC, Size: pkt.MinFrame, Src: -1, Dst: -1,
				FCQueue: int16(q), FCPort: int16(out), FCPause: pause})
			m.dev.Note(port, q, pause, true, true, 0)
		}
	}
}

func (m *queueFC) Enqueued(at fc.Loc, p *pkt.Packet) {
	class, b := m.depth(at.Out, at.Queue)
	if f := &m.paused[at.Out*2+class]; !*f && b+int(p.Size) >= m.xoff {
		*f = true
		m.signal(at.Out, at.Queue, true)
	}
}

func (m *queueFC) Dequeued(at fc.Loc, _ *pkt.Packet) {
	class, b := m.depth(at.Out, at.Queue)
	if f := &m.paused[at.Out*2+class]; *f && b <= m.xon {
		*f = false
		m.signal(at.Out, at.Queue, false)
	}
}

func (m *queueFC) Receive(in int, p *pkt.Packet) {
	if p.Kind != pkt.PortFC {
		return
	}
	m.dev.Port(in).Pause(int(p.FCPort), p.FCPause)
	m.dev.Note(in, int(p.FCPort), p.FCPause, false, true, 0)
}

func TestQueueFlowControlPlugin(t *testing.T) {
	cfg := baseConfig(4)
	cfg.DataQueues = 3 // two inter-hop queues, one destination-direct queue
	cfg.FlowControl.Mode = "test-queuefc"
	st := newStar(t, cfg)
	sw := st.sw
	sw.Port(1).Pause(1, true) // hold inter-hop queue 1 of port 1 so it builds

	// Source route: host 0 -> this switch port 1 -> relay host 1 port 4 -> next switch port 1.
	route := []uint8{0, 1, 4, 1}
	var last *pkt.Packet
	for i := 0; i < 8; i++ {
		p := data(0, 9, 1, uint32(i), 1000)
		p.Route, p.Hop = route, 1
		sw.Receive(0, p)
		last = p
	}
	if last.Hop != 2 || last.Queue != 1 {
		t.Fatalf("classified into queue %d with hop %d, want queue 1 (PortAhead(2)) and hop 2", last.Queue, last.Hop)
	}
	// Traffic for the host on port 3 is destination-direct.
	direct := data(0, 3, 2, 0, 1000)
	sw.Receive(0, direct)
	if direct.Queue != 2 {
		t.Fatalf("destination-direct frame in queue %d", direct.Queue)
	}
	st.clk.RunUntil(10 * clock.Microsecond)
	c := sw.Counters()
	for _, port := range []int{0, 2, 3} {
		if c.Ports[port].PausesSent != 1 {
			t.Fatalf("port %d: %d pauses sent, want 1 (every port but the congested one)", port, c.Ports[port].PausesSent)
		}
	}
	var fr *pkt.Packet
	for _, p := range st.hosts[0].got {
		if p.Kind == pkt.PortFC {
			fr = p
		}
	}
	if fr == nil || !fr.FCPause || fr.FCPort != 1 || fr.FCQueue != 1 {
		t.Fatalf("pause frame at host 0: %+v", fr)
	}

	// A downstream pause about (queue 0) arriving on port 1 pauses exactly that queue.
	sw.Receive(1, &pkt.Packet{Kind: pkt.PortFC, Size: pkt.MinFrame, FCPort: 0, FCPause: true})
	if !sw.Port(1).Paused(0) || sw.Port(1).Paused(2) {
		t.Fatal("PortFC-style receipt paused the wrong queue")
	}

	sw.Port(1).Pause(1, false)
	st.clk.RunUntil(100 * clock.Microsecond)
	c = sw.Counters()
	if c.Ports[0].ResumesSent != 1 || len(st.hosts[1].got) != 8 {
		t.Fatalf("after drain: resumes %d, delivered %d", c.Ports[0].ResumesSent, len(st.hosts[1].got))
	}
	assertDrained(t, st)
}

func TestLosslessEgressDropIsViolation(t *testing.T) {
	cfg := baseConfig(2)
	cfg.BufferBytes = 10_000
	cfg.DataQueues = 3
	cfg.FlowControl.Mode = "test-queuefc"
	st := newStar(t, cfg)
	st.sw.Port(1).Pause(2, true)
	for i := 0; i < 20; i++ {
		st.sw.Receive(0, data(0, 1, 1, uint32(i), 1000))
	}
	if c := st.sw.Counters(); c.LosslessDrops != 10 || len(st.log.Violations) != 10 || st.log.Drops[0].Reason != "buffer" {
		t.Fatalf("lossless drops %d, violations %d", c.LosslessDrops, len(st.log.Violations))
	}
}
