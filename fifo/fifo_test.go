package fifo

import (
	"math/rand/v2"
	"testing"
)

// A model slice checks order and length through pushes and pops interleaved at random, across chunk
// boundaries and through empty.
func TestOrderAgainstSlice(t *testing.T) {
	var p Pool[int]
	var q Queue[int]
	var model []int
	r := rand.New(rand.NewPCG(1, 2))
	next := 0
	for step := 0; step < 200000; step++ {
		if len(model) == 0 || r.IntN(100) < 52 {
			q.Push(&p, next)
			model = append(model, next)
			next++
		} else {
			if got := q.Front(); got != model[0] {
				t.Fatalf("step %d: Front %d, want %d", step, got, model[0])
			}
			if got := q.Pop(&p); got != model[0] {
				t.Fatalf("step %d: Pop %d, want %d", step, got, model[0])
			}
			model = model[1:]
		}
		if q.Len() != len(model) || q.Empty() != (len(model) == 0) {
			t.Fatalf("step %d: Len %d Empty %v, want %d", step, q.Len(), q.Empty(), len(model))
		}
	}
}

// Every chunk a queue took is back on the free list once it drains, and the next fill reuses them.
func TestChunksReturnOnDrain(t *testing.T) {
	var p Pool[*int]
	var q Queue[*int]
	const n = 10*chunkLen + 3
	x := 7
	for i := 0; i < n; i++ {
		q.Push(&p, &x)
	}
	if p.Free() != 0 {
		t.Fatalf("free list %d while every chunk is in use", p.Free())
	}
	for i := 0; i < n; i++ {
		q.Pop(&p)
	}
	if !q.Empty() || q.head != nil || q.tail != nil {
		t.Fatalf("drained queue still holds chunks")
	}
	want := (n + chunkLen - 1) / chunkLen
	if p.Free() != want {
		t.Fatalf("free list %d after drain, want %d", p.Free(), want)
	}
	for c := p.free; c != nil; c = c.next {
		for i, v := range c.items {
			if v != nil {
				t.Fatalf("free chunk keeps item %d alive", i)
			}
		}
	}
	for i := 0; i < n; i++ {
		q.Push(&p, &x)
	}
	if p.Free() != 0 {
		t.Fatalf("refill took new chunks: %d left free", p.Free())
	}
}

// Queues sharing a pool hold, together, chunks for the most they held at once, not the sum of each
// queue's own peak: a queue that drained leaves its chunks to the next.
func TestSharedPoolBounded(t *testing.T) {
	var p Pool[int]
	qs := make([]Queue[int], 8)
	for round := 0; round < 5; round++ {
		for i := range qs {
			for k := 0; k < 5*chunkLen; k++ {
				qs[i].Push(&p, k)
			}
			for k := 0; k < 5*chunkLen; k++ {
				if got := qs[i].Pop(&p); got != k {
					t.Fatalf("queue %d: got %d, want %d", i, got, k)
				}
			}
		}
	}
	if p.Free() != 5 {
		t.Fatalf("pool grew to %d chunks for queues that never held more than 5 at once", p.Free())
	}
}

func BenchmarkPushPop(b *testing.B) {
	var p Pool[*int]
	var q Queue[*int]
	x := 1
	for i := 0; i < b.N; i++ {
		for k := 0; k < 40; k++ {
			q.Push(&p, &x)
		}
		for k := 0; k < 40; k++ {
			q.Pop(&p)
		}
	}
}
