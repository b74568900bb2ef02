package nodes

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

const (
	g100 = 100e9
	us   = clock.Microsecond
)

func TestSingleFlowMatchesIdealBackToBack(t *testing.T) {
	for _, size := range []int64{1, 1000, 4500, 100_000, 1_000_000} {
		pr := newPair(t, baseCfg(0, g100, us), baseCfg(1, g100, us), us)
		ideal := IdealFCT(size, 1000, 0, []float64{g100}, []clock.Time{us})
		if err := pr.a.StartFlow(Flow{ID: 7, Dst: 1, Size: size, Ideal: ideal}); err != nil {
			t.Fatal(err)
		}
		pr.run(t, clock.Second)
		f := pr.flow(t, 7)
		if !f.Completed || f.Retransmits != 0 || f.Ideal != ideal {
			t.Fatalf("size %d: record %+v", size, f)
		}
		if !within(f.FCT(), ideal, 0.005) {
			t.Fatalf("size %d: FCT %v, ideal %v", size, f.FCT(), ideal)
		}
		t.Logf("size %7d: FCT %v ideal %v (%.4f%%)", size, f.FCT(), ideal, 100*float64(f.FCT()-ideal)/float64(ideal))
		if pr.a.Active() != 0 {
			t.Fatalf("active %d after completion", pr.a.Active())
		}
		if size == 1_000_000 {
			// Wire throughput while the flow sends: data bytes over first-to-last departure.
			d := pr.ab.data()
			bytes := 0
			for _, e := range d {
				bytes += int(e.p.Size)
			}
			span := d[len(d)-1].at // the first frame started serializing at 0
			tput := float64(bytes) * 8 / span.Seconds()
			t.Logf("throughput %.3f Gb/s over %d packets", tput/1e9, len(d))
			if tput < 0.99*g100 {
				t.Fatalf("throughput %.3f Gb/s < 99%% of line", tput/1e9)
			}
		}
	}
}

func TestSingleFlowMatchesIdealThroughSwitch(t *testing.T) {
	for _, sw := range []float64{g100, 40e9} {
		pr := newSwitched(t, baseCfg(0, g100, us), baseCfg(1, sw, us), us, sw)
		size := int64(2_000_000)
		ideal := IdealFCT(size, 1000, 2, []float64{g100, sw}, []clock.Time{us, us})
		if err := pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: size, Route: []uint8{0, 1}, Ideal: ideal}); err != nil {
			t.Fatal(err)
		}
		pr.run(t, clock.Second)
		f := pr.flow(t, 1)
		if !f.Completed || !within(f.FCT(), ideal, 0.005) {
			t.Fatalf("bottleneck %g: FCT %v ideal %v (%+v)", sw, f.FCT(), ideal, f)
		}
		t.Logf("bottleneck %.0fG: FCT %v ideal %v (%.4f%%)", sw/1e9, f.FCT(), ideal, 100*float64(f.FCT()-ideal)/float64(ideal))
		// The source route reached B intact and the ACKs came back by FIB.
		if got := pr.swLinks[1].data()[0].p.Hop; got != 2 {
			t.Fatalf("data arrived at B with Hop %d, want 2", got)
		}
	}
}

func TestAckCoalescing(t *testing.T) {
	acks := map[int]int{}
	for _, every := range []int{1, 4, 16} {
		cb := baseCfg(1, g100, us)
		cb.AckEvery = every
		pr := newPair(t, baseCfg(0, g100, us), cb, us)
		pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 100_000}) // 100 packets
		pr.run(t, clock.Second)
		if f := pr.flow(t, 1); !f.Completed {
			t.Fatalf("AckEvery %d: flow did not complete", every)
		}
		acks[every] = pr.ba.count(pkt.Ack)
	}
	// 100 packets: every packet; every 4th (25, the last included); every 16th (6) plus the last.
	if acks[1] != 100 || acks[4] != 25 || acks[16] != 7 {
		t.Fatalf("ACK counts %v, want 1:100 4:25 16:7", acks)
	}
}

// dropOnce drops the first transmission of each listed PSN of data frames.
func dropOnce(psns ...uint32) func(p *pkt.Packet) bool {
	left := map[uint32]bool{}
	for _, s := range psns {
		left[s] = true
	}
	return func(p *pkt.Packet) bool {
		if p.Kind == pkt.Data && left[p.PSN] {
			delete(left, p.PSN)
			return false
		}
		return true
	}
}

