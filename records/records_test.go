package records

import (
	"os"
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

func spillFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "spill")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Spilled pauses must come back from FlushPauses exactly as plain appends would have left them, with
// only one chunk in memory while they accumulate; a spill file that cannot be written keeps them in
// memory, and one that cannot be read back is reported.
func TestSpilledPausesMatchAppend(t *testing.T) {
	pause := func(i int) Pause {
		return Pause{At: clock.Time(i), Device: int32(i % 7), Kind: DeviceKind(i % 2), Port: int16(i % 5), Queue: int16(i % 3),
			On: i%2 == 0, Sent: i%3 == 0, Hops: int8(i % 4)}
	}
	for _, tc := range []struct {
		name  string
		n     int
		spill func(*testing.T) *os.File
	}{
		{"none", 0, spillFile}, {"one", 1, spillFile}, {"chunk", pauseChunk, spillFile},
		{"chunk+1", pauseChunk + 1, spillFile}, {"many", 5*pauseChunk + 17, spillFile},
		{"unwritable", 3*pauseChunk + 5, func(t *testing.T) *os.File {
			f, err := os.Open(os.DevNull) // read-only: every write fails
			if err != nil {
				t.Fatal(err)
			}
			return f
		}},
	} {
		var plain, spilled Log
		plain.AddPause(pause(-1))
		spilled.AddPause(pause(-1))
		spilled.ChunkPauses()
		spilled.SpillPauses(tc.spill(t))
		for i := 0; i < tc.n; i++ {
			plain.AddPause(pause(i))
			spilled.AddPause(pause(i))
			if tc.name != "unwritable" && len(spilled.pauses) > 1 {
				t.Fatalf("%s: %d chunks in memory after %d records, want 1", tc.name, len(spilled.pauses), i+1)
			}
		}
		spilled.FlushPauses()
		if err := spilled.SpillErr(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(plain.Pauses, spilled.Pauses) {
			t.Fatalf("%s: %d records after flush, want %d, or they differ", tc.name, len(spilled.Pauses), len(plain.Pauses))
		}
	}
}

func TestUnreadableSpillIsReported(t *testing.T) {
	var l Log
	l.ChunkPauses()
	f := spillFile(t)
	l.SpillPauses(f)
	for i := 0; i < 2*pauseChunk; i++ {
		l.AddPause(Pause{At: clock.Time(i)})
	}
	if err := f.Truncate(100); err != nil {
		t.Fatal(err)
	}
	l.FlushPauses()
	if l.SpillErr() == nil {
		t.Fatal("a spill file cut short was read back without an error")
	}
}
