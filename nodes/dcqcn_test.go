package nodes

import (
	"math"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
)

type discard struct{}

func (discard) Receive(int, *pkt.Packet) {}

// TestDCQCNReactionPoint drives one QP with CNPs at chosen instants and checks rate, target and alpha
// against HPCC's Mellanox-mode formulas computed here step by step (eager alpha clock).
func TestDCQCNReactionPoint(t *testing.T) {
	clk := clock.NewVirtual()
	cfg := baseCfg(0, g100, us)
	cfg.CC = CCDCQCN
	cfg.RTO = clock.Second
	tap := &tlink{clk: clk, delay: us, to: discard{}}
	n, err := New(cfg, clk, []egress.Link{tap}, &records.Log{})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.StartFlow(Flow{ID: 1, Dst: 1, Size: 1 << 40}); err != nil {
		t.Fatal(err)
	}
	cnp := func(at clock.Time) {
		clk.AfterFunc(at-clk.Now(), func() { n.Receive(0, &pkt.Packet{Kind: pkt.CNP, Src: 1, Dst: 0, Flow: 1}) })
	}
	const g = 1.0 / 256
	L := g100
	ai, hai := 5e6*L/25e9, 50e6*L/25e9
	check := func(at clock.Time, rate, target, alpha float64, what string) {
		t.Helper()
		clk.RunUntil(at)
		s, ok := n.FlowState(1)
		if !ok {
			t.Fatal("flow gone")
		}
		if math.Abs(s.RateBps-rate) > 1 || math.Abs(s.TargetBps-target) > 1 || (alpha >= 0 && math.Abs(s.Alpha-alpha) > 1e-12) {
			t.Fatalf("%s at %v: rate %.6g target %.6g alpha %.9g, want %.6g %.6g %.9g", what, at, s.RateBps, s.TargetBps, s.Alpha, rate, target, alpha)
		}
		t.Logf("%-28s at %-9v rate %8.4f Gb/s target %8.4f Gb/s alpha %.6f", what, at, s.RateBps/1e9, s.TargetBps/1e9, s.Alpha)
	}
	t0 := 10 * us
	cnp(t0)
	// First CNP: alpha = 1, no immediate cut (RateOnFirstCNP = 1); the cut waits for the decrease check.
	check(t0+us/2, L, L, 1, "first CNP")
	// Decrease check at t0+4us+1ns: four alpha ticks without a CNP have passed.
	a1 := math.Pow(1-g, 4)
	r1 := L * (1 - a1/2)
	check(t0+4*us+clock.Nanosecond, r1, L, a1, "first decrease")
	// The wire rate follows: measure data departures over the next 200 us.
	from := len(tap.tap)
	clk.RunUntil(t0 + 250*us)
	var bytes int
	for _, e := range tap.tap[from+1:] {
		bytes += int(e.p.Size)
	}
	span := tap.tap[len(tap.tap)-1].at - tap.tap[from].at
	if wire := float64(bytes) * 8 / span.Seconds(); math.Abs(wire-r1)/r1 > 0.01 {
		t.Fatalf("paced wire rate %.4g, want %.4g", wire, r1)
	}
	// RP timer (300 us after the decrease), stage 0 < F=1: fast recovery toward the target.
	dec1 := t0 + 4*us + clock.Nanosecond
	r2 := (r1 + L) / 2
	check(dec1+300*us, r2, L, -1, "fast recovery")
	// Second CNP mid-interval; alpha ticks: 390 without CNP, the 391st with it, the 392nd without;
	// the decrease check at t0+1ns+392us clamps the target (stage 1) and cuts.
	cnp(t0 + 390*us + us/2)
	a2 := math.Pow(1-g, 390)
	a2 = (1-g)*a2 + g
	a2 *= 1 - g
	dec2 := t0 + clock.Nanosecond + 392*us
	T := r2
	r3 := r2 * (1 - a2/2)
	check(dec2, r3, T, a2, "second decrease (clamped)")
	r4 := (r3 + T) / 2
	check(dec2+300*us, r4, T, -1, "fast recovery")
	T += ai
	r5 := (r4 + T) / 2
	check(dec2+600*us, r5, T, -1, "additive increase")
	T += hai
	r6 := (r5 + T) / 2
	check(dec2+900*us, r6, T, -1, "hyper increase")
	T += hai
	check(dec2+1200*us, (r6+T)/2, T, -1, "hyper increase")
}