func TestGoBackNRecoversAndResendsEverythingAfterTheHole(t *testing.T) {
	ca, cb := baseCfg(0, g100, us), baseCfg(1, g100, us)
	ca.Transport, cb.Transport = GBN, GBN
	pr := newPair(t, ca, cb, us)
	const hole = 30
	pr.ab.filter = dropOnce(hole)
	pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 100_000})
	pr.run(t, clock.Second)
	f := pr.flow(t, 1)
	if !f.Completed {
		t.Fatalf("flow did not complete: %+v", f)
	}
	seq := pr.ab.data()
	if int64(len(seq)-100) != f.Retransmits || f.Retransmits == 0 {
		t.Fatalf("%d data frames for 100 packets but %d retransmits counted", len(seq), f.Retransmits)
	}
	// Find the go-back: the second transmission of the hole; from there PSNs must run contiguously to
	// the end, i.e. everything after the hole was resent.
	second := -1
	for i, e := range seq {
		if e.p.PSN == hole && i > hole {
			second = i
			break
		}
	}
	if second < 0 {
		t.Fatal("hole never resent")
	}
	for i := second; i < len(seq); i++ {
		if want := uint32(hole + i - second); seq[i].p.PSN != want {
			t.Fatalf("after go-back frame %d has PSN %d, want %d", i, seq[i].p.PSN, want)
		}
	}
	highBefore := uint32(0)
	for _, e := range seq[:second] {
		if e.p.PSN > highBefore {
			highBefore = e.p.PSN
		}
	}
	if f.Retransmits != int64(highBefore-hole+1) {
		t.Fatalf("retransmits %d, want %d (PSN %d..%d resent)", f.Retransmits, highBefore-hole+1, hole, highBefore)
	}
	st := pr.b.Stats()
	if st.TxNack != 1 || pr.a.Stats().Timeouts != 0 {
		t.Fatalf("NACKs %d timeouts %d, want 1 and 0 (rate-limited NACK per expected PSN)", st.TxNack, pr.a.Stats().Timeouts)
	}
	t.Logf("GBN: %d retransmits for 1 loss, FCT %v", f.Retransmits, f.FCT())
}

func TestGoBackNTailLossNeedsTheRTO(t *testing.T) {
	ca, cb := baseCfg(0, g100, us), baseCfg(1, g100, us)
	ca.Transport, cb.Transport = GBN, GBN
	ca.RTO = 1 * clock.Millisecond
	pr := newPair(t, ca, cb, us)
	pr.ab.filter = dropOnce(9)
	pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 10_000})
	pr.run(t, clock.Second)
	f := pr.flow(t, 1)
	if !f.Completed || f.Retransmits != 1 || pr.a.Stats().Timeouts != 1 {
		t.Fatalf("record %+v stats %+v", f, pr.a.Stats())
	}
	if f.FCT() < clock.Millisecond || f.FCT() > clock.Millisecond+10*us {
		t.Fatalf("FCT %v, want just over the 1 ms RTO", f.FCT())
	}
}

func TestIRNResendsOnlyTheHoles(t *testing.T) {
	ca, cb := baseCfg(0, g100, us), baseCfg(1, g100, us)
	ca.Transport, cb.Transport = IRN, IRN
	pr := newPair(t, ca, cb, us)
	pr.ab.filter = dropOnce(10, 11, 40)
	pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 100_000})
	pr.run(t, clock.Second)
	f := pr.flow(t, 1)
	if !f.Completed || f.Retransmits != 3 || pr.a.Stats().Timeouts != 0 {
		t.Fatalf("retransmits %d timeouts %d (want 3, 0): %+v", f.Retransmits, pr.a.Stats().Timeouts, f)
	}
	seen := map[uint32]int{}
	for _, e := range pr.ab.data() {
		seen[e.p.PSN]++
	}
	for psn, c := range seen {
		want := 1
		if psn == 10 || psn == 11 || psn == 40 {
			want = 2
		}
		if c != want {
			t.Fatalf("PSN %d sent %d times, want %d", psn, c, want)
		}
	}
	// No timeout: the FCT is the ideal plus about one RTT for the repair.
	ideal := IdealFCT(100_000, 1000, 0, []float64{g100}, []clock.Time{us})
	if f.FCT() > ideal+5*us {
		t.Fatalf("FCT %v vs ideal %v: recovery too slow", f.FCT(), ideal)
	}
	if nk := pr.ba.count(pkt.Nack); nk == 0 {
		t.Fatal("no NACKs")
	}
}

