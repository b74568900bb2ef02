package fc_test

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/switchsw"
	"github.com/fabriclab/fabriclab/switchsw/fc"
	"github.com/fabriclab/fabriclab/units"
)

// TestPFCStarTagging: with P = 3 tags from priority 3, a frame from another switch leaves one tag
// higher than it came (capped at P-1), a frame from a host keeps its tag, and the pause a raised
// frame provokes names the priority it arrived with.
func TestPFCStarTagging(t *testing.T) {
	clk := clock.NewVirtual()
	cfg := switchsw.Config{BufferBytes: 5_000_000, Lossless: []bool{false, false, false, true, true, true, false, false},
		FlowControl: fc.Config{Mode: "pfcstar", XOFF: units.Size{Bytes: xoff}, XON: units.Size{Bytes: xon},
			PFCStar: fc.PFCStarConfig{Tags: 3, Base: 3}}}
	for p := 0; p < 2; p++ {
		cfg.Ports = append(cfg.Ports, switchsw.PortConfig{RateBps: gbps100, Delay: us})
	}
	// Port 0 faces a switch, port 2 a host (h7).
	cfg.Ports = append(cfg.Ports, switchsw.PortConfig{RateBps: gbps100, Delay: us, PeerIsHost: true, PeerHost: 7})
	var back []*pkt.Packet
	links := []egress.Link{egress.LinkFunc(func(f *pkt.Packet) { back = append(back, f) }), egress.LinkFunc(func(*pkt.Packet) {}),
		egress.LinkFunc(func(*pkt.Packet) {})}
	sw, err := switchsw.New(cfg, clk, links, nil)
	if err != nil {
		t.Fatal(err)
	}
	sw.Port(1).Pause(5, true)
	for in, want := range map[uint8]uint8{0: 4, 3: 4, 4: 5, 5: 5, 7: 5} {
		p := &pkt.Packet{Kind: pkt.Data, Size: 1000, Dst: 1, Prio: in, Route: []uint8{1}}
		sw.Receive(0, p)
		if p.Prio != want || (want == 5 && p.Queue != 5) {
			t.Errorf("prio %d left as %d in queue %d, want %d", in, p.Prio, p.Queue, want)
		}
	}
	for in, want := range map[uint8]uint8{0: 3, 3: 3, 4: 4, 5: 5, 7: 5} {
		p := &pkt.Packet{Kind: pkt.Data, Size: 1000, Src: 7, Dst: 1, Prio: in, Route: []uint8{1}}
		sw.Receive(2, p)
		if p.Prio != want {
			t.Errorf("prio %d from a host left as %d, want %d (a host already queued it at its tag)", in, p.Prio, want)
		}
	}
	// Fill the ingress group of priority 4: its frames leave as tag 2 (priority 5), which is held.
	for i := 0; i < xoff/1000+1; i++ {
		sw.Receive(0, &pkt.Packet{Kind: pkt.Data, Size: 1000, Dst: 1, Prio: 4, Route: []uint8{1}})
	}
	clk.RunUntil(5 * us)
	var pauses []uint8
	for _, f := range back {
		if f.Kind == pkt.PFC {
			pauses = append(pauses, f.PauseMask)
		}
	}
	if len(pauses) != 1 || pauses[0] != 1<<4 {
		t.Fatalf("pauses upstream %v, want one for priority 4 (the arrival priority)", pauses)
	}
	cfg.FlowControl.PFCStar = fc.PFCStarConfig{Tags: 6, Base: 3}
	if _, err := switchsw.New(cfg, clk, nil, nil); err == nil || !contains(err.Error(), "flow_control.pfcstar") {
		t.Fatalf("6 tags from 3 accepted: %v", err)
	}
}

// TestPFCStarEverySwitch: under EverySwitch (switch.pfcstar_raise: switches) a frame from a host is
// raised too, so no switch queue holds tag 0 and, at P = 2, every switch queue shares tag 1.
func TestPFCStarEverySwitch(t *testing.T) {
	clk := clock.NewVirtual()
	cfg := switchsw.Config{BufferBytes: 5_000_000, Lossless: []bool{false, false, false, true, true, false, false, false},
		FlowControl: fc.Config{Mode: "pfcstar", XOFF: units.Size{Bytes: xoff}, XON: units.Size{Bytes: xon},
			PFCStar: fc.PFCStarConfig{Tags: 2, Base: 3, EverySwitch: true}}}
	cfg.Ports = append(cfg.Ports, switchsw.PortConfig{RateBps: gbps100, Delay: us}, switchsw.PortConfig{RateBps: gbps100, Delay: us},
		switchsw.PortConfig{RateBps: gbps100, Delay: us, PeerIsHost: true, PeerHost: 7})
	links := []egress.Link{egress.LinkFunc(func(*pkt.Packet) {}), egress.LinkFunc(func(*pkt.Packet) {}), egress.LinkFunc(func(*pkt.Packet) {})}
	sw, err := switchsw.New(cfg, clk, links, nil)
	if err != nil {
		t.Fatal(err)
	}
	sw.Port(1).Pause(4, true)
	for _, in := range []int{0, 2} {
		for prio, want := range map[uint8]uint8{3: 4, 4: 4} {
			p := &pkt.Packet{Kind: pkt.Data, Size: 1000, Src: 7, Dst: 1, Prio: prio, Route: []uint8{1}}
			sw.Receive(in, p)
			if p.Prio != want {
				t.Errorf("port %d: prio %d left as %d, want %d", in, prio, p.Prio, want)
			}
		}
	}
}
