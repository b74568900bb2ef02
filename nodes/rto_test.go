package nodes

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
)

// TestIRNRTOTradeOff is PortFC's argument against one IRN timeout (§I, claim 10): a small flow whose
// tail packet is lost waits RTO_low, so its FCT grows with RTO_low; a flow whose ACKs come back late
// (150 us of queueing on the reverse path, nothing lost) is retransmitted spuriously once RTO_low drops
// below that round trip. No RTO_low gives both a short tail and no spurious retransmissions.
func TestIRNRTOTradeOff(t *testing.T) {
	lows := []clock.Time{25 * us, 50 * us, 100 * us, 200 * us, 400 * us}
	cfg := func(low clock.Time) (Config, Config) {
		ca, cb := baseCfg(0, g100, us), baseCfg(1, g100, us)
		ca.Transport, cb.Transport = IRN, IRN
		ca.RTOLow, ca.RTOHigh = low, max(low, DefaultRTOHigh)
		return ca, cb
	}
	var tail []clock.Time
	var spurious []int64
	for _, low := range lows {
		ca, cb := cfg(low)
		pr := newPair(t, ca, cb, us)
		pr.ab.filter = dropOnce(1)
		pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 2000})
		pr.run(t, clock.Second)
		tail = append(tail, pr.flow(t, 1).FCT())

		ca, cb = cfg(low)
		pr = newPair(t, ca, cb, us)
		pr.ba.delay = 150 * us
		pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 3000})
		pr.run(t, clock.Second)
		f := pr.flow(t, 1)
		if !f.Completed {
			t.Fatalf("RTO_low %v: flow with late ACKs did not complete", low)
		}
		spurious = append(spurious, f.Retransmits)
	}
	t.Logf("RTO_low %v: tail-loss FCT %v, spurious retransmissions with 152 us RTT %v", lows, tail, spurious)
	for i := range lows {
		if tail[i] < lows[i] || tail[i] > lows[i]+5*us {
			t.Fatalf("RTO_low %v: tail-loss FCT %v, want just over RTO_low", lows[i], tail[i])
		}
		if i > 0 && spurious[i] > spurious[i-1] {
			t.Fatalf("spurious retransmissions rose with RTO_low: %v", spurious)
		}
	}
	if spurious[0] == 0 || spurious[len(spurious)-1] != 0 {
		t.Fatalf("spurious retransmissions %v: want some at 25 us and none at 400 us", spurious)
	}
}
