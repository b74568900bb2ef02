package netns

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// The coordinator's real-time thread goes back to the policy, priority and nice value it had when its
// run ends (the goroutine may be the main one, which goes on to the next lab of a sweep), not to
// SCHED_OTHER at nice 0; a thread already real-time above the coordinator's priority is left alone.
func TestRealtimeThreadUndone(t *testing.T) {
	runtime.LockOSThread() // keeps the thread ours across the undo, to look at it after
	defer runtime.UnlockOSThread()
	orig, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.SchedSetAttr(0, orig, 0)
	for _, before := range []unix.SchedAttr{
		{Policy: unix.SCHED_NORMAL, Nice: 7},
		{Policy: unix.SCHED_BATCH, Nice: 3},
		{Policy: unix.SCHED_RR, Priority: 1},
		{Policy: unix.SCHED_FIFO, Priority: 5}, // above the coordinator's 2: untouched
	} {
		before.Size = unix.SizeofSchedAttr
		if err := unix.SchedSetAttr(0, &before, 0); err != nil {
			t.Logf("policy %d: %v (not allowed here)", before.Policy, err)
			continue
		}
		undo := realtimeThread(2)
		during, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if before.Policy != unix.SCHED_FIFO && during.Policy != unix.SCHED_FIFO {
			undo()
			t.Skipf("no SCHED_FIFO here (policy %d): nothing to undo", during.Policy)
		}
		if before.Policy == unix.SCHED_FIFO && during.Priority != before.Priority {
			t.Errorf("a thread at SCHED_FIFO %d was moved to %d", before.Priority, during.Priority)
		}
		undo()
		after, err := unix.SchedGetAttr(0, 0)
		if err != nil || after.Policy != before.Policy || after.Priority != before.Priority || after.Nice != before.Nice {
			t.Errorf("before the run policy %d priority %d nice %d, after it %d %d %d (%v)", before.Policy,
				before.Priority, int32(before.Nice), after.Policy, after.Priority, int32(after.Nice), err)
		}
	}
}
