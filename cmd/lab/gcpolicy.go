package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// gcFloor is the heap below which lab leaves the garbage collector off. A fat-tree k=4 run allocates
// 3-4 MB in all and never collects (it did not at a 10 MB floor either; at 9 MB it collected once).
// Between the floor and the live heap a k=8 run's peak is the floor's: at 32 MB it peaked 8 MB higher
// than at 16 for no measurable CPU, and 12 took its peak RSS from 31 to 29 MB (incast; permutation 30
// to 27, medians of 3).
const gcFloor = 12 << 20

// collectFloor is the heap above which collectIfLarge collects. After the engines are dropped little
// is live (2-3 MB of records on a fat-tree k=8 run), so the collection costs well under a millisecond,
// and without it the run directory is written on top of the dropped engines' 10 MB: a k=8 incast
// peaked 3.5 MB higher at a 16 MB threshold. A k=4 run ends below it and skips the collection.
const collectFloor = 4 << 20

// collectIfLarge collects now if the heap has grown past collectFloor, and hands the freed pages back to
// the OS. A virtual run calls it once its engines are done and dropped: writing the run directory
// allocates tens of MB on a large run (fat-tree k=12: its heap went from 86 MB live to 147 MB before
// the next collection), and collecting first leaves only the records live beneath it. The records
// that come next are a few large slices (3.8 MB of pauses, 4.7 MB of link rows at k=12), which the
// engines' freed pages, scattered between what survived, could not hold: they took fresh pages and
// the k=12 incast peaked 4 MB above its running fabric (medians of 3, 57.8 -> 53.8 MB). Returned
// pages cost a fault when reused; user+sys time did not move.
func collectIfLarge() {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Uint64() >= collectFloor {
		debug.FreeOSMemory()
	}
}

// gcPercent is GOGC once the heap has passed gcFloor: Go's default. Less headroom bought little memory
// for much CPU on a fat-tree k=12 incast (GOGC 50: RSS 107 -> 98 MB for 19% more CPU; 25: 94 MB, +34%).
// Since the runs make little garbage (2026-11-28), GOGC 50 costs less but still buys little: k=12
// incast peak RSS -1.9 MB (medians of 3, of 65) for 2.0% more instructions (callgrind), k=8 -0.5 MB.
const gcPercent = 100

// lazyGC turns the collector off until the heap first reaches gcFloor, then hands it to gcPercent. Go's
// first collections come at a 4 MB heap and then at twice the live heap, so a short simulation (a
// fat-tree k=4 incast: 15,000 packets) spent a quarter of its CPU collecting a heap that never exceeds
// the floor. The first collection comes from a memory limit at the floor, and a finalizer on an object only
// that collection frees switches to gcPercent: no goroutine polls the heap. A user who sets GOGC or
// GOMEMLIMIT keeps exactly what they asked for.
func lazyGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	// The limit counts all the runtime's memory (spans, stacks, free pages), about half again the heap
	// at this size: the first collection comes at a 9-10 MB heap (gctrace, fat-tree k=8).
	debug.SetMemoryLimit(gcFloor + gcFloor/2)
	// A pointer field keeps it out of the tiny allocator, whose blocks may outlive the object.
	sentinel := &struct{ p *byte }{}
	runtime.SetFinalizer(sentinel, func(*struct{ p *byte }) {
		debug.SetGCPercent(gcPercent)
		debug.SetMemoryLimit(math.MaxInt64)
	})
}
