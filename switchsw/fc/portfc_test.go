package fc_test

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/switchsw"
	"github.com/fabriclab/fabriclab/switchsw/fc"
	"github.com/fabriclab/fabriclab/units"
)

const (
	gbps100 = 100e9
	us      = clock.Microsecond
	xoff    = 75_000 // 6 BDP at 100 Gb/s x 1 us
	xon     = 50_000
)

// ndc41Switch is switch s(id) of NDC(4,1) (lab/topo numbering: s0..s3 layer 0, s4..s7 layer 1) as a
// real switchsw.Switch whose links record what leaves each port.
type ndc41Switch struct {
	clk *clock.Virtual
	sw  *switchsw.Switch
	log *records.Log
	out [][]*pkt.Packet
}

// ndcPeers returns, for NDC(4,1) switch id, the host on each port and that host's PeerSelf row.
func ndcPeers(id int) (hosts []int32, self [][]int16) {
	for p := 0; p < 4; p++ {
		var h int
		if id < 4 { // layer 0: unit a1 = id, port = a0; the host's other switch is layer 1, where it sits at a1
			h = 4*id + p
			self = append(self, []int16{-1, int16(id)})
		} else { // layer 1: position a0 = id-4, port = a1; the other switch is layer 0, where it sits at a0
			h = 4*p + (id - 4)
			self = append(self, []int16{int16(id - 4), -1})
		}
		hosts = append(hosts, int32(h))
	}
	return hosts, self
}

func newNDC41Switch(t *testing.T, id int) *ndc41Switch {
	t.Helper()
	hosts, self := ndcPeers(id)
	cfg := switchsw.Config{Device: int32(16 + id), DataQueues: 4, BufferBytes: 5_000_000,
		FlowControl: fc.Config{Mode: "portfc", XOFF: units.Size{Bytes: xoff}, XON: units.Size{Bytes: xon},
			PortFC: fc.PortFCConfig{PeerSelf: self}}}
	for _, h := range hosts {
		cfg.Ports = append(cfg.Ports, switchsw.PortConfig{RateBps: gbps100, Delay: us, PeerIsHost: true, PeerHost: h})
	}
	s := &ndc41Switch{clk: clock.NewVirtual(), log: &records.Log{}, out: make([][]*pkt.Packet, 4)}
	links := make([]egress.Link, 4)
	for p := range links {
		p := p
		links[p] = egress.LinkFunc(func(f *pkt.Packet) { s.out[p] = append(s.out[p], f) })
	}
	var err error
	if s.sw, err = switchsw.New(cfg, s.clk, links, s.log); err != nil {
		t.Fatal(err)
	}
	return s
}

func dataFrame(flow uint32, src, dst int32, route []uint8) *pkt.Packet {
	return &pkt.Packet{Kind: pkt.Data, Size: int32(pkt.DataSize(1000, len(route))), Src: src, Dst: dst,
		Flow: flow, Prio: 3, Payload: 1000, Route: route, Hop: 1}
}

func (s *ndc41Switch) fcFrames(port int) []*pkt.Packet {
	var fs []*pkt.Packet
	for _, f := range s.out[port] {
		if f.Kind == pkt.PortFC {
			fs = append(fs, f)
		}
	}
	return fs
}

// TestPortFCGetQIdxFig6 checks the paper's Fig. 6 worked example at switch 23 (our s7), egress port
// toward node 15: F11/F16 -> DDQ Q3, F12/F13 -> Q0/Q1, F14/F15 -> Q2.
func TestPortFCGetQIdxFig6(t *testing.T) {
	s := newNDC41Switch(t, 7)
	for q := 0; q < 4; q++ {
		s.sw.Port(3).Pause(q, true) // keep the frames queued so we can look at them
	}
	// Routes start at the source host: its port toward s7 (1), s7's port toward h15 (3), then for
	// four-hop flows h15's port toward s3 (0) and s3's port toward the destination (= its a0).
	cases := []struct {
		name     string
		src, dst int32
		route    []uint8
		want     int16
	}{
		{"F11", 11, 15, []uint8{1, 3}, 3},
		{"F16", 7, 15, []uint8{1, 3}, 3},
		{"F12", 11, 12, []uint8{1, 3, 0, 0}, 0},
		{"F13", 11, 13, []uint8{1, 3, 0, 1}, 1},
		{"F14", 11, 14, []uint8{1, 3, 0, 2}, 2},
		{"F15", 3, 14, []uint8{1, 3, 0, 2}, 2},
	}
	inPort := map[int32]int{3: 0, 7: 1, 11: 2}
	for i, c := range cases {
		p := dataFrame(uint32(i+1), c.src, c.dst, c.route)
		s.sw.Receive(inPort[c.src], p)
		if p.Queue != c.want || p.Hop != 2 {
			t.Errorf("%s: queue %d hop %d, want queue %d hop 2", c.name, p.Queue, p.Hop, c.want)
		}
	}
}

