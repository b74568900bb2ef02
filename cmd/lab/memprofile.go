package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"

	"github.com/fabriclab/fabriclab/outfile"
)

// startPeakHeapProfile writes, when the returned stop is called, the heap profile as of the garbage
// collection that found the largest live heap during the run. A profile taken at the end would miss what
// a run holds only while it is busy (packets queued behind pauses, in-flight windows), which is what
// decides its peak memory. Go records the in-use profile at each collection, so polling the live-heap
// metric and copying the profile whenever it grows catches the peak to within one poll.
func startPeakHeapProfile(path string) (stop func() error, err error) {
	// Checked now, before the run; written at the end (outfile: a new file only, never a user's).
	if err := outfile.Check(path, outfile.New); err != nil {
		return nil, fmt.Errorf("--memprofile: %w", err)
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var best bytes.Buffer
	var peak uint64
	snapshot := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > peak || best.Len() == 0 {
			peak = v
			best.Reset()
			_ = pprof.Lookup("heap").WriteTo(&best, 0)
		}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				snapshot()
			}
		}
	}()
	return func() error {
		close(done)
		<-finished
		snapshot()
		if err := outfile.WriteBytes(path, outfile.New, best.Bytes()); err != nil {
			return fmt.Errorf("--memprofile: %w", err)
		}
		fmt.Fprintf(os.Stderr, "memprofile: peak live heap %.1f MB, profile of that collection in %s\n", float64(peak)/1e6, path)
		return nil
	}, nil
}
