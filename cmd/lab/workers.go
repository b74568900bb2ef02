package main

import (
	"fmt"
	"runtime"

	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
)

// workers (--workers) is how many goroutines a virtual run splits its fabric over (0: chooseWorkers'
// default). Every output is the same whatever it is (harness/virtual parallel.go).
var workers int

// chooseWorkers says how many workers a virtual run of l gets, and why: asked if set, else 1. Whether a
// split pays depends on the events in a window of one lookahead, not on the fabric's size: on an idle
// 2-core VM (b9f1196, 2026-12-07) two workers ran the fat-tree k=16 and Dragonfly(4,8,4) permutations
// 3.18 and 2.04 times faster (575 windows of about 42,000 events), but the k=12 incast of
// lab/experiments/matched-htsim 1.6 times slower (4.0 s against 2.5 s: 10.5 million events in 36,700 windows of
// 1 us, about 290 each, so the barrier at each edge costs more than the halved work saves). Until
// the choice can forecast events per window, the user who knows the traffic asks.
func chooseWorkers(l *lab.Lab, asked int) (int, string) {
	if asked > 0 {
		return asked, fmt.Sprintf("%d worker(s), as asked", asked)
	}
	if runtime.GOMAXPROCS(0) < 2 {
		return 1, "1 worker: one processor (GOMAXPROCS 1)"
	}
	return 1, "1 worker (the default; --workers N splits: it pays where a lookahead window holds many events, as in a permutation, and costs where it holds few, as in an incast: docs/performance.md)"
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
