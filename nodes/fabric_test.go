package nodes

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/fib"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
)

func pfcFrame(prio int, quanta uint16) *pkt.Packet {
	p := &pkt.Packet{Kind: pkt.PFC, Size: pkt.MinFrame, Src: -1, Dst: -1, PauseMask: 1 << uint(prio)}
	p.PauseQuanta[prio] = quanta
	return p
}

// TestPFCPausesDataNotControl: A sends to B and receives from B. A PFC pause of the data priority stops
// A's data for exactly the quanta while A's ACKs keep flowing; a zero-quanta frame resumes early.
func TestPFCPausesDataNotControl(t *testing.T) {
	pr := newPair(t, baseCfg(0, g100, us), baseCfg(1, g100, us), us)
	pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 5_000_000})
	pr.b.StartFlow(Flow{ID: 2, Dst: 0, Size: 5_000_000})
	pauseAt := 20 * us
	quanta := uint16(10000)
	pauseFor := clock.TxTime(int(quanta)*512/8, g100) // 51.2 us at 100G
	pr.clk.AfterFunc(pauseAt, func() { pr.a.Receive(0, pfcFrame(DefaultDataPrio, quanta)) })
	// A pause of another priority changes nothing.
	pr.clk.AfterFunc(pauseAt, func() { pr.a.Receive(0, pfcFrame(5, 65535)) })
	// Second episode: a long pause lifted early by quanta 0.
	pr.clk.AfterFunc(200*us, func() { pr.a.Receive(0, pfcFrame(DefaultDataPrio, 65535)) })
	pr.clk.AfterFunc(230*us, func() { pr.a.Receive(0, pfcFrame(DefaultDataPrio, 0)) })
	pr.run(t, clock.Second)

	oneFrame := clock.TxTime(pkt.DataSize(1000, 0), g100)
	check := func(from, to clock.Time) {
		t.Helper()
		var firstAfter clock.Time = -1
		acks := 0
		for _, e := range pr.ab.tap {
			switch {
			case e.p.Kind == pkt.Data && e.at > from+oneFrame && e.at < to:
				t.Fatalf("data frame left at %v during the pause [%v, %v)", e.at, from, to)
			case e.p.Kind == pkt.Data && e.at >= to && firstAfter < 0:
				firstAfter = e.at
			case e.p.Kind == pkt.Ack && e.at > from && e.at < to:
				acks++
			}
		}
		if acks == 0 {
			t.Fatalf("no ACKs left during the pause [%v, %v)", from, to)
		}
		if firstAfter < 0 || firstAfter > to+oneFrame+clock.Nanosecond {
			t.Fatalf("data resumed at %v, want %v", firstAfter, to+oneFrame)
		}
		t.Logf("paused [%v, %v): %d ACKs sent meanwhile, data resumed at %v", from, to, acks, firstAfter)
	}
	check(pauseAt, pauseAt+pauseFor)
	check(200*us, 230*us)
	for _, id := range []uint32{1, 2} {
		if f := pr.flow(t, id); !f.Completed || f.Retransmits != 0 {
			t.Fatalf("flow %d: %+v", id, f)
		}
	}
	var on, off int
	for _, p := range pr.log.Pauses {
		if p.Device != 0 || p.Kind != records.Host || p.Sent {
			t.Fatalf("pause record %+v", p)
		}
		if p.On {
			on++
		} else {
			off++
		}
	}
	if on != 3 || off != 1 || pr.a.Stats().RxPFC != 4 {
		t.Fatalf("pause records on %d off %d rx %d, want 3 1 4", on, off, pr.a.Stats().RxPFC)
	}
}

// chain builds A(h0) -p0- R(h1) -p1- B(h2), every link 100G / 1 us.
type chain struct {
	clk     *clock.Virtual
	log     *records.Log
	a, r, b *NIC
	rb      *tlink
}

func newChain(t testing.TB) *chain {
	t.Helper()
	clk := clock.NewVirtual()
	log := &records.Log{}
	c := &chain{clk: clk, log: log}
	ab := &tlink{clk: clk, delay: us, port: 0} // A -> R port 0
	ra := &tlink{clk: clk, delay: us, port: 0} // R port 0 -> A
	rb := &tlink{clk: clk, delay: us, port: 0} // R port 1 -> B
	br := &tlink{clk: clk, delay: us, port: 1} // B -> R port 1
	c.rb = rb
	rc := Config{Device: 1, Host: 1, Relay: true, FIB: fib.Of([]uint8{0}, nil, []uint8{1}),
		Ports: []PortConfig{{RateBps: g100, Delay: us}, {RateBps: g100, Delay: us}}}
	var err error
	if c.a, err = New(baseCfg(0, g100, us), clk, []egress.Link{ab}, log); err != nil {
		t.Fatal(err)
	}
	if c.r, err = New(rc, clk, []egress.Link{ra, rb}, log); err != nil {
		t.Fatal(err)
	}
	if c.b, err = New(baseCfg(2, g100, us), clk, []egress.Link{br}, log); err != nil {
		t.Fatal(err)
	}
	ab.to, ra.to, rb.to, br.to = c.r, c.a, c.b, c.r
	return c
}

