package switchsw

import (
	"testing"

	"github.com/fabriclab/fabriclab/units"
)

// The MMU's XOFF/XON as resolve computes them from a switch's config: N BDPs of each port's own link
// (100 Gb/s x 1 us = 12500 B here), XON at its own value, not XOFF's, and 2/3 of XOFF when unset. A
// pause/resume cycle with XON = XOFF still completes every flow, so only this pins the numbers
// (issue 35: "XON set equal to XOFF" passed the unit tests).
func TestResolvedXOFFXON(t *testing.T) {
	const bdp = 12500 // 100e9/8 x 1e-6
	cfg := pfcConfig(3)
	cfg.Ports[2].RateBps = 25e9 // a slower port: its own, smaller BDP
	r, err := resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.mmu.PFCAlpha != 0 {
		t.Fatalf("static xoff/xon resolved to the dynamic threshold (alpha %g)", r.mmu.PFCAlpha)
	}
	want := []struct{ xoff, xon int64 }{{6 * bdp, 4 * bdp}, {6 * bdp, 4 * bdp}, {6 * bdp / 4, 4 * bdp / 4}}
	for i, w := range want {
		if r.mmu.XOFF[i] != w.xoff || r.mmu.XON[i] != w.xon {
			t.Errorf("port %d: xoff %d xon %d, want %d and %d", i, r.mmu.XOFF[i], r.mmu.XON[i], w.xoff, w.xon)
		}
	}
	cfg = pfcConfig(1)
	cfg.FlowControl.XON = units.Size{}
	if r, _ = resolve(cfg); r.mmu.XOFF[0] != 6*bdp || r.mmu.XON[0] != 4*bdp {
		t.Errorf("xon unset: xoff %d xon %d, want %d and 2/3 of it", r.mmu.XOFF[0], r.mmu.XON[0], 6*bdp)
	}
	cfg = pfcConfig(1)
	cfg.FlowControl.XOFF, cfg.FlowControl.XON = units.Size{Bytes: 90_000}, units.Size{Bytes: 30_000}
	if r, _ = resolve(cfg); r.mmu.XOFF[0] != 90_000 || r.mmu.XON[0] != 30_000 {
		t.Errorf("bytes: xoff %d xon %d, want 90000 and 30000", r.mmu.XOFF[0], r.mmu.XON[0])
	}
	// Alpha set: the dynamic threshold with the 3 KB resume offset, static limits unused.
	cfg = pfcConfig(1)
	cfg.FlowControl.Alpha = 8
	if r, _ = resolve(cfg); r.mmu.PFCAlpha != 8 || r.mmu.ResumeOffset != 3000 || r.mmu.XOFF[0] != 0 {
		t.Errorf("alpha 8: %+v", r.mmu)
	}
}

// RED's marking probability, exactly: 0 up to and at Kmin, rising linearly to PMax at Kmax, 1 above
// (HPCC ns-3's red queue). TestECNFollowsRED checks marks against MarkProbability itself; this pins
// MarkProbability's own numbers, so Kmax read for Kmin fails here.
func TestMarkProbabilityRamp(t *testing.T) {
	cfg := baseConfig(2)
	cfg.ECN = ECNConfig{Enabled: true, KMinBytes: 100_000, KMaxBytes: 400_000, PMax: 0.2}
	st := newStar(t, cfg)
	for _, c := range []struct {
		bytes int
		p     float64
	}{{0, 0}, {50_000, 0}, {100_000, 0}, {175_000, 0.05}, {250_000, 0.1}, {400_000, 0.2}, {400_001, 1}, {1_000_000, 1}} {
		if got := st.sw.MarkProbability(c.bytes); got < c.p-1e-12 || got > c.p+1e-12 {
			t.Errorf("%d B queued: marking probability %g, want %g", c.bytes, got, c.p)
		}
	}
}
