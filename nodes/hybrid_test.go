package nodes

import (
	"slices"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

// A flow with a second route (HYBRID) sends the packets that end within After bytes by table and the
// rest by the second source route, including retransmissions, by byte offset.
func TestSecondRouteAfterThreshold(t *testing.T) {
	const size, after = 20_500, 5_000 // 21 packets of up to 1000 B; PSNs 0-4 end within 5000 B
	then := []uint8{0, 1}
	pr := newSwitched(t, baseCfg(0, g100, us), baseCfg(1, g100, us), us, g100)
	dropped := false
	pr.ab.filter = func(p *pkt.Packet) bool {
		// Lose PSN 2 once: its retransmission must still go by table.
		if p.Kind == pkt.Data && p.PSN == 2 && !dropped {
			dropped = true
			return false
		}
		return true
	}
	if err := pr.a.StartFlow(Flow{ID: 3, Dst: 1, Size: size, Then: then, After: after}); err != nil {
		t.Fatal(err)
	}
	pr.run(t, 100*clock.Millisecond)
	if f := pr.flow(t, 3); !f.Completed {
		t.Fatalf("flow did not complete: %+v", f)
	}
	byTable, routed := 0, 0
	for _, e := range pr.ab.data() {
		end := int64(e.p.PSN)*1000 + int64(e.p.Payload)
		switch {
		case end <= after && e.p.Route != nil:
			t.Fatalf("PSN %d ends at byte %d <= %d but carries route %v", e.p.PSN, end, after, e.p.Route)
		case end > after && !slices.Equal(e.p.Route, then):
			t.Fatalf("PSN %d ends at byte %d > %d but carries route %v, want %v", e.p.PSN, end, after, e.p.Route, then)
		case end > after && e.p.Size != int32(pkt.DataSize(int(e.p.Payload), len(then))):
			t.Fatalf("PSN %d: size %d does not count its source route", e.p.PSN, e.p.Size)
		}
		if e.p.Route == nil {
			byTable++
		} else {
			routed++
		}
	}
	if byTable < 6 || routed < 16 { // 5 + the retransmission; 16 past the threshold
		t.Fatalf("%d packets by table, %d by the second route; want at least 6 and 16", byTable, routed)
	}
	bad := baseCfg(0, g100, us)
	pa := newSwitched(t, bad, baseCfg(1, g100, us), us, g100)
	if err := pa.a.StartFlow(Flow{ID: 4, Dst: 1, Size: size, Then: []uint8{1, 1}, After: after}); err == nil {
		t.Fatal("a second route leaving by another port than the flow's was accepted")
	}
}