// TestPortFCCompression checks the n-1 compression where the relay's own port is not the last one:
// at s4 toward h4 (h4 sits on port 0 of s1), s1's ports 1,2,3 map to IHFQ 0,1,2.
func TestPortFCCompression(t *testing.T) {
	s := newNDC41Switch(t, 4)
	for q := 0; q < 4; q++ {
		s.sw.Port(1).Pause(q, true)
	}
	for e, want := range map[uint8]int16{1: 0, 2: 1, 3: 2} {
		p := dataFrame(uint32(e), 0, int32(4+e), []uint8{1, 1, 0, e})
		s.sw.Receive(0, p)
		if p.Queue != want {
			t.Errorf("s1 egress %d: IHFQ %d, want %d", e, p.Queue, want)
		}
	}
	for e, want := range map[int]int{0: 0, 1: 0, 2: 1, 3: 2} {
		if got := fc.Compress(e, 1); e != 1 && got != want {
			t.Errorf("Compress(%d, 1) = %d, want %d", e, got, want)
		}
	}
	if fc.Compress(3, -1) != 3 {
		t.Error("self -1 must not compress")
	}
}

// TestPortFCAlgorithms12 drives Algorithm 1 and 2 on one egress port: the IHFQ sum and the DDQ each
// pause every other port once at X_off, independently, and resume once at X_on.
func TestPortFCAlgorithms12(t *testing.T) {
	s := newNDC41Switch(t, 7)
	for q := 0; q < 4; q++ {
		s.sw.Port(3).Pause(q, true) // downstream has stopped us
	}
	size := pkt.DataSize(1000, 4)
	flow := uint32(0)
	sendIHFQ := func(k int) {
		for i := 0; i < k; i++ {
			flow++
			s.sw.Receive(2, dataFrame(flow, 11, int32(12+i%3), []uint8{1, 3, 0, uint8(i % 3)}))
		}
	}
	below := (xoff - 1) / size // frames that stay below X_off
	sendIHFQ(below)
	s.clk.RunUntil(s.clk.Now() + 10*us)
	if n := len(s.fcFrames(0)); n != 0 {
		t.Fatalf("paused at %d bytes < X_off", below*size)
	}
	sendIHFQ(1)
	sendIHFQ(20) // past X_off: no repeats
	s.clk.RunUntil(s.clk.Now() + 10*us)
	for port := 0; port < 3; port++ {
		fs := s.fcFrames(port)
		if len(fs) != 1 || !fs[0].FCPause || fs[0].FCPort != 3 || fs[0].FCQueue >= 3 {
			t.Fatalf("port %d: PortFC frames %+v, want one IHFQ-class pause about port 3", port, fs)
		}
	}
	if len(s.fcFrames(3)) != 0 {
		t.Fatal("pause sent back toward the congested port")
	}
	if a, b := s.sw.FlowControl().(*fc.PortFC).UpstreamPaused(3); !a || b {
		t.Fatalf("upstream paused: ihfq %v ddq %v", a, b)
	}
	// The DDQ has its own flag: an IHFQ pause must not swallow it.
	for i := 0; i < xoff/pkt.DataSize(1000, 2)+1; i++ {
		flow++
		s.sw.Receive(0, dataFrame(flow, 3, 15, []uint8{1, 3}))
	}
	s.clk.RunUntil(s.clk.Now() + 10*us)
	for port := 0; port < 3; port++ {
		fs := s.fcFrames(port)
		if len(fs) != 2 || !fs[1].FCPause || fs[1].FCQueue != 3 || fs[1].FCPort != 3 {
			t.Fatalf("port %d: want a DDQ pause after the IHFQ one, got %d frames", port, len(fs))
		}
	}
	// Release the IHFQs only: the IHFQ group resumes once (at X_on), the DDQ stays paused upstream.
	for q := 0; q < 3; q++ {
		s.sw.Port(3).Pause(q, false)
	}
	s.clk.RunUntil(s.clk.Now() + 100*us)
	for port := 0; port < 3; port++ {
		fs := s.fcFrames(port)
		if len(fs) != 3 || fs[2].FCPause || fs[2].FCQueue >= 3 {
			t.Fatalf("port %d: want IHFQ resume third, got %d frames", port, len(fs))
		}
	}
	if s.sw.Port(3).Bytes(0)+s.sw.Port(3).Bytes(1)+s.sw.Port(3).Bytes(2) != 0 {
		t.Fatal("IHFQs did not drain")
	}
	s.sw.Port(3).Pause(3, false)
	s.clk.RunUntil(s.clk.Now() + 100*us)
	for port := 0; port < 3; port++ {
		fs := s.fcFrames(port)
		if len(fs) != 4 || fs[3].FCPause || fs[3].FCQueue != 3 {
			t.Fatalf("port %d: want DDQ resume last, got %d frames", port, len(fs))
		}
	}
	var sent int
	for _, r := range s.log.Pauses {
		if !r.Sent || r.Hops != 0 {
			t.Fatalf("switch pause record %+v: switches originate with Hops 0 and receive nothing here", r)
		}
		sent++
	}
	if sent != 12 {
		t.Fatalf("%d pause records, want 12 (2 pauses + 2 resumes x 3 ports)", sent)
	}
	if c := s.sw.Counters(); c.LosslessDrops != 0 {
		t.Fatal("lossless drops")
	}
}

