package nodes

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

// UGAL's rule: VAL iff q_min x H_min > q_val x H_val + T, strictly.
func TestUGALChoiceRule(t *testing.T) {
	const T = 10 * us
	for _, tc := range []struct {
		qMin       clock.Time
		hMin       int
		qVal       clock.Time
		hVal       int
		want       bool
		whyNotZero string
	}{
		{0, 4, 0, 6, false, "idle fabric: MIN"},
		{3 * us, 4, 0, 6, true, "12 us on MIN against an idle VAL, over T"},
		{2 * us, 4, 0, 6, false, "8 us is within T"},
		{10 * us, 4, 5 * us, 6, false, "40 = 30 + 10: the bias is strict"},
		{11 * us, 4, 5 * us, 6, true, "44 > 40"},
		{20 * us, 4, 20 * us, 6, false, "equal queues: VAL's longer path loses"},
	} {
		if got := ugalChoice(tc.qMin, tc.hMin, tc.qVal, tc.hVal, T); got != tc.want {
			t.Errorf("%s: ugalChoice(%v, %d, %v, %d) = %v", tc.whyNotZero, tc.qMin, tc.hMin, tc.qVal, tc.hVal, got)
		}
	}
}

// A ugal-pb flow over a MIN route whose frames pick up 20 us of queueing (and arrive that much later)
// and two idle VAL routes: once ACKs report MIN's queue, packets go VAL, each to a VAL route drawn per
// packet, and MIN's probes keep saying so. The receiver's
// reorder buffer holds what overtakes, so the lossless flow completes with no NACK, go-back or
// retransmission; reordering is counted, and the buffer's peak reported. (Until the first ACK, 20 us on, every packet goes MIN: nothing says it is queued.)
func TestUGALPBSpraysAndTheReorderBufferHolds(t *testing.T) {
	ca := baseCfg(0, g100, us)
	ca.PathSelect = SelectUGALPB
	ca.Telemetry.Threshold = 5 * us
	cb := baseCfg(1, g100, us)
	cb.ReorderBuffer = true
	pr := newPair(t, ca, cb, us)
	min, val1, val2 := []uint8{0, 1, 1}, []uint8{0, 1, 1, 1, 1}, []uint8{0, 1, 1, 1, 1}
	const queue = 20 * us
	pr.ab.filter = func(p *pkt.Packet) bool {
		if len(p.Route) == 0 || &p.Route[0] != &min[0] || (p.Kind != pkt.Data && p.Kind != pkt.Probe) {
			return true
		}
		p.ProbeDelay += queue
		q := *p
		pr.clk.AfterFunc(pr.delay+queue, func() { pr.b.Receive(0, &q) })
		return false
	}
	if err := pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 20_000_000, Route: min, Paths: [][]uint8{min, val1, val2}}); err != nil {
		t.Fatal(err)
	}
	pr.run(t, clock.Second)
	f, sa, sb := pr.flow(t, 1), pr.a.Stats(), pr.b.Stats()
	if !f.Completed {
		t.Fatalf("flow did not complete: %+v", f)
	}
	if len(f.PathBytes) != 3 || f.PathBytes[0] == 0 || f.PathBytes[1] == 0 || f.PathBytes[2] == 0 {
		t.Fatalf("bytes by candidate %v: want MIN, then both VAL routes drawn", f.PathBytes)
	}
	if f.PathBytes[1]+f.PathBytes[2] < 4*f.PathBytes[0] {
		t.Errorf("bytes by candidate %v: MIN is 20 us behind, most should go VAL", f.PathBytes)
	}
	if sb.Reordered == 0 || sb.ReorderHeld == 0 || sb.ReorderPeak == 0 {
		t.Fatalf("receiver %+v: the MIN packets arrive late, the buffer should hold the VAL ones", sb)
	}
	if sb.TxNack != 0 || sa.GoBacks != 0 || sa.Retransmits != 0 || sb.Duplicates != 0 || sb.LosslessGaps != 0 || len(pr.log.Violations) != 0 {
		t.Fatalf("reordering treated as loss: sender %+v receiver %+v violations %v", sa, sb, pr.log.Violations)
	}
	if sa.Reroutes != 0 {
		t.Errorf("ugal-pb rerouted %d times: it decides per packet, it never drains or restarts", sa.Reroutes)
	}
	pr.b.Flush()
	if c := pr.log.Counters[len(pr.log.Counters)-1]; c.ReorderPeak != sb.ReorderPeak || c.ReorderHeld != sb.ReorderHeld {
		t.Fatalf("counters %+v, stats %+v", c, sb)
	}
}

// The reorder buffer delivers in order: a receiver fed PSNs 0 2 3 1 4 advances its in-order point
// 1 1 1 4 5, holds 2 packets at most, sends no NACK, and ACKs at once when the hole fills. Without the
// buffer the same arrivals NACK and drop 2 and 3 (go-back-N's receiver).
func TestReorderBufferDeliversInOrder(t *testing.T) {
	for _, buffered := range []bool{true, false} {
		cb := baseCfg(1, g100, us)
		cb.ReorderBuffer = buffered
		pr := newPair(t, baseCfg(0, g100, us), cb, us)
		order, want := []uint32{0, 2, 3, 1, 4}, []uint32{1, 1, 1, 4, 5}
		if !buffered {
			want = []uint32{1, 1, 1, 2, 2}
		}
		for i, psn := range order {
			pr.b.Receive(0, &pkt.Packet{Kind: pkt.Data, Src: 0, Dst: 1, Flow: 7, PSN: psn, Payload: 1000, Size: 1100,
				SentAt: clock.Time(1+psn) * us, Last: psn == 4})
			if got := pr.b.rx[7].expected; got != want[i] {
				t.Fatalf("buffered=%v: after PSN %d the in-order point is %d, want %d", buffered, psn, got, want[i])
			}
		}
		st := pr.b.Stats()
		if buffered && (st.ReorderHeld != 2 || st.ReorderPeak != 2 || st.TxNack != 0 || st.Reordered != 1) {
			t.Fatalf("buffered: %+v, want 2 held, peak 2, no NACK, 1 reordered (PSN 1)", st)
		}
		if !buffered && (st.ReorderHeld != 0 || st.TxNack == 0) {
			t.Fatalf("unbuffered: %+v, want a NACK and nothing held", st)
		}
	}
}
