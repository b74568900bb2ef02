package egress

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

func TestFaultDownLossDelayAndClear(t *testing.T) {
	clk := clock.NewVirtual()
	s := &sink{clk: clk}
	p, err := New(Config{RateBps: 8e9, Queues: 1}, clk, s, Hooks{}) // 1000 B in 1 us
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	drop := func(_ *pkt.Packet, r string) { reasons = append(reasons, r) }
	fl := p.SetFault(Fault{Down: true}, 1, drop)
	p.Enqueue(0, &pkt.Packet{Size: 1000})
	clk.RunUntil(10 * clock.Microsecond)
	if len(s.got) != 0 || fl.Down != 1 || len(reasons) != 1 || reasons[0] != "link-down" {
		t.Fatalf("down link delivered %d frames, counted %d, reasons %v", len(s.got), fl.Down, reasons)
	}
	p.SetFault(Fault{Delay: 5 * clock.Microsecond}, 1, drop)
	p.Enqueue(0, &pkt.Packet{Size: 1000})
	clk.RunUntil(100 * clock.Microsecond)
	if len(s.got) != 1 || s.at[0] != 16*clock.Microsecond {
		t.Fatalf("delayed frame: got %d at %v, want 1 at 16us (10 + 1 serialization + 5 delay)", len(s.got), s.at)
	}
	fl = p.SetFault(Fault{Loss: 0.25}, 7, drop)
	const n = 4000
	for i := 0; i < n; i++ {
		p.Enqueue(0, &pkt.Packet{Size: 1000})
	}
	clk.RunUntil(clock.Second)
	if lost := float64(fl.Lost) / n; lost < 0.22 || lost > 0.28 {
		t.Fatalf("loss 25%%: lost %.3f of %d frames", lost, n)
	}
	if p.SetFault(Fault{}, 0, nil) != nil || p.Link() != Link(s) {
		t.Fatal("clearing the fault did not give the port its own link back")
	}
	if (Fault{Loss: 1.5}).Check() == nil || (Fault{Delay: -1}).Check() == nil {
		t.Fatal("out-of-range faults accepted")
	}
}