// TestPortFCAlgorithm4: a DDQ-class frame relayed by the node on port 1 of s4 (h4, which sits on port
// 0 of s1) naming s1's port 2 pauses IHFQ Compress(2, 0) = 1 of our port 1, and nothing else.
func TestPortFCAlgorithm4(t *testing.T) {
	s := newNDC41Switch(t, 4)
	s.sw.Receive(1, &pkt.Packet{Kind: pkt.PortFC, Size: pkt.MinFrame, Src: -1, Dst: -1, FCQueue: 3, FCPort: 2, FCPause: true})
	for q := 0; q < 4; q++ {
		if s.sw.Port(1).Paused(q) != (q == 1) {
			t.Fatalf("queue %d paused=%v", q, s.sw.Port(1).Paused(q))
		}
	}
	for p := 0; p < 4; p++ {
		if p != 1 && s.sw.Port(p).Paused(1) {
			t.Fatalf("port %d paused", p)
		}
	}
	s.sw.Receive(1, &pkt.Packet{Kind: pkt.PortFC, Size: pkt.MinFrame, Src: -1, Dst: -1, FCQueue: 3, FCPort: 2, FCPause: false})
	if s.sw.Port(1).Paused(1) {
		t.Fatal("resume did not resume")
	}
	s.clk.RunUntil(10 * us)
	for p := range s.out {
		if len(s.fcFrames(p)) != 0 {
			t.Fatal("a switch relayed a PortFC frame")
		}
	}
	if len(s.log.Pauses) != 2 || s.log.Pauses[0].Sent || s.log.Pauses[0].Hops != 1 || s.log.Pauses[0].Queue != 1 || !s.log.Pauses[0].On {
		t.Fatalf("records %+v", s.log.Pauses)
	}
}

