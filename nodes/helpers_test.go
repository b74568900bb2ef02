package nodes

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
)

type receiver interface {
	Receive(port int, p *pkt.Packet)
}

// wireEvent is one frame seen leaving an egress port (after serialization).
type wireEvent struct {
	at clock.Time
	p  pkt.Packet
}

// tlink is a test cable direction: propagation delay, an optional filter that may drop (return false)
// or mark frames, and a tap of everything offered to it.
type tlink struct {
	clk    *clock.Virtual
	delay  clock.Time
	to     receiver
	port   int
	filter func(p *pkt.Packet) bool
	tap    []wireEvent
	noTap  bool // benchmarks: measure the engine, not the test's copy of every frame
}

func (l *tlink) Send(p *pkt.Packet) {
	if !l.noTap {
		l.tap = append(l.tap, wireEvent{l.clk.Now(), *p})
	}
	if l.filter != nil && !l.filter(p) {
		return
	}
	l.clk.AfterFunc(l.delay, func() { l.to.Receive(l.port, p) })
}

func (l *tlink) data() []wireEvent {
	var out []wireEvent
	for _, e := range l.tap {
		if e.p.Kind == pkt.Data {
			out = append(out, e)
		}
	}
	return out
}

func (l *tlink) count(k pkt.Kind) int {
	c := 0
	for _, e := range l.tap {
		if e.p.Kind == k {
			c++
		}
	}
	return c
}

// fwd is a minimal switch for tests: source route or FIB, one data and one strict control queue per port.
type fwd struct {
	ports []*egress.Port
	fib   map[int32]int
}

func (s *fwd) Receive(port int, p *pkt.Packet) {
	out := p.NextPort()
	if out >= 0 {
		p.Hop++
	} else {
		out = s.fib[p.Dst]
	}
	q := 0
	if p.Kind.Control() {
		q = 1
	}
	s.ports[out].Enqueue(q, p)
}

type pair struct {
	clk      *clock.Virtual
	a, b     *NIC
	ab, ba   *tlink // A's egress link toward B, B's toward A
	log      *records.Log
	sw       *fwd
	swLinks  []*tlink
	rate     float64
	delay    clock.Time
	swRate   float64 // rate of the switch's port toward B
	hostRate float64
}

func baseCfg(host int32, rate float64, delay clock.Time) Config {
	return Config{Device: host, Host: host, Ports: []PortConfig{{RateBps: rate, Delay: delay}}}
}

// newPair wires A (host 0) and B (host 1) back to back.
func newPair(t testing.TB, ca, cb Config, delay clock.Time) *pair {
	t.Helper()
	clk := clock.NewVirtual()
	log := &records.Log{}
	pr := &pair{clk: clk, log: log, delay: delay, rate: ca.Ports[0].RateBps}
	pr.ab = &tlink{clk: clk, delay: delay, port: 0}
	pr.ba = &tlink{clk: clk, delay: delay, port: 0}
	var err error
	pr.a, err = New(ca, clk, []egress.Link{pr.ab}, log)
	if err != nil {
		t.Fatal(err)
	}
	pr.b, err = New(cb, clk, []egress.Link{pr.ba}, log)
	if err != nil {
		t.Fatal(err)
	}
	pr.ab.to, pr.ba.to = pr.b, pr.a
	return pr
}

// newSwitched wires A - S - B: A and B are single-port NICs; the switch's port 0 faces A, port 1 faces B;
// the switch->B link runs at swRate.
func newSwitched(t testing.TB, ca, cb Config, delay clock.Time, swRate float64) *pair {
	t.Helper()
	clk := clock.NewVirtual()
	log := &records.Log{}
	pr := &pair{clk: clk, log: log, delay: delay, rate: ca.Ports[0].RateBps, swRate: swRate}
	sw := &fwd{fib: map[int32]int{0: 0, 1: 1}}
	pr.sw = sw
	pr.ab = &tlink{clk: clk, delay: delay, to: sw, port: 0}
	pr.ba = &tlink{clk: clk, delay: delay, to: sw, port: 1}
	toA := &tlink{clk: clk, delay: delay, port: 0}
	toB := &tlink{clk: clk, delay: delay, port: 0}
	pr.swLinks = []*tlink{toA, toB}
	rates := []float64{ca.Ports[0].RateBps, swRate}
	for i, l := range []*tlink{toA, toB} {
		p, err := egress.New(egress.Config{RateBps: rates[i], Queues: 2, Strict: []int{1}}, clk, l, egress.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		sw.ports = append(sw.ports, p)
	}
	var err error
	pr.a, err = New(ca, clk, []egress.Link{pr.ab}, log)
	if err != nil {
		t.Fatal(err)
	}
	pr.b, err = New(cb, clk, []egress.Link{pr.ba}, log)
	if err != nil {
		t.Fatal(err)
	}
	toA.to, toB.to = pr.a, pr.b
	return pr
}

func (pr *pair) run(t testing.TB, limit clock.Time) {
	t.Helper()
	pr.clk.RunUntil(limit)
}

func (pr *pair) flow(t testing.TB, id uint32) records.Flow {
	t.Helper()
	for _, f := range pr.log.Flows {
		if f.ID == id {
			return f
		}
	}
	t.Fatalf("flow %d has no record", id)
	return records.Flow{}
}

func within(got, want clock.Time, frac float64) bool {
	d := float64(got - want)
	if d < 0 {
		d = -d
	}
	return d <= frac*float64(want)
}