func TestDCQCNMinRate(t *testing.T) {
	clk := clock.NewVirtual()
	cfg := baseCfg(0, g100, us)
	cfg.CC = CCDCQCN
	cfg.RTO = clock.Second
	n, _ := New(cfg, clk, []egress.Link{&tlink{clk: clk, delay: us, to: discard{}}}, &records.Log{})
	n.StartFlow(Flow{ID: 1, Dst: 1, Size: 1 << 40})
	for i := 0; i < 2000; i++ { // a CNP every 2 us for 4 ms drives alpha to ~1 and the rate to the floor
		at := clock.Time(i) * 2 * us
		clk.AfterFunc(at, func() { n.Receive(0, &pkt.Packet{Kind: pkt.CNP, Src: 1, Dst: 0, Flow: 1}) })
	}
	clk.RunUntil(4 * clock.Millisecond)
	if s, _ := n.FlowState(1); s.RateBps != 1000e6 {
		t.Fatalf("rate %.4g, want the 1000 Mb/s floor", s.RateBps)
	}
}

// TestDCQCNNotificationPointPacing marks every data packet CE for 180 us: the receiver sends one CNP
// per 50 us, the sender slows down, then recovers once marking stops.
func TestDCQCNNotificationPointPacing(t *testing.T) {
	ca, cb := baseCfg(0, g100, us), baseCfg(1, g100, us)
	ca.CC, cb.CC = CCDCQCN, CCDCQCN
	pr := newPair(t, ca, cb, us)
	markUntil := 180 * us
	pr.ab.filter = func(p *pkt.Packet) bool {
		if p.Kind == pkt.Data && pr.clk.Now() < markUntil {
			p.ECN = pkt.CE
		}
		return true
	}
	pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 30_000_000})
	minRate := g100
	for pr.clk.Now() < 1500*us {
		pr.clk.RunUntil(pr.clk.Now() + us)
		if s, ok := pr.a.FlowState(1); ok && s.RateBps < minRate {
			minRate = s.RateBps
		}
	}
	var cnpAt []clock.Time
	for _, e := range pr.ba.tap {
		if e.p.Kind == pkt.CNP {
			cnpAt = append(cnpAt, e.at)
		}
	}
	if len(cnpAt) != 4 || pr.b.Stats().TxCNP != 4 {
		t.Fatalf("CNPs at %v, want 4 paced 50 us apart", cnpAt)
	}
	for i := 1; i < len(cnpAt); i++ {
		if d := cnpAt[i] - cnpAt[i-1]; d < 50*us || d > 51*us {
			t.Fatalf("CNP spacing %v", d)
		}
	}
	s, _ := pr.a.FlowState(1)
	t.Logf("CNPs at %v; min rate %.2f Gb/s; rate at 1.5 ms %.2f Gb/s", cnpAt, minRate/1e9, s.RateBps/1e9)
	if minRate > 0.7*g100 || s.RateBps <= minRate {
		t.Fatalf("rate did not drop and recover: min %.4g now %.4g", minRate, s.RateBps)
	}
	pr.run(t, clock.Second)
	if f := pr.flow(t, 1); !f.Completed {
		t.Fatal("flow did not complete")
	}
	if pr.b.Stats().ECNMarked == 0 {
		t.Fatal("no ECN marks counted")
	}
}

// TestDCQCNNotificationPointPerPacket is the ns-3 simulators' NP (HPCC, ConWeave rdma-hw.cc set the CNP
// flag on the ACK of every marked packet): every CE-marked data packet is answered by one CNP, and the
// sender ends up slower than under 50 us pacing of the same marks.
func TestDCQCNNotificationPointPerPacket(t *testing.T) {
	run := func(mode string) (cnps, marked uint64, minRate float64) {
		ca, cb := baseCfg(0, g100, us), baseCfg(1, g100, us)
		ca.CC, cb.CC = CCDCQCN, CCDCQCN
		cb.CNP = mode
		pr := newPair(t, ca, cb, us)
		pr.ab.filter = func(p *pkt.Packet) bool {
			if p.Kind == pkt.Data && pr.clk.Now() < 180*us {
				p.ECN = pkt.CE
			}
			return true
		}
		pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 30_000_000})
		minRate = g100
		for pr.clk.Now() < 400*us {
			pr.clk.RunUntil(pr.clk.Now() + us)
			if s, ok := pr.a.FlowState(1); ok && s.RateBps < minRate {
				minRate = s.RateBps
			}
		}
		return pr.b.Stats().TxCNP, pr.b.Stats().ECNMarked, minRate
	}
	cnps, marked, perPkt := run(CNPPerPacket)
	if cnps != marked || cnps < 100 {
		t.Fatalf("per-packet: %d CNPs for %d marked packets, want one each", cnps, marked)
	}
	pcnps, _, paced := run(CNPInterval)
	t.Logf("per-packet: %d CNPs, min rate %.2f Gb/s; paced: %d CNPs, min rate %.2f Gb/s", cnps, perPkt/1e9, pcnps, paced/1e9)
	if pcnps != 4 || perPkt >= paced {
		t.Fatalf("paced sent %d CNPs (want 4); per-packet min rate %.4g not below paced %.4g", pcnps, perPkt, paced)
	}
}
