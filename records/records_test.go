package records

import (
	"reflect"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
)

// Chunked pauses must come out of FlushPauses exactly as plain appends would have left them: the same
// records in the same order, after any the log already held, across chunk boundaries.
func TestChunkedPausesMatchAppend(t *testing.T) {
	pause := func(i int) Pause {
		return Pause{At: clock.Time(i), Device: int32(i % 7), Port: int16(i % 5), Queue: int16(i % 3), On: i%2 == 0}
	}
	for _, n := range []int{0, 1, pauseChunk - 1, pauseChunk, pauseChunk + 1, 3*pauseChunk + 17} {
		var plain, chunked Log
		for i := 0; i < 3; i++ { // records from before chunking stay first
			plain.AddPause(pause(-i))
			chunked.AddPause(pause(-i))
		}
		chunked.ChunkPauses()
		for i := 0; i < n; i++ {
			plain.AddPause(pause(i))
			chunked.AddPause(pause(i))
		}
		if n > 0 && len(chunked.Pauses) != 3 {
			t.Fatalf("n=%d: chunked pauses reached Pauses before FlushPauses", n)
		}
		chunked.FlushPauses()
		if !reflect.DeepEqual(plain.Pauses, chunked.Pauses) {
			t.Fatalf("n=%d: %d records after flush, want %d, or they differ", n, len(chunked.Pauses), len(plain.Pauses))
		}
		chunked.AddPause(pause(n)) // after a flush, appends go to Pauses
		if got := chunked.Pauses[len(chunked.Pauses)-1]; got != pause(n) {
			t.Fatalf("n=%d: the record after the flush is %+v", n, got)
		}
	}
}

func TestMergeFlushesChunkedPauses(t *testing.T) {
	var a, b Log
	a.ChunkPauses()
	b.ChunkPauses()
	a.AddPause(Pause{At: 1})
	b.AddPause(Pause{At: 2})
	a.Merge(&b)
	if want := []Pause{{At: 1}, {At: 2}}; !reflect.DeepEqual(a.Pauses, want) {
		t.Fatalf("merged pauses %+v, want %+v", a.Pauses, want)
	}
}
