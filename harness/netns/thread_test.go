package netns

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// threadNamespaces maps the inode of every network namespace a thread of this process is in to the
// threads in it.
func threadNamespaces(t *testing.T) map[uint64][]string {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64][]string{}
	for _, p := range tasks {
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil {
			continue // the thread exited meanwhile
		}
		out[st.Ino] = append(out[st.Ino], strings.Split(p, "/")[4])
	}
	return out
}

// Two labs built one after the other in one process (a sweep on the netns backend): once the first is
// down, nothing of it is left, not even a namespace held by one of the process's threads. Namespaces
// are made on threads that enter them; Go discards such a thread when its goroutine ends locked, but
// not the main thread, which it parks: a namespace made there outlived its lab. A test binary's main
// goroutine mostly waits, so the main thread runs other goroutines, these among them.
func TestNoNamespaceOutlivesItsLab(t *testing.T) {
	needRoot(t)
	var home unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), &home); err != nil {
		t.Fatal(err)
	}
	for round, name := range []string{"ut-thr-a", "ut-thr-b"} {
		g := ndcHand(3)
		lab, err := Up(context.Background(), name, g, Options{})
		if err != nil {
			t.Fatal(err)
		}
		inos := map[uint64]string{}
		for _, n := range g.Nodes {
			var st unix.Stat_t
			if err := unix.Stat(lab.NSPath(n.Name), &st); err != nil {
				Down(name)
				t.Fatal(err)
			}
			inos[st.Ino] = n.Name
		}
		// Work in the namespaces as a run does: sockets opened inside them, on threads that go back.
		for _, n := range g.Nodes {
			_, err := lab.Offloads(n.Name, "p0")
			if err == nil {
				var pp *PacketPort
				if pp, err = OpenPacketPort(lab.NSPath(n.Name), "p0", 0); err == nil {
					pp.Close()
				}
			}
			if err != nil {
				Down(name)
				t.Fatal(err)
			}
		}
		if err := Down(name); err != nil {
			t.Fatal(err)
		}
		for ino, tids := range threadNamespaces(t) {
			if dev, ok := inos[ino]; ok {
				t.Errorf("round %d: threads %v of this process (pid %d) are still in %s's namespace (%s, inode %d) after its lab was removed",
					round, tids, unix.Getpid(), dev, lab.NSName(dev), ino)
			} else if ino != home.Ino {
				t.Errorf("round %d: threads %v of this process are in namespace inode %d, not the process's own (%d)", round, tids, ino, home.Ino)
			}
		}
		for _, n := range g.Nodes {
			if _, err := os.Lstat(lab.NSPath(n.Name)); err == nil {
				t.Errorf("round %d: %s still there", round, lab.NSPath(n.Name))
			}
		}
		if out, err := exec.Command("ip", "netns", "list").Output(); err == nil && strings.Contains(string(out), NSName(name, "")) {
			t.Errorf("round %d: ip netns still lists %s: %s", round, name, out)
		}
	}
}

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
