package portio

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/harness/nslink/nstest"

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
	nstest.NeedRoot(t)
	var home unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), &home); err != nil {
		t.Fatal(err)
	}
	for round, name := range []string{"ut-thr-a", "ut-thr-b"} {
		g := nstest.NDCHand(3)
		lab, err := nslink.Up(context.Background(), name, g, nslink.Options{})
		if err != nil {
			t.Fatal(err)
		}
		inos := map[uint64]string{}
		for _, n := range g.Nodes {
			var st unix.Stat_t
			if err := unix.Stat(lab.NSPath(n.Name), &st); err != nil {
				nslink.Down(name)
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
				nslink.Down(name)
				t.Fatal(err)
			}
		}
		if err := nslink.Down(name); err != nil {
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
		if out, err := exec.Command("ip", "netns", "list").Output(); err == nil && strings.Contains(string(out), nslink.NSName(name, "")) {
			t.Errorf("round %d: ip netns still lists %s: %s", round, name, out)
		}
	}
}
