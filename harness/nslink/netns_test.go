package nslink

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/harness/nslink/nstest"
	"github.com/fabriclab/fabriclab/lab/topo"
)

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"a", "lab1", "my-lab", "0", "abcdefghijklmnop"} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-a", "a-", "A", "a_b", "a.b", "abcdefghijklmnopq", "a/b"} {
		if err := ValidateName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestUpDownTiny(t *testing.T) {
	nstest.NeedRoot(t)
	name := "ut-tiny"
	g := nstest.Tiny()
	lab, err := Up(context.Background(), name, g, Options{MTU: 9000})
	if err != nil {
		t.Fatal(err)
	}
	defer Down(name)
	for i, n := range g.Nodes {
		h, err := lab.Handle(n.Name)
		if err != nil {
			t.Fatal(err)
		}
		links, err := h.LinkList()
		h.Close()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, l := range links {
			names = append(names, l.Attrs().Name)
			if l.Attrs().Name == "lo" {
				continue
			}
			if l.Attrs().MTU != 9000 || l.Attrs().TxQLen != DefaultTxQueueLen || l.Attrs().RawFlags&unix.IFF_LOWER_UP == 0 {
				// IFF_LOWER_UP (up and carrier) is immediate; OperState lags behind through linkwatch.
				t.Errorf("%s %s: mtu %d qlen %d flags %x", n.Name, l.Attrs().Name, l.Attrs().MTU, l.Attrs().TxQLen, l.Attrs().RawFlags)
			}
		}
		if len(names) != 1+len(g.Nodes[i].Ports) {
			t.Errorf("%s has links %v", n.Name, names)
		}
		o, err := lab.Offloads(n.Name, "p0")
		if err != nil {
			t.Fatal(err)
		}
		if o.TxChecksum || o.TSO || o.GSO || o.GRO || len(o.On) > 0 {
			t.Errorf("%s p0 offloads %+v", n.Name, o)
		}
	}
	// IPv6 is off inside: no link-local addresses on the ports.
	if err := lab.Do("s0", func() error {
		b, err := os.ReadFile("/proc/sys/net/ipv6/conf/p0/disable_ipv6")
		if err == nil && strings.TrimSpace(string(b)) != "1" {
			return fmt.Errorf("disable_ipv6 on s0 p0 is %q", b)
		}
		return err
	}); err != nil {
		t.Error(err)
	}
	// A panic inside the namespace comes back as an error, and the process goes on.
	if err := lab.Do("s0", func() error { panic("boom") }); err == nil || !strings.Contains(err.Error(), "panic in namespace") {
		t.Errorf("panic in Do: %v", err)
	}
	// A second Up of the same name is refused.
	if _, err := Up(context.Background(), name, g, Options{}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second up: %v", err)
	}
	sts, errs := Status()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	found := false
	for _, s := range sts {
		if s.Lab == name {
			found = true
			if s.NamespacesPresent != 5 || s.LinksPresent != 4 || !s.Complete {
				t.Errorf("status %+v", s)
			}
		}
	}
	if !found {
		t.Fatal("status lacks lab")
	}
	if err := Down(name); err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Nodes {
		if _, err := os.Lstat(lab.NSPath(n.Name)); err == nil {
			t.Errorf("%s still there", lab.NSPath(n.Name))
		}
	}
	if _, err := os.Stat(stateDir(name)); err == nil {
		t.Error("state dir still there")
	}
}

// A namespace that exists under a name the lab needs is an error and is left alone.
func TestClashIsErrorNotDeletion(t *testing.T) {
	nstest.NeedRoot(t)
	name := "ut-clash"
	foreign := NSName(name, "s0")
	c, err := createNS(foreign, false, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	c.close()
	defer deleteNS(foreign, 0, "someone-else")
	_, err = Up(context.Background(), name, nstest.Tiny(), Options{})
	if err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("want refusal, got %v", err)
	}
	if ino, _ := nsIno(foreign); ino == 0 {
		t.Fatal("foreign namespace was removed")
	}
	if _, err := os.Stat(statePath(name)); err == nil {
		t.Fatal("state file left behind")
	}
}

