package egress

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/fifo"
	"github.com/fabriclab/fabriclab/pkt"
)

type sink struct {
	clk *clock.Virtual
	got []*pkt.Packet
	at  []clock.Time
}

func (s *sink) Send(p *pkt.Packet) { s.got = append(s.got, p); s.at = append(s.at, s.clk.Now()) }

func TestSerializationAndStrictPriority(t *testing.T) {
	clk := clock.NewVirtual()
	s := &sink{clk: clk}
	p, err := New(Config{RateBps: 100e9, Queues: 3, Strict: []int{2}}, clk, s, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	p.Enqueue(0, &pkt.Packet{Size: 1000, PSN: 1})
	p.Enqueue(0, &pkt.Packet{Size: 1000, PSN: 2})
	p.Enqueue(2, &pkt.Packet{Size: 64, PSN: 9}) // control jumps the data queue once the link frees
	clk.RunUntil(clock.Microsecond)
	if len(s.got) != 3 || s.got[0].PSN != 1 || s.got[1].PSN != 9 || s.got[2].PSN != 2 {
		t.Fatalf("order wrong: %v", s.got)
	}
	if s.at[0] != 80*clock.Nanosecond {
		t.Fatalf("1000 B at 100G finished at %v, want 80ns", s.at[0])
	}
}

func TestPauseAndDRR(t *testing.T) {
	clk := clock.NewVirtual()
	s := &sink{clk: clk}
	p, _ := New(Config{RateBps: 1e9, Queues: 2, Quantum: 1000}, clk, s, Hooks{})
	p.Pause(0, true)
	for i := 0; i < 4; i++ {
		p.Enqueue(0, &pkt.Packet{Size: 1000, Flow: 0})
		p.Enqueue(1, &pkt.Packet{Size: 1000, Flow: 1})
	}
	clk.RunUntil(clock.Second)
	if len(s.got) != 4 {
		t.Fatalf("paused queue leaked: sent %d", len(s.got))
	}
	p.Pause(0, false)
	for i := 0; i < 4; i++ {
		p.Enqueue(1, &pkt.Packet{Size: 1000, Flow: 1})
	}
	clk.RunUntil(2 * clock.Second)
	// After the resume the two queues alternate.
	tail := s.got[4:]
	for i := 0; i+1 < len(tail) && i < 6; i += 2 {
		if tail[i].Flow == tail[i+1].Flow {
			t.Fatalf("DRR did not alternate: %d %d at %d", tail[i].Flow, tail[i+1].Flow, i)
		}
	}
}

// TestWeightedDRR: a queue of weight 3 sends three frames for every one of a weight-1 queue while both
// are backlogged.
func TestWeightedDRR(t *testing.T) {
	clk := clock.NewVirtual()
	s := &sink{clk: clk}
	p, _ := New(Config{RateBps: 1e9, Queues: 2, Quantum: 1000, Weights: []int{1, 3}}, clk, s, Hooks{})
	for i := 0; i < 40; i++ {
		p.Enqueue(0, &pkt.Packet{Size: 1000, Flow: 0})
		p.Enqueue(1, &pkt.Packet{Size: 1000, Flow: 1})
	}
	clk.RunUntil(clock.TxTime(1000*40, 1e9))
	var n [2]int
	for _, f := range s.got {
		n[f.Flow]++
	}
	if n[1] != 3*n[0] {
		t.Fatalf("weight 3 queue sent %d, weight 1 sent %d, want 3:1", n[1], n[0])
	}
}

// Ports sharing a pool: a queue that drains gives its storage back, and another port's queue filling
// later takes it instead of new memory; the counters and the frame order are unchanged by the chunks.
func TestSharedPoolFollowsWhatIsQueued(t *testing.T) {
	clk := clock.NewVirtual()
	pool := &fifo.Pool[*pkt.Packet]{}
	var a, b sink
	a.clk, b.clk = clk, clk
	pa, _ := New(Config{RateBps: 1e9, Queues: 2, Pool: pool}, clk, &a, Hooks{})
	pb, _ := New(Config{RateBps: 1e9, Queues: 2, Pool: pool}, clk, &b, Hooks{})
	const n = 100
	pa.Pause(1, true)
	for i := 0; i < n; i++ {
		pa.Enqueue(1, &pkt.Packet{Size: 1000, PSN: uint32(i)})
	}
	if st := pa.Stats(1); st.Frames != n || st.Bytes != n*1000 || st.MaxBytes != n*1000 || pool.Free() != 0 {
		t.Fatalf("after %d frames: %+v, %d chunks free", n, st, pool.Free())
	}
	pa.Pause(1, false)
	clk.RunUntil(clock.Second)
	if len(a.got) != n {
		t.Fatalf("sent %d of %d", len(a.got), n)
	}
	for i, f := range a.got {
		if f.PSN != uint32(i) {
			t.Fatalf("frame %d has PSN %d: order lost", i, f.PSN)
		}
	}
	st := pa.Stats(1)
	if st.Frames != 0 || st.Bytes != 0 || st.Dequeued != n || st.DequeuedBytes != n*1000 || st.MaxBytes != n*1000 {
		t.Fatalf("after the drain: %+v", st)
	}
	free := pool.Free()
	if free == 0 {
		t.Fatal("a drained queue kept its storage")
	}
	pb.Pause(0, true)
	for i := 0; i < n; i++ {
		pb.Enqueue(0, &pkt.Packet{Size: 1000})
	}
	if pool.Free() != 0 {
		t.Fatalf("the second port took new memory with %d chunks free", pool.Free())
	}
}
