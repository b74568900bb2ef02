package nslink

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/fabriclab/fabriclab/harness/nslink/nstest"
)

// TestHoldKeepsDownAway is the vanished-namespace race of a live bring-up: Up used to drop the lab's
// lock when it returned, while `lab up` went on setting up kernel hosts in the namespaces, so a `lab
// down` (or a test suite's `lab down --all`) from another process removed them from under it ("open
// namespace of h459: failed to Statfs /run/netns/...: no such file or directory"). With Hold the lock
// stays until Release: a Down in the meantime is refused as busy and the namespaces stay usable. The
// second lock (DownNotes opens the lock file again) conflicts with the held one as another process's
// would: flock locks belong to the open file, not the process.
func TestHoldKeepsDownAway(t *testing.T) {
	nstest.NeedRoot(t)
	const name = "ut-hold"
	g := nstest.Tiny()
	l, err := Up(context.Background(), name, g, Options{Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			l.Release()
		}
		Down(name)
	}()
	if _, err := DownNotes(name); !errors.Is(err, ErrBusy) {
		t.Fatalf("Down during a held bring-up: %v, want the lab busy", err)
	}
	for _, n := range g.Nodes {
		if _, err := os.Lstat(l.NSPath(n.Name)); err != nil {
			t.Fatalf("%s gone while the bring-up held the lab: %v", n.Name, err)
		}
		h, err := l.Handle(n.Name)
		if err != nil {
			t.Fatalf("the bring-up cannot go on in %s: %v", n.Name, err)
		}
		h.Close()
	}
	l.Release()
	released = true
	if err := Down(name); err != nil {
		t.Fatalf("Down after Release: %v", err)
	}
	for _, n := range g.Nodes {
		if _, err := os.Lstat(l.NSPath(n.Name)); err == nil {
			t.Errorf("%s still there after Down", n.Name)
		}
	}
}

// A held bring-up that fails removes the lab under its own lock (Remove) and leaves the name free.
func TestHoldRemove(t *testing.T) {
	nstest.NeedRoot(t)
	const name = "ut-holdrm"
	g := nstest.Tiny()
	l, err := Up(context.Background(), name, g, Options{Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Remove(); err != nil {
		Down(name)
		t.Fatalf("Remove: %v", err)
	}
	for _, n := range g.Nodes {
		if _, err := os.Lstat(l.NSPath(n.Name)); err == nil {
			t.Errorf("%s still there after Remove", n.Name)
		}
	}
	l2, err := Up(context.Background(), name, g, Options{})
	if err != nil {
		t.Fatalf("the name is not free after Remove: %v", err)
	}
	Down(l2.Name)
}