func (c *chain) flow(t *testing.T, id uint32) records.Flow {
	t.Helper()
	for _, f := range c.log.Flows {
		if f.ID == id {
			return f
		}
	}
	t.Fatalf("flow %d has no record", id)
	return records.Flow{}
}

func TestRelayBySourceRouteAndFIB(t *testing.T) {
	c := newChain(t)
	size := int64(100_000)
	ideal := IdealFCT(size, 1000, 2, []float64{g100, g100}, []clock.Time{us, us})
	c.a.StartFlow(Flow{ID: 1, Dst: 2, Size: size, Route: []uint8{0, 1}, Ideal: ideal})
	c.clk.RunUntil(clock.Second)
	f := c.flow(t, 1)
	if !f.Completed || !within(f.FCT(), ideal, 0.005) {
		t.Fatalf("routed relay flow: FCT %v ideal %v (%+v)", f.FCT(), ideal, f)
	}
	if got := c.rb.data()[0].p.Hop; got != 2 {
		t.Fatalf("relayed data left R with Hop %d, want 2", got)
	}
	// Without a route the relay uses its FIB (and the ACKs come back by FIB too).
	c.a.StartFlow(Flow{ID: 2, Dst: 2, Size: size})
	c.clk.RunUntil(2 * clock.Second)
	if f := c.flow(t, 2); !f.Completed {
		t.Fatalf("FIB relay flow: %+v", f)
	}
	st := c.r.Stats()
	if st.Relayed != 2*100+2*100 || st.RxData != 0 { // data and one ACK per packet, both flows
		t.Fatalf("relay stats %+v", st)
	}
}

// TestRelayAndLocalShareThePort: R relays A's flow to B while sending its own flow to B on the same
// port. DRR between the relay queue and the local queue gives each about half; neither starves.
func TestRelayAndLocalShareThePort(t *testing.T) {
	c := newChain(t)
	size := int64(1_000_000)
	c.a.StartFlow(Flow{ID: 1, Dst: 2, Size: size, Route: []uint8{0, 1}})
	c.r.StartFlow(Flow{ID: 2, Dst: 2, Size: size, Route: []uint8{1}})
	// Halfway through, both must have delivered a fair share.
	c.clk.RunUntil(90 * us)
	var relayed, local int
	for _, e := range c.rb.data() {
		if e.p.Flow == 1 {
			relayed++
		} else {
			local++
		}
	}
	if relayed < 400 || local < 400 {
		t.Fatalf("port share after 90 us: relayed %d local %d packets", relayed, local)
	}
	c.clk.RunUntil(clock.Second)
	f1, f2 := c.flow(t, 1), c.flow(t, 2)
	alone := IdealFCT(size, 1000, 1, []float64{g100}, []clock.Time{us})
	t.Logf("shared port: relayed FCT %v, local FCT %v (alone %v); at 90us %d relayed / %d local", f1.FCT(), f2.FCT(), alone, relayed, local)
	for _, f := range []records.Flow{f1, f2} {
		if !f.Completed || f.FCT() < 19*alone/10 || f.FCT() > 22*alone/10 {
			t.Fatalf("flow %d FCT %v, want about twice %v", f.ID, f.FCT(), alone)
		}
	}
}

func TestRelayOffDropsForeignFrames(t *testing.T) {
	pr := newPair(t, baseCfg(0, g100, us), baseCfg(1, g100, us), us)
	pr.b.Receive(0, &pkt.Packet{Kind: pkt.Data, Src: 0, Dst: 5, Flow: 3, Size: 100})
	if pr.b.Stats().NoRoute != 1 || len(pr.log.Drops) != 1 || pr.log.Drops[0].Reason != "not-for-host" {
		t.Fatalf("drops %+v", pr.log.Drops)
	}
}

// lossyRun is a busy, lossy, ECN-marking, two-way run: the determinism fixture.
func lossyRun(t testing.TB, transport string) (*records.Log, []wireEvent) {
	ca, cb := baseCfg(0, g100, us), baseCfg(1, g100, us)
	for _, c := range []*Config{&ca, &cb} {
		c.Transport, c.CC, c.Seed = transport, CCDCQCN, 42
		c.RTO = 200 * us
		c.AckEvery = 2
	}
	pr := newPair(t, ca, cb, us)
	rng := rand.New(rand.NewPCG(1, 2))
	lossy := func(p *pkt.Packet) bool {
		if p.Kind == pkt.Data && rng.IntN(100) < 5 {
			p.ECN = pkt.CE
		}
		return rng.IntN(100) >= 2 // 2% of everything, ACKs included
	}
	pr.ab.filter, pr.ba.filter = lossy, lossy
	for i := uint32(1); i <= 6; i++ {
		src, dst := pr.a, int32(1)
		if i%2 == 0 {
			src, dst = pr.b, 0
		}
		id := i
		pr.clk.AfterFunc(clock.Time(i)*3*us, func() { src.StartFlow(Flow{ID: id, Dst: dst, Size: int64(id) * 70_000}) })
	}
	pr.run(t, 100*clock.Millisecond)
	pr.a.Flush()
	pr.b.Flush()
	return pr.log, pr.ab.tap
}

