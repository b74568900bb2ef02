package nodes

import (
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

// The BDP cap follows the path a flow is on: its base RTT when the lab gave one and it exceeds the
// fabric-wide cap (and again after a move), the fabric-wide cap when not.
func TestBDPCapFollowsPath(t *testing.T) {
	delay := 10 * us
	ca, cb := baseCfg(0, g100, delay), baseCfg(1, g100, delay)
	ca.Transport, cb.Transport = IRN, IRN
	ca.BDPCapBytes, ca.BDPCapPath = 10_000, true
	pr := newPair(t, ca, cb, delay)
	// 100 Gb/s x 1.6 us = 20 KB = 20 packets; 100 Gb/s x 3.2 us = 40 packets.
	short, long := PathBase{OneWay: 800 * clock.Nanosecond, RTT: 1600 * clock.Nanosecond}, PathBase{RTT: 3200 * clock.Nanosecond}
	if err := pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 10_000_000, Base: short}); err != nil {
		t.Fatal(err)
	}
	if err := pr.a.StartFlow(Flow{ID: 2, Dst: 1, Size: 10_000_000}); err != nil {
		t.Fatal(err)
	}
	q1, q2 := pr.a.qps[1], pr.a.qps[2]
	if q1.capPkts != 20 || q2.capPkts != 10 {
		t.Fatalf("caps %d and %d packets, want 20 (path RTT) and 10 (fabric-wide)", q1.capPkts, q2.capPkts)
	}
	q2.usePath(q2.route, PathBase{RTT: 800 * clock.Nanosecond})
	if q2.capPkts != 10 {
		t.Fatalf("a path shorter than the fabric-wide cap's lowered it to %d packets", q2.capPkts)
	}
	q1.usePath(q1.route, long)
	if q1.capPkts != 40 {
		t.Fatalf("after moving to a path of twice the RTT the cap is %d packets, want 40", q1.capPkts)
	}
	pr.run(t, 200*us)
	if s, _ := pr.a.FlowState(1); s.MaxInFlight != 40 {
		t.Fatalf("flow on the long path had at most %d packets in flight, want its 40-packet cap", s.MaxInFlight)
	}
}

// A packet that arrives after one sent later is counted as reordered and logged as such: under the
// lossless transport it is not "a packet was lost", and no violation is raised. A real loss still is.
func TestReorderIsNotLoss(t *testing.T) {
	pr := newPair(t, baseCfg(0, g100, us), baseCfg(1, g100, us), us)
	held := false
	pr.ab.filter = func(p *pkt.Packet) bool {
		if p.Kind == pkt.Data && p.PSN == 5 && !held {
			held = true
			q := *p
			pr.clk.AfterFunc(pr.delay+2*us, func() { pr.b.Receive(0, &q) }) // overtaken by PSNs 6..
			return false
		}
		return true
	}
	pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 20_000})
	pr.run(t, clock.Second)
	f, st := pr.flow(t, 1), pr.b.Stats()
	if !f.Completed || st.Reordered != 1 || st.LosslessGaps != 0 || len(pr.log.Violations) != 0 {
		t.Fatalf("reordering reported wrong: %+v %+v violations %v", f, st, pr.log.Violations)
	}
	if len(pr.log.Reorders) != 1 || !strings.Contains(pr.log.Reorders[0], "reordered, not lost") {
		t.Fatalf("reorder lines %q", pr.log.Reorders)
	}
	pr.b.Flush()
	if c := pr.log.Counters[len(pr.log.Counters)-1]; c.Reordered != 1 {
		t.Fatalf("counters %+v", c)
	}
}

