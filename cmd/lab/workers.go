package main

import (
	"fmt"
	"runtime"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/nodes"
)

// workers (--workers) is how many goroutines a virtual run splits its fabric over (0: chooseWorkers'
// default). Every output is the same whatever it is (harness/virtual parallel.go).
var workers int

// A split pays when a window of one lookahead holds enough events that the barrier at its edge (the
// parts hand their frames over, then wait for the slowest) is small beside the work: on the idle 2-core
// VM of 2026-12-07 two workers ran the fat-tree k=16 and Dragonfly(4,8,4) permutations 3.18 and 2.04
// times faster (about 42,000 events per 1 us window), but the k=12 incast of lab/experiments/matched-htsim
// 1.6 times slower (10.5 million events in 36,700 windows, about 290 each: its parts waited on each other
// at every edge, about 40-75 us a window). And the split itself (partitioning, one goroutine and one
// event queue per part) is a fixed cost that a short run does not earn back.
const (
	// windowEventsPerWorker is the forecast events per window each worker must get: 2 workers need 2,000,
	// seven times the incast's 290, a fifth of the k=8 permutation's forecast.
	windowEventsPerWorker = 1000
	// runEventsPerWorker is the forecast events of the whole run each worker must get: 2 workers need 5
	// million, more than the k=8 permutation (2.8 million, 1.3 s) and less than the k=12 one (9.5 million).
	runEventsPerWorker = 2.5e6
)

// chooseWorkers says how many workers a virtual run of l gets, and why: asked if set; else by the
// forecast of events per lookahead window and in all (forecastWindows), as many as the processors
// (GOMAXPROCS) and those two limits allow; 1 for flows that wait for others (the split keeps each
// dependency in one part, which leaves the other parts little: docs/architecture.md).
func chooseWorkers(l *lab.Lab, asked int) (int, string) {
	if asked > 0 {
		return asked, fmt.Sprintf("%d worker(s), as asked", asked)
	}
	for _, f := range l.Flows {
		if len(f.After) > 0 {
			return 1, "1 worker: flows wait for others (--workers N splits them all the same)"
		}
	}
	fc := forecastWindows(l)
	n := workersFor(fc, runtime.GOMAXPROCS(0))
	return n, fmt.Sprintf("workers %d: ~%.0f events per %g us window, ~%.1f million in all (forecast; %d processors; --workers N overrides)",
		n, fc.perWindow(), float64(fc.lookahead)/float64(clock.Microsecond), fc.events/1e6, runtime.GOMAXPROCS(0))
}

// workersFor is the default rule: the most workers, up to procs, each of which gets
// windowEventsPerWorker events of every window and runEventsPerWorker of the run; at least 1.
func workersFor(fc forecast, procs int) int {
	n := min(procs, int(fc.perWindow()/windowEventsPerWorker), int(fc.events/runEventsPerWorker))
	return max(n, 1)
}

// forecast is what a run of a lab is expected to cost the parallel backend: its events, and the windows
// of one lookahead its simulated time spans.
type forecast struct {
	events    float64
	windows   float64
	lookahead clock.Time
}

func (f forecast) perWindow() float64 { return f.events / max(f.windows, 1) }

// forecastWindows forecasts l's events and windows from its flows, before any runs. Events: two per
// expected frame-hop (the serialization's end and the delivery; netns.LinkFrames: every data frame and
// its acknowledgement on each hop of its route or ECMP sets), where BenchmarkMatched counts 20-24 per data
// packet. Time spanned: from the first flow's start to the latest of every flow's ideal completion and
// every link's busy time at line rate (all its expected data frames one way, MTU + 64 header bytes each:
// an incast's last hop), or the spec's end if the run does not stop when its flows are done. The
// lookahead is the shortest link delay, the most windows any split can have. Queueing beyond a link's
// busy time (an ECMP collision, a pause) is not forecast: a permutation's windows are undercounted
// (fat-tree k=16: 85 forecast, 575 run), which leaves it far above the threshold all the same.
func forecastWindows(l *lab.Lab) forecast {
	var fc forecast
	for _, lk := range l.Graph.Links {
		if lk.Delay > 0 && (fc.lookahead == 0 || lk.Delay < fc.lookahead) {
			fc.lookahead = lk.Delay
		}
	}
	if len(l.Flows) == 0 || fc.lookahead == 0 {
		return fc
	}
	mtu := nodes.DefaultMTU
	for _, h := range l.Hosts {
		mtu = max(mtu, h.Config.MTU)
	}
	first, end := l.Flows[0].At, clock.Time(0)
	for _, f := range l.Flows {
		first = min(first, f.At)
		end = max(end, f.At+f.Ideal)
	}
	for li, w := range netns.LinkFrames(l) {
		fc.events += 2 * w
		if r := l.Graph.Links[li].RateBps; r > 0 {
			end = max(end, first+clock.TxTime(int(w/2)*(mtu+64), r))
		}
	}
	if !l.Spec.StopWhenDone() || end > l.End {
		end = l.End
	}
	fc.windows = float64(end-first) / float64(fc.lookahead)
	return fc
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
