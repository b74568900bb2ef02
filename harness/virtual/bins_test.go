package virtual

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bins against a plain []int64 series through adds, halvings and the widening when a count passes 32
// bits (by an add, or by a halving that merges two large bins).
func TestBinsMatchInt64(t *testing.T) {
	for _, big := range []bool{false, true} {
		var b bins
		var model []int64
		rng := rand.New(rand.NewPCG(5, 6))
		for step := 0; step < 20000; step++ {
			switch {
			case rng.IntN(500) == 0:
				b.halve()
				model = halve(model)
			default:
				i := rng.IntN(300)
				v := int64(rng.IntN(1500))
				if big && rng.IntN(50) == 0 {
					v = math.MaxUint32/2 + int64(rng.IntN(1000))
				}
				b.add(i, v)
				for len(model) <= i {
					model = append(model, 0)
				}
				model[i] += v
			}
			if b.len() != len(model) {
				t.Fatalf("big=%v step %d: %d bins, want %d", big, step, b.len(), len(model))
			}
		}
		for i, want := range model {
			if got := b.at(i); got != want {
				t.Fatalf("big=%v: bin %d = %d, want %d", big, i, got, want)
			}
		}
		if big != (b.wide != nil) {
			t.Fatalf("big=%v: widened %v", big, b.wide != nil)
		}
	}
}