func TestPortFCConfigErrors(t *testing.T) {
	hosts, self := ndcPeers(0)
	base := switchsw.Config{DataQueues: 4, BufferBytes: 5_000_000}
	for _, h := range hosts {
		base.Ports = append(base.Ports, switchsw.PortConfig{RateBps: gbps100, Delay: us, PeerIsHost: true, PeerHost: h})
	}
	for name, f := range map[string]fc.Config{
		"xoff":            {Mode: "portfc"},
		"in bytes":        {Mode: "portfc", XOFF: units.Size{BDPs: 6}},
		"xon":             {Mode: "portfc", XOFF: units.Size{Bytes: 100}, XON: units.Size{Bytes: 200}},
		"peer_self":       {Mode: "portfc", XOFF: units.Size{Bytes: xoff}, PortFC: fc.PortFCConfig{PeerSelf: self[:2]}},
		"peer_self[0][2]": {Mode: "portfc", XOFF: units.Size{Bytes: xoff}, PortFC: fc.PortFCConfig{PeerSelf: [][]int16{{-1, 1, 4}, {-1, 1}, {-1, 1}, {-1, 1}}}},
		"portfc.ddq_xon:": {Mode: "portfc", XOFF: units.Size{Bytes: xoff}, PortFC: fc.PortFCConfig{DDQXOFF: units.Size{Bytes: 10}, DDQXON: units.Size{Bytes: 10}}},
	} {
		cfg := base
		cfg.FlowControl = f
		if _, err := switchsw.New(cfg, clock.NewVirtual(), nil, nil); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !contains(err.Error(), name) {
			t.Errorf("%s: error %q does not name the field", name, err)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestPortFCNodeMemoryPause: an 802.1Qbb pause from a node's memory guard pauses every IHFQ of the
// port toward it (what the node would relay) and leaves its DDQ running; it composes with Algorithm 4
// (an IHFQ paused by a relayed frame stays paused after the guard's resume).
func TestPortFCNodeMemoryPause(t *testing.T) {
	s := newNDC41Switch(t, 4)
	pfc := func(quanta uint16) *pkt.Packet {
		f := &pkt.Packet{Kind: pkt.PFC, Size: pkt.MinFrame, Src: -1, Dst: -1, PauseMask: 0x7F}
		for p := 0; p < 7; p++ {
			f.PauseQuanta[p] = quanta
		}
		return f
	}
	s.sw.Receive(1, &pkt.Packet{Kind: pkt.PortFC, Size: pkt.MinFrame, Src: -1, Dst: -1, FCQueue: 3, FCPort: 2, FCPause: true})
	s.sw.Receive(1, pfc(0xFFFF))
	for q := 0; q < 4; q++ {
		if s.sw.Port(1).Paused(q) != (q < 3) {
			t.Fatalf("guard pause: queue %d paused=%v, want the three IHFQs only", q, s.sw.Port(1).Paused(q))
		}
	}
	s.sw.Receive(1, pfc(0))
	for q := 0; q < 4; q++ {
		if s.sw.Port(1).Paused(q) != (q == 1) {
			t.Fatalf("guard resume: queue %d paused=%v, want only Algorithm 4's IHFQ 1", q, s.sw.Port(1).Paused(q))
		}
	}
}

// TestPortFCAlgorithm4ThreePortNodes is Algorithm 4 behind three-port nodes (NDC(4,2)): the node on
// port 1 sits on port 2 of the switch behind its port 1 and on port 0 of the one behind its port 2. A
// relayed frame names the congested port there; its via says which switch, so the same port 1 maps to
// IHFQ 1 through the first (below self 2) and IHFQ 0 through the second (above self 0). A queue held by
// two congested ports (port 1 behind via 1, port 2 behind via 2) resumes only when both have.
func TestPortFCAlgorithm4ThreePortNodes(t *testing.T) {
	self := [][]int16{{-1, 1, 1}, {-1, 2, 0}, {-1, 3, 3}, {-1, 0, 2}}
	cfg := switchsw.Config{Device: 100, DataQueues: 4, BufferBytes: 5_000_000,
		FlowControl: fc.Config{Mode: "portfc", XOFF: units.Size{Bytes: xoff}, XON: units.Size{Bytes: xon},
			PortFC: fc.PortFCConfig{PeerSelf: self}}}
	for h := 0; h < 4; h++ {
		cfg.Ports = append(cfg.Ports, switchsw.PortConfig{RateBps: gbps100, Delay: us, PeerIsHost: true, PeerHost: int32(h)})
	}
	log := &records.Log{}
	links := make([]egress.Link, 4)
	for p := range links {
		links[p] = egress.LinkFunc(func(*pkt.Packet) {})
	}
	sw, err := switchsw.New(cfg, clock.NewVirtual(), links, log)
	if err != nil {
		t.Fatal(err)
	}
	frame := func(via, class, port int, on bool) *pkt.Packet {
		f := &pkt.Packet{Kind: pkt.PortFC, Size: pkt.MinFrame, Src: -1, Dst: -1, FCQueue: int16(class), FCPort: int16(port), FCPause: on}
		f.SetFCVia(via)
		return f
	}
	paused := func() (qs []int) {
		for q := 0; q < 3; q++ {
			if sw.Port(1).Paused(q) {
				qs = append(qs, q)
			}
		}
		return qs
	}
	want := func(step string, qs ...int) {
		t.Helper()
		if got := paused(); len(got) != len(qs) || (len(qs) > 0 && !equalInts(got, qs)) {
			t.Fatalf("%s: paused IHFQs %v, want %v", step, got, qs)
		}
	}
	sw.Receive(1, frame(1, 3, 1, true)) // DDQ of port 1 behind via 1 (self 2): IHFQ 1
	want("DDQ via 1 port 1", 1)
	sw.Receive(1, frame(2, 0, 1, true)) // IHFQ group of port 1 behind via 2 (self 0): IHFQ 0
	want("IHFQ via 2 port 1", 0, 1)
	sw.Receive(1, frame(2, 3, 2, true)) // DDQ of port 2 behind via 2 (self 0): IHFQ 1 again
	sw.Receive(1, frame(1, 3, 1, false))
	want("IHFQ 1 still held via 2", 0, 1)
	sw.Receive(1, frame(1, 3, 1, false)) // a repeated resume changes nothing
	want("repeat", 0, 1)
	sw.Receive(1, frame(2, 3, 2, false))
	sw.Receive(1, frame(2, 0, 1, false))
	want("all resumed")
	// A relayed frame without its via cannot be placed behind a three-port node: ignored.
	sw.Receive(1, &pkt.Packet{Kind: pkt.PortFC, Size: pkt.MinFrame, Src: -1, Dst: -1, FCQueue: 3, FCPort: 1, FCPause: true})
	want("no via")
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
