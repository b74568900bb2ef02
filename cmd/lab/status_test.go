package main

import (
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/harness/nslink"
)

// TestLabStateOfAKilledRun: a run's lab whose run is gone (SIGKILL: no teardown) is dead and says how to
// clean up (it said "up"); a lab up whose process exited by design is still up.
func TestLabStateOfAKilledRun(t *testing.T) {
	full := nslink.LabStatus{Lab: "fl-mend-nosuch", Complete: true, Namespaces: 4, NamespacesPresent: 4, Links: 3, LinksPresent: 3}
	run := full
	run.BoundToPID = true
	if got := labState(run); got != "dead (run killed; `lab down fl-mend-nosuch` cleans up)" {
		t.Errorf("a killed run's lab: %q", got)
	}
	run.PIDAlive = true
	if got := labState(run); got != "up (running)" {
		t.Errorf("a running run's lab: %q", got)
	}
	if got := labState(full); got != "up" {
		t.Errorf("a bare lab up after its process exited: %q", got)
	}
	// A run killed with its agents recorded says dead too, not "down" as a killed live lab's does.
	run.PIDAlive, run.Recorded = false, 2
	if got := labState(run); !strings.HasPrefix(got, "dead (run killed") {
		t.Errorf("a killed run's lab with its agents gone: %q", got)
	}
}