// Cancelling the context during bring-up removes what was made.
func TestCancelCleansUp(t *testing.T) {
	nstest.NeedRoot(t)
	name := "ut-cancel"
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := Up(ctx, name, nstest.NDCHand(4), Options{Workers: 1, Progress: func(string, int, int, time.Duration) {
		n++
		if n == 1 {
			cancel()
		}
	}})
	if err == nil {
		Down(name)
		t.Fatal("up succeeded despite cancel")
	}
	m, _ := filepath.Glob(filepath.Join(NetnsDir, "fl-"+name+"-*"))
	if len(m) != 0 {
		t.Fatalf("left %v", m)
	}
	if _, err := os.Stat(stateDir(name)); err == nil {
		t.Fatal("state dir left")
	}
}

// TestMeasureNDC81 prints how long NDC(8,1) (80 namespaces, 128 links) takes to come up and go down.
// Run: FL_MEASURE=3 go test -run TestMeasureNDC81 -v ./harness/netns
func TestMeasureNDC81(t *testing.T) {
	nstest.NeedRoot(t)
	runs := 0
	fmt.Sscan(os.Getenv("FL_MEASURE"), &runs)
	if runs == 0 {
		t.Skip("set FL_MEASURE=<runs> to measure")
	}
	g, err := topo.Build("ndc", map[string]string{"n": "8", "k": "1"})
	if err != nil {
		g = nstest.NDCHand(8)
	}
	workers := 0
	fmt.Sscan(os.Getenv("FL_WORKERS"), &workers)
	for r := 0; r < runs; r++ {
		t0 := time.Now()
		phases := []string{}
		_, err := Up(context.Background(), "ut-ndc81", g, Options{Workers: workers, Progress: func(p string, _, _ int, d time.Duration) {
			phases = append(phases, fmt.Sprintf("%s %v", p, d.Round(time.Millisecond)))
		}})
		up := time.Since(t0)
		if err != nil {
			t.Fatal(err)
		}
		t1 := time.Now()
		if err := Down("ut-ndc81"); err != nil {
			t.Fatal(err)
		}
		down := time.Since(t1)
		t.Logf("run %d: %d namespaces, %d links: up %v (%s), down %v", r+1, len(g.Nodes), len(g.Links),
			up.Round(time.Millisecond), strings.Join(phases, ", "), down.Round(time.Millisecond))
	}
}

// writeRawState writes st as lab's state file without any check, as a crash or a hand edit could leave it.
func writeRawState(t *testing.T, st State) {
	t.Helper()
	if err := writeState(&st); err != nil {
		t.Fatal(err)
	}
}

