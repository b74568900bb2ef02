package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// gcFloor is the heap below which lab leaves the garbage collector off. 16 MB holds all a fat-tree k=4
// run allocates (it never collects); at 32 MB a k=8 run peaked 8 MB higher for no measurable CPU.
const gcFloor = 16 << 20

// collectIfLarge collects now if the heap has grown past gcFloor. A virtual run calls it once its engines
// are done and dropped: writing the run directory allocates tens of MB on a large run (fat-tree k=12:
// its heap went from 86 MB live to 147 MB before the next collection), and collecting first leaves only
// the records live beneath it. A small run skips the collection's cost.
func collectIfLarge() {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Uint64() >= gcFloor {
		runtime.GC()
	}
}

// gcPercent is GOGC once the heap has passed gcFloor: Go's default. Less headroom bought little memory
// for much CPU on a fat-tree k=12 incast (GOGC 50: RSS 107 -> 98 MB for 19% more CPU; 25: 94 MB, +34%).
const gcPercent = 100

// lazyGC turns the collector off until the heap first reaches gcFloor, then hands it to gcPercent. Go's
// first collections come at a 4 MB heap and then at twice the live heap, so a short simulation (a
// fat-tree k=4 incast: 15,000 packets) spent a quarter of its CPU collecting a heap that never exceeds
// 16 MB. The first collection comes from a memory limit at the floor, and a finalizer on an object only
// that collection frees switches to gcPercent: no goroutine polls the heap. A user who sets GOGC or
// GOMEMLIMIT keeps exactly what they asked for.
func lazyGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	// The limit counts all the runtime's memory (spans, stacks, free pages), about half again the heap
	// at this size: the first collection comes at a 15-16 MB heap (gctrace, fat-tree k=8).
	debug.SetMemoryLimit(gcFloor + gcFloor/2)
	// A pointer field keeps it out of the tiny allocator, whose blocks may outlive the object.
	sentinel := &struct{ p *byte }{}
	runtime.SetFinalizer(sentinel, func(*struct{ p *byte }) {
		debug.SetGCPercent(gcPercent)
		debug.SetMemoryLimit(math.MaxInt64)
	})
}