func TestDeterministicAndLossyRunsComplete(t *testing.T) {
	for _, tr := range []string{GBN, IRN} {
		l1, w1 := lossyRun(t, tr)
		l2, w2 := lossyRun(t, tr)
		if !reflect.DeepEqual(l1, l2) || !reflect.DeepEqual(w1, w2) {
			t.Fatalf("%s: two identical runs differ", tr)
		}
		var rtx int64
		for _, f := range l1.Flows {
			if !f.Completed {
				t.Fatalf("%s: flow %d incomplete under 2%% loss: %+v", tr, f.ID, f)
			}
			rtx += f.Retransmits
		}
		if len(l1.Flows) != 6 || rtx == 0 {
			t.Fatalf("%s: %d flows, %d retransmits", tr, len(l1.Flows), rtx)
		}
		t.Logf("%s: 6 flows complete under 2%% loss, %d retransmits, identical twice", tr, rtx)
	}
}

func BenchmarkBackToBack(b *testing.B) {
	const pkts = 10_000
	b.ReportAllocs()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		pr := newPair(b, baseCfg(0, g100, us), baseCfg(1, g100, us), us)
		pr.ab.noTap, pr.ba.noTap = true, true
		pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: pkts * 1000})
		pr.clk.RunUntil(clock.Second)
		if pr.a.Active() != 0 {
			b.Fatal("flow did not complete")
		}
	}
	b.ReportMetric(float64(pkts*b.N)/time.Since(start).Seconds(), "pkts/s")
}

// TestUnfinishedFlowRecordsDelivered: a flow cut off by the run's end is recorded with the bytes the
// receiver cumulatively acknowledged (whole MTUs, less than its size); a completed one with its size.
func TestUnfinishedFlowRecordsDelivered(t *testing.T) {
	pr := newPair(t, baseCfg(0, g100, us), baseCfg(1, g100, us), us)
	pr.ab.noTap, pr.ba.noTap = true, true
	pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 10_000})
	pr.a.StartFlow(Flow{ID: 2, Dst: 1, Size: 10_000_000})
	pr.clk.RunUntil(100 * us) // 1.25 MB at 100 Gb/s: the 10 MB flow is far from done
	pr.a.Flush()
	var small, big *records.Flow
	for i, f := range pr.a.log.Flows {
		switch f.ID {
		case 1:
			small = &pr.a.log.Flows[i]
		case 2:
			big = &pr.a.log.Flows[i]
		}
	}
	if small == nil || !small.Completed || small.Delivered != small.Size {
		t.Fatalf("completed flow record %+v", small)
	}
	mtu := int64(pr.a.cfg.MTU)
	if big == nil || big.Completed || big.Delivered <= 0 || big.Delivered >= big.Size || big.Delivered%mtu != 0 {
		t.Fatalf("unfinished flow record %+v (MTU %d)", big, mtu)
	}
	// At most what the link could carry in 100 us.
	if max := int64(100e-6 * 100e9 / 8); big.Delivered > max {
		t.Fatalf("delivered %d > %d the link carries in 100 us", big.Delivered, max)
	}
	t.Logf("unfinished 10 MB flow delivered %d B in 100 us", big.Delivered)
}

// A lossless NIC's drop is a violation line, as a switch's is (issue 12): before, it only counted in
// drops.lossless.
func TestLosslessNICDropIsAViolation(t *testing.T) {
	cb := baseCfg(1, g100, us)
	cb.Transport = Lossless
	pr := newPair(t, baseCfg(0, g100, us), cb, us)
	pr.b.Receive(0, &pkt.Packet{Kind: pkt.Data, Src: 0, Dst: 5, Flow: 3, PSN: 9, Size: 100})
	if len(pr.log.Drops) != 1 || !pr.log.Drops[0].Lossless || pr.log.Drops[0].Reason != "not-for-host" {
		t.Fatalf("drops %+v", pr.log.Drops)
	}
	if len(pr.log.Violations) != 1 || !strings.Contains(pr.log.Violations[0], "h1: lossless drop (not-for-host) of flow 3 psn 9") {
		t.Fatalf("violations %q", pr.log.Violations)
	}
}
