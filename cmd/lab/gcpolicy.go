package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
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

// lazyGC turns the collector off until the heap first reaches gcFloor, then hands it back to GOGC
// (100 unless the environment says otherwise). Go's first collections come at a 4 MB heap and then at
// twice the live heap, so a short simulation (a fat-tree k=4 incast: 15,000 packets) spent a quarter
// of its CPU collecting a heap that never exceeds 16 MB; a long one collects as before once
// past the floor. A user who sets GOGC or GOMEMLIMIT keeps exactly what they asked for.
func lazyGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	prev := debug.SetGCPercent(-1)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			time.Sleep(2 * time.Millisecond)
			metrics.Read(s)
			if s[0].Value.Uint64() >= gcFloor {
				debug.SetGCPercent(prev)
				return
			}
		}
	}()
}
