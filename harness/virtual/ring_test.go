package virtual

import (
	"math/rand/v2"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

// The ring against a slice model, through growth, wrap-around and empty: order, length, and that a
// popped slot no longer holds its packet.
func TestRingOrderAgainstSlice(t *testing.T) {
	var r ring
	var model []inFlight
	rng := rand.New(rand.NewPCG(3, 4))
	for step := 0; step < 100000; step++ {
		if len(model) == 0 || rng.IntN(100) < 51 {
			f := inFlight{at: clock.Time(step), p: &pkt.Packet{PSN: uint32(step)}}
			r.push(f)
			model = append(model, f)
			continue
		}
		if got := r.front().at; got != model[0].at {
			t.Fatalf("step %d: front at %d, want %d", step, got, model[0].at)
		}
		slot := r.head
		if got := r.pop(); got != model[0].p {
			t.Fatalf("step %d: popped PSN %d, want %d", step, got.PSN, model[0].p.PSN)
		}
		if r.buf[slot].p != nil {
			t.Fatalf("step %d: the popped slot still holds its packet", step)
		}
		model = model[1:]
		if int(r.n) != len(model) {
			t.Fatalf("step %d: %d in flight, want %d", step, r.n, len(model))
		}
	}
	if len(r.buf)&(len(r.buf)-1) != 0 || len(r.buf) < int(r.n) {
		t.Fatalf("buffer of %d for %d frames: not a power of two that holds them", len(r.buf), r.n)
	}
}
