package nodes

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
)

func TestSpreaderModes(t *testing.T) {
	paths := [][]uint8{{0, 1}, {0, 2}, {0, 3}, {0, 4}}
	mk := func(mode string, id uint32) *spreader {
		n := &NIC{cfg: Config{Spread: mode, SpreadGap: 10 * clock.Microsecond, Seed: 7}}
		return n.newSpreader(&qp{id: id}, paths, nil)
	}
	// packet: PSN round robin, a retransmission (same PSN) takes its original's path.
	s := mk(SpreadPacket, 1)
	count := make([]int, len(paths))
	for psn := uint32(0); psn < 400; psn++ {
		count[s.pick(psn, 0)]++
	}
	for i, c := range count {
		if c != 100 {
			t.Errorf("packet: path %d got %d of 400 packets, want 100", i, c)
		}
	}
	if a, b := s.pick(17, 0), s.pick(17, clock.Millisecond); a != b {
		t.Errorf("packet: PSN 17 went on %d then %d", a, b)
	}
	// flow: one path for the flow's life; flows land on every path.
	seen := map[int]bool{}
	for id := uint32(1); id <= 64; id++ {
		s := mk(SpreadFlow, id)
		first := s.pick(0, 0)
		for psn := uint32(1); psn < 50; psn++ {
			if got := s.pick(psn, clock.Time(psn)*clock.Millisecond); got != first {
				t.Fatalf("flow %d moved from path %d to %d", id, first, got)
			}
		}
		seen[first] = true
	}
	if len(seen) != len(paths) {
		t.Errorf("64 flows hashed onto %d of %d paths", len(seen), len(paths))
	}
	// flowlet: back-to-back packets stay; after an idle gap the flow may move, and over many gaps it does.
	s = mk(SpreadFlowlet, 9)
	cur := s.pick(0, 0)
	for psn := uint32(1); psn < 20; psn++ {
		if got := s.pick(psn, clock.Time(psn)*clock.Microsecond); got != cur {
			t.Fatalf("flowlet moved within a burst (gap 1 us < 10 us)")
		}
	}
	moved := map[int]bool{}
	now := 20 * clock.Microsecond
	for i := 0; i < 40; i++ {
		now += 11 * clock.Microsecond
		moved[s.pick(uint32(20+i), now)] = true
	}
	if len(moved) < 2 {
		t.Errorf("flowlet never moved over 40 gaps of 11 us")
	}
}

func TestSpreadConfigChecked(t *testing.T) {
	for _, c := range []Config{
		{Spread: "ecmp"},
		{Spread: SpreadFlowlet},
		{Spread: SpreadFlow, PathSelect: SelectUGAL},
	} {
		if err := c.checkSpread(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