// A state file naming anything outside the lab's own names (a path out of NetnsDir, another lab's
// namespace, a link to a namespace it does not list) is refused by Down and Status, and blinds neither
// to the other labs.
func TestStateNamesChecked(t *testing.T) {
	nstest.NeedRoot(t)
	canary := filepath.Join(t.TempDir(), "canary")
	if err := os.WriteFile(canary, []byte("not the lab's"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(NetnsDir, canary)
	if err != nil {
		t.Fatal(err)
	}
	bad := []State{
		{Lab: "ut-bad1", Namespaces: []NSEntry{{Name: rel, Device: "h0"}}},
		{Lab: "ut-bad2", Namespaces: []NSEntry{{Name: "fl-ut-bad2-../../x", Device: "../../x"}}},
		{Lab: "ut-bad3", Namespaces: []NSEntry{{Name: "fl-other-h0", Device: "h0"}}},
		{Lab: "ut-bad4", Namespaces: []NSEntry{{Name: "fl-ut-bad4-h0", Device: "h0"}},
			Links: []LinkEntry{{A: LinkEnd{NS: "fl-ut-bad4-h0", Ifname: "p0"}, B: LinkEnd{NS: "fl-x-h1", Ifname: "p0"}}}},
	}
	for _, st := range bad {
		writeRawState(t, st)
		defer os.RemoveAll(stateDir(st.Lab))
		if err := Down(st.Lab); err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("%s: Down: want a refusal, got %v", st.Lab, err)
		}
	}
	if _, err := os.Stat(canary); err != nil {
		t.Fatalf("the file a bad state file named was touched: %v", err)
	}
	good := "ut-good"
	if _, err := Up(context.Background(), good, nstest.Tiny(), Options{}); err != nil {
		t.Fatal(err)
	}
	defer Down(good)
	sts, errs := Status()
	if len(errs) < len(bad) {
		t.Errorf("want one error per bad state file, got %v", errs)
	}
	found := false
	for _, s := range sts {
		found = found || s.Lab == good
	}
	if !found {
		t.Error("a bad state file hid a good lab from Status")
	}
}

// The crash window of Up: the state file lists a namespace name before it is made and records its inode
// after. Down removes a namespace of that name only if it carries the lab's mark; someone else's, made
// in the window, is left alone.
func TestNoInodeDeletedOnlyIfOurs(t *testing.T) {
	nstest.NeedRoot(t)
	if err := ensureNetnsDir(); err != nil {
		t.Fatal(err)
	}
	name := "ut-window"
	st := State{Lab: name, Token: "0123456789abcdef", Namespaces: []NSEntry{
		{Name: NSName(name, "h0"), Device: "h0"}, // ours, made before the crash, inode not recorded
		{Name: NSName(name, "h1"), Device: "h1"}, // someone else's, made in the window
		{Name: NSName(name, "h2"), Device: "h2"}, // our placeholder file, crash before the mount
		{Name: NSName(name, "h3"), Device: "h3"}, // someone else's plain file
	}}
	writeRawState(t, st)
	defer os.RemoveAll(stateDir(name))
	ours, err := createNS(NSName(name, "h0"), false, st.Mark())
	if err != nil {
		t.Fatal(err)
	}
	ours.close()
	foreign, err := createNS(NSName(name, "h1"), false, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	foreign.close()
	defer deleteNS(NSName(name, "h1"), 0, "someone-else")
	if err := os.WriteFile(filepath.Join(NetnsDir, NSName(name, "h2")), []byte(st.Mark()+"\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(NetnsDir, NSName(name, "h3")), []byte("x\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(filepath.Join(NetnsDir, NSName(name, "h3")))

	notes, err := DownNotes(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("notes: %q", notes)
	for _, gone := range []string{"h0", "h2"} {
		if _, err := os.Lstat(filepath.Join(NetnsDir, NSName(name, gone))); err == nil {
			t.Errorf("%s (ours) is still there", gone)
		}
	}
	if ino, _ := nsIno(NSName(name, "h1")); ino == 0 {
		t.Error("someone else's namespace was removed")
	}
	if _, err := os.Lstat(filepath.Join(NetnsDir, NSName(name, "h3"))); err != nil {
		t.Error("someone else's file was removed")
	}
	if all := strings.Join(notes, "\n"); len(notes) != 2 || !strings.Contains(all, "h1") || !strings.Contains(all, "h3") {
		t.Errorf("notes %q: want h1 and h3 named as left alone", notes)
	}
}

// A state file that records a foreign namespace's inode (edited, or copied from another lab) does not
// get it deleted: the lab's mark is checked on every namespace, not only on those without an inode
// (issue 23, defect 5).
func TestRecordedInodeStillNeedsMark(t *testing.T) {
	nstest.NeedRoot(t)
	if err := ensureNetnsDir(); err != nil {
		t.Fatal(err)
	}
	name := "ut-foreignino"
	foreignName := NSName(name, "h1")
	foreign, err := createNS(foreignName, false, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	foreign.close()
	defer deleteNS(foreignName, 0, "someone-else")
	ino, err := nsIno(foreignName)
	if err != nil || ino == 0 {
		t.Fatalf("inode %d: %v", ino, err)
	}
	st := State{Lab: name, Token: "0123456789abcdef", Namespaces: []NSEntry{{Name: foreignName, Device: "h1", Ino: ino}}}
	writeRawState(t, st)
	defer os.RemoveAll(stateDir(name))
	notes, err := DownNotes(name)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := nsIno(foreignName); got != ino {
		t.Fatalf("the foreign namespace (inode %d) was deleted; notes %q", ino, notes)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], foreignName) {
		t.Errorf("notes %q: want the foreign namespace named as left alone", notes)
	}
}