// A go-back-N reroute from a long, queued path to a short idle one waits out the whole difference in
// arrival time, propagation included, so nothing arrives out of order. The slow route here is 30 us of
// extra propagation plus 200 us of queueing; the paper's wait (the queueing difference alone, as without
// path bases) would let the new path's first packets overtake the old path's last ones, and so would
// the estimate alone when the old queue grows after its last sample: the drain (waiting for the old
// path's last packet to be acknowledged) keeps both exact. The idle wait is about the full difference.
func TestRerouteWaitCoversPropagation(t *testing.T) {
	for _, withBases := range []bool{true, false} {
		ca := baseCfg(0, 100e9, us)
		ca.Transport, ca.PathSelect = GBN, SelectTelemetry
		cb := baseCfg(1, 100e9, us)
		cb.Transport = GBN
		pr := newPair(t, ca, cb, us)
		slow, fast := []uint8{0}, []uint8{0}
		extraProp, queue := 30*us, 200*us
		pr.ab.filter = func(p *pkt.Packet) bool {
			if len(p.Route) == 0 || &p.Route[0] != &slow[0] || (p.Kind != pkt.Data && p.Kind != pkt.Probe) {
				return true
			}
			p.ProbeDelay += queue
			q := *p
			pr.clk.AfterFunc(pr.delay+extraProp+queue, func() { pr.b.Receive(0, &q) })
			return false
		}
		f := Flow{ID: 1, Dst: 1, Size: 20_000_000, Route: slow, Paths: [][]uint8{slow, fast}}
		if withBases {
			tx := clock.TxTime(pkt.DataSize(1000, 1), 100e9)
			f.PathBases = []PathBase{{OneWay: us + extraProp + tx}, {OneWay: us + tx}}
		}
		if err := pr.a.StartFlow(f); err != nil {
			t.Fatal(err)
		}
		pr.run(t, 50*clock.Millisecond)
		st := pr.b.Stats()
		if rec := pr.flow(t, 1); !rec.Completed || pr.a.Stats().Reroutes != 1 {
			t.Fatalf("bases %v: flow %+v, %d reroutes", withBases, rec, pr.a.Stats().Reroutes)
		}
		if st.Reordered != 0 || pr.a.Stats().Retransmits != 0 {
			t.Fatalf("bases %v: %d reordered, %d retransmitted", withBases, st.Reordered, pr.a.Stats().Retransmits)
		}
		// The gap on the wire between the last slow-path packet and the first fast-path one.
		var lastSlow, firstFast clock.Time = -1, -1
		for _, e := range pr.ab.data() {
			if &e.p.Route[0] == &slow[0] {
				lastSlow = e.at
			} else if firstFast < 0 {
				firstFast = e.at
			}
		}
		if gap := firstFast - lastSlow; gap < extraProp+queue {
			t.Fatalf("bases %v: idle %v between the paths, want at least the %v arrival difference", withBases, gap, extraProp+queue)
		}
		t.Logf("bases %v: %d reordered, %d retransmitted", withBases, st.Reordered, pr.a.Stats().Retransmits)
	}
}

// The measurement window counts only what is acknowledged after it opens: a line-rate flow delivers
// about the window's length at line rate, a flow that completed before it nothing.
func TestMeasureWindow(t *testing.T) {
	ca := baseCfg(0, g100, us)
	ca.MeasureFrom = 100 * us
	pr := newPair(t, ca, baseCfg(1, g100, us), us)
	pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 10_000})
	pr.a.StartFlow(Flow{ID: 2, Dst: 1, Size: 100_000_000})
	pr.run(t, 300*us)
	pr.a.Flush()
	got := map[uint32]int64{}
	for _, f := range pr.log.Flows {
		got[f.ID] = f.WindowBytes
	}
	// 200 us at 100 Gb/s is 2.5 MB of frames; payload is MTU/frame of that.
	want := float64(200e-6*100e9/8) * float64(DefaultMTU) / float64(pkt.DataSize(DefaultMTU, 0))
	if got[1] != 0 || float64(got[2]) < 0.97*want || float64(got[2]) > 1.01*want {
		t.Fatalf("window bytes %v, want 0 and about %.0f", got, want)
	}
}
