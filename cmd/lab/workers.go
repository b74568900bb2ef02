package main

import (
	"fmt"
	"runtime"

	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
)

// workers (--workers) is how many goroutines a virtual run splits its fabric over (0: chosen by
// chooseWorkers). Every output is the same whatever it is (harness/virtual parallel.go).
var workers int

// minHostsPerWorker is the fabric chooseWorkers gives a worker: below it a window of one lookahead holds
// too few events to pay for the hand-over at its edge (docs/performance.md §Parallel virtual runs).
const minHostsPerWorker = 128

// chooseWorkers says how many workers a virtual run of l gets, and why: asked if set, else as many as
// the Go scheduler has processors for (GOMAXPROCS, the cores unless limited) and the fabric has hosts
// to keep busy, and 1 unasked where flows wait for others: the split keeps each flow's source with its
// predecessors' (their release happens in the part of the completion), and a workload whose
// dependencies join every host (ps, moe) puts its hosts in one part, which leaves little to share.
func chooseWorkers(l *lab.Lab, asked int) (int, string) {
	if asked > 0 {
		return asked, fmt.Sprintf("%d worker(s), as asked", asked)
	}
	for _, f := range l.Flows {
		if len(f.After) > 0 {
			return 1, "1 worker: flows wait for others (after:), and the sources they join share a part; ask --workers N to split anyway"
		}
	}
	procs := runtime.GOMAXPROCS(0)
	if procs < 2 {
		return 1, "1 worker: one processor (GOMAXPROCS 1)"
	}
	fit := len(l.Hosts) / minHostsPerWorker
	if fit < 2 {
		return 1, fmt.Sprintf("1 worker: %d hosts, too few to gain from splitting (%d a worker at least)", len(l.Hosts), minHostsPerWorker)
	}
	n := min(procs, fit)
	return n, fmt.Sprintf("%d workers: %d processors (GOMAXPROCS), %d hosts (%d a worker at least)", n, procs, len(l.Hosts), minHostsPerWorker)
}

// newVirtualFabric builds l's fabric for n workers: split as the netns backend splits devices among
// agents (netns.TrafficParts: few expected frames between parts, balanced expected frame-hops).
func newVirtualFabric(l *lab.Lab, n int) (*virtual.Fabric, string, error) {
	if n <= 1 {
		f, err := virtual.New(l)
		return f, "", err
	}
	parts, _ := netns.TrafficPartsWithin(l, &netns.Dilated{Switches: l.Switches, Hosts: l.Hosts}, n, virtual.SplitSlack)
	f, split, err := virtual.NewParallel(l, parts)
	if err != nil {
		return nil, "", err
	}
	return f, split.String(), nil
}
