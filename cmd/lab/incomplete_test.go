package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/report"
)

// TestIncompleteJudgedByLock: an unfinished run directory whose owner wrote it in another container or
// on another host (another host name, a PID meaningless here) is judged by the lock on its owner file:
// kept while the lock is held, removed once it is free (its owner died: a coordinator container killed).
func TestIncompleteJudgedByLock(t *testing.T) {
	dir := t.TempDir()
	d := filepath.Join(dir, ".run.incomplete-x")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	owner := filepath.Join(d, incompleteOwner)
	if err := os.WriteFile(owner, []byte("1 12345 a-container-elsewhere 00000000-boot flock\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(owner)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if s := incompleteState(d); s != "running" {
		t.Fatalf("owner file locked: %s, want running", s)
	}
	if removed, err := cleanIncomplete(dir, nil); err != nil || len(removed) != 0 {
		t.Fatalf("a held directory removed: %v %v", removed, err)
	}
	held.Close() // the owner dies
	if s := incompleteState(d); s != "stale" {
		t.Fatalf("owner file's lock free: %s, want stale", s)
	}
	if removed, err := cleanIncomplete(dir, nil); err != nil || len(removed) != 1 {
		t.Fatalf("a dead owner's directory kept: %v %v", removed, err)
	}
}

// TestMarkIncompleteHoldsItsLock: this process's own unfinished directory is running while it is
// marked, and leaves no owner file or lock once released.
func TestMarkIncompleteHoldsItsLock(t *testing.T) {
	d := t.TempDir()
	if err := markIncomplete(d); err != nil {
		t.Fatal(err)
	}
	if s := incompleteState(d); s != "running" {
		t.Fatalf("own directory: %s, want running", s)
	}
	if err := releaseIncomplete(d); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d, incompleteOwner)); !os.IsNotExist(err) {
		t.Fatalf("owner file after release: %v", err)
	}
	ents, _ := os.ReadDir(d)
	if len(ents) != 0 {
		t.Fatalf("left in the directory: %v", ents)
	}
}

// TestDeadRunCalledDead: a tree run's status file saying running, whose lab run --index process was
// SIGKILLed, is called died once nobody holds the run's lock (lab report says so, lab clean writes
// it), and not while its process holds it.
func TestDeadRunCalledDead(t *testing.T) {
	tree := t.TempDir()
	st := &report.RunStatus{Index: 3, Dir: "seed-3", Status: "running", Host: "pod-7", PID: 1, Started: time.Now().UTC()}
	if err := writeStatus(tree, st); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockRun(tree, st.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Orphaned(tree) {
		t.Fatal("a run whose process holds its lock called orphaned")
	}
	if reaped, err := reapStatus(report.StatusPath(tree, st.Dir)); reaped || err != nil {
		t.Fatalf("lab clean rewrote a running run's status: %v %v", reaped, err)
	}
	unlock() // the process dies
	if !st.Orphaned(tree) {
		t.Fatal("a run whose lock is free not called orphaned")
	}
	if reaped, err := reapStatus(report.StatusPath(tree, st.Dir)); !reaped || err != nil {
		t.Fatalf("lab clean left a dead run's status: %v %v", reaped, err)
	}
	got, err := report.ReadRunStatus(tree, st.Dir)
	if err != nil || got.Status != "died" || !strings.Contains(got.Error, "pid 1 on pod-7") {
		t.Fatalf("status after lab clean: %+v %v", got, err)
	}
}