func TestIRNTimeoutChoosesLowOrHighByInFlight(t *testing.T) {
	cfg := baseCfg(0, g100, us)
	cfg.Transport = IRN
	// Few packets outstanding: a lost tail packet is recovered after RTO_low (100 us).
	{
		ca, cb := cfg, baseCfg(1, g100, us)
		cb.Transport = IRN
		pr := newPair(t, ca, cb, us)
		pr.ab.filter = dropOnce(1)
		pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 2000})
		pr.run(t, clock.Second)
		f := pr.flow(t, 1)
		if !f.Completed || pr.a.Stats().Timeouts != 1 || f.Retransmits != 1 {
			t.Fatalf("low: %+v %+v", f, pr.a.Stats())
		}
		if f.FCT() < DefaultRTOLow || f.FCT() > DefaultRTOLow+5*us {
			t.Fatalf("low: FCT %v, want just over RTO_low", f.FCT())
		}
		t.Logf("tail loss with 1 in flight: FCT %v (RTO_low %v)", f.FCT(), DefaultRTOLow)
	}
	// Many outstanding and all lost: nothing comes back, so the timeout is RTO_high (320 us), after
	// which every unacknowledged packet is resent once.
	{
		ca, cb := cfg, baseCfg(1, g100, us)
		cb.Transport = IRN
		pr := newPair(t, ca, cb, us)
		var all []uint32
		for i := uint32(0); i < 20; i++ {
			all = append(all, i)
		}
		pr.ab.filter = dropOnce(all...)
		pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 20_000})
		pr.run(t, clock.Second)
		f := pr.flow(t, 1)
		if !f.Completed || pr.a.Stats().Timeouts != 1 || f.Retransmits != 20 {
			t.Fatalf("high: %+v %+v", f, pr.a.Stats())
		}
		if f.FCT() < DefaultRTOHigh || f.FCT() > DefaultRTOHigh+10*us {
			t.Fatalf("high: FCT %v, want just over RTO_high", f.FCT())
		}
		t.Logf("20 lost in flight: FCT %v (RTO_high %v)", f.FCT(), DefaultRTOHigh)
	}
}

func TestBDPCapBoundsInFlight(t *testing.T) {
	delay := 10 * us // BDP = 100G x ~20us RTT = 250 KB; a 20 KB cap throttles to ~8 Gb/s
	ca, cb := baseCfg(0, g100, delay), baseCfg(1, g100, delay)
	ca.Transport, cb.Transport = IRN, IRN
	ca.BDPCapBytes = 20_000
	pr := newPair(t, ca, cb, delay)
	pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 1_000_000})
	maxIn := uint32(0)
	for pr.a.Active() > 0 && pr.clk.Now() < clock.Second {
		pr.clk.RunUntil(pr.clk.Now() + 100*clock.Nanosecond)
		if s, ok := pr.a.FlowState(1); ok && s.SndHigh-s.SndUna > maxIn {
			maxIn = s.SndHigh - s.SndUna
		}
	}
	f := pr.flow(t, 1)
	if !f.Completed || maxIn != 20 {
		t.Fatalf("max in flight %d packets, want the 20-packet cap (%+v)", maxIn, f)
	}
	// About one 20 KB window per RTT (20 us + serialization).
	rtt := 2*delay + clock.TxTime(pkt.DataSize(1000, 0), g100) + clock.TxTime(pkt.AckSize, g100)
	expect := clock.Time(50) * rtt
	if !within(f.FCT(), expect, 0.05) {
		t.Fatalf("capped FCT %v, want about %v", f.FCT(), expect)
	}
	t.Logf("cap 20 packets: FCT %v (50 windows x RTT %v = %v)", f.FCT(), rtt, expect)
}

func TestLosslessGapIsAViolation(t *testing.T) {
	pr := newPair(t, baseCfg(0, g100, us), baseCfg(1, g100, us), us)
	pr.ab.filter = dropOnce(5)
	pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 20_000})
	pr.run(t, clock.Second)
	f := pr.flow(t, 1)
	if !f.Completed || f.Retransmits == 0 || pr.b.Stats().LosslessGaps == 0 || len(pr.log.Violations) != 1 {
		t.Fatalf("lossless loss not surfaced: %+v %+v %v", f, pr.b.Stats(), pr.log.Violations)
	}
}

func TestFlushRecordsIncompleteFlowsAndCounters(t *testing.T) {
	pr := newPair(t, baseCfg(0, g100, us), baseCfg(1, g100, us), us)
	pr.a.StartFlow(Flow{ID: 2, Dst: 1, Size: 1_000_000, Class: "incast"})
	pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 1_000_000, Class: "incast"})
	pr.run(t, 20*us)
	if pr.a.Active() != 2 {
		t.Fatalf("active %d", pr.a.Active())
	}
	pr.a.Flush()
	pr.a.Flush()
	if len(pr.log.Flows) != 2 || pr.log.Flows[0].ID != 2 || pr.log.Flows[0].Completed || pr.log.Flows[1].Class != "incast" {
		t.Fatalf("flows %+v", pr.log.Flows)
	}
	if len(pr.log.Counters) != 1 || pr.log.Counters[0].TxFrames == 0 || len(pr.log.Counters[0].MaxQueue) != 1 {
		t.Fatalf("counters %+v", pr.log.Counters)
	}
	if err := pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 1}); err == nil {
		t.Fatal("duplicate flow id accepted")
	}
	if err := pr.a.StartFlow(Flow{ID: 9, Dst: 0, Size: 1}); err == nil {
		t.Fatal("flow to self accepted")
	}
}
