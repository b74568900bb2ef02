package live

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/harness/nslink"
)

// StopCluster ends a supervisor that no longer answers (here a sleep carrying the lab's token, as the
// supervisor does), recognised by the token its record holds, and removes the record. The record once
// held the bare token while the check looked for TokenEnv=token, so such a supervisor was left running.
func TestStopClusterEndsAHungSupervisor(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: writes under " + nslink.StateRoot)
	}
	name := fmt.Sprintf("stopt%d", os.Getpid()%100000)
	token, env := nslink.ProcessToken(name)
	sup := exec.Command("sleep", "60")
	sup.Env = append(os.Environ(), env)
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sup.Wait() }()
	defer sup.Process.Kill()
	// StopCluster looks at once, as a lab down racing a lab up does: /proc/PID/environ can still read
	// empty right after Start (exec lays out the new environment after vfork releases the parent; seen
	// in CI under load), and the token check reads it again until it is there (nslink.procHasEnv).
	dir := ClusterDir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "supervisor"), fmt.Appendf(nil, "%d\n%s\n", sup.Process.Pid, token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := StopCluster(name); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the supervisor still runs after StopCluster")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the record %s is still there (%v)", dir, err)
	}
}

// What a machine lost says of the others: never "removed from " and nothing.
func TestRemovedFromSaysWhat(t *testing.T) {
	for _, c := range []struct {
		others []string
		err    error
		want   string
	}{
		{nil, nil, "no other machine held a part of it"},
		{[]string{"m1", "m3"}, nil, "the lab was removed from m1, m3"},
		{[]string{"m1"}, errors.New("machine m1: lab x not down within a minute"), "removing it from m1 failed: machine m1: lab x not down within a minute"},
	} {
		if got := removedFrom(c.others, c.err); got != c.want {
			t.Errorf("removedFrom(%v, %v) = %q, want %q", c.others, c.err, got, c.want)
		}
	}
}
