package virtual_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/monitor"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/records"
)

// parallelCases end each way a run ends (every flow done, its end, a deadlock, idle) with pauses, drops
// and completions at shared instants; the devices are dealt to parts by node index, so most links
// cross between parts: the hardest split for the hand-over, not a good one.
func parallelCases(t *testing.T) map[string]string {
	ring, err := os.ReadFile("../../lab/spec/testdata/ring-deadlock-pfc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"pfc incast, stops when done": `
name: p-incast
topology: {family: fattree, k: 4, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: pfc}
host: {transport: gbn, cc: none}
workload: [{kind: incast, senders: 15, size: 100KB, receiver: h0, at: 0s}]
duration: 5ms
`,
		"lossy websearch, runs to its end": `
name: p-web
seed: 3
topology: {family: fattree, k: 4, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: lossy, buffer: 300KB, ecn: {kmin: 20KB, kmax: 200KB, pmax: 0.2}}
host: {transport: gbn, cc: dcqcn, mtu: 1000}
workload: [{kind: poisson, cdf: websearch, load: 0.6, duration: 300us}]
duration: 400us
stop: false
`,
		"permutation, mixed delays, times out": `
name: p-perm
topology: {family: fattree, k: 4, link: {rate: 100Gbps, delay: 700ns}}
switch: {flow_control: pfc}
host: {transport: gbn, cc: none, mtu: 1000}
workload: [{kind: permutation, size: 300KB, at: 0s}]
duration: 40us
`,
		// Flows that wait for others: a parameter server's rounds and MoE layers, released on the part
		// of their completions (runParts keeps each flow's source with its predecessors').
		"ps, stops when done": `
name: p-ps
topology: {family: fattree, k: 4, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: pfc}
host: {transport: lossless}
workload: [{kind: ps, server: h0, workers: 6, push_size: 60KB, broadcast_size: 30KB, rounds: 3, at: 0s}]
duration: 5ms
`,
		"moe, stops when done": `
name: p-moe
seed: 2
topology: {family: fattree, k: 4, link: {rate: 100Gbps, delay: 700ns}}
switch: {flow_control: pfc}
host: {transport: lossless}
workload: [{kind: moe, experts: 8, top_k: 2, tokens: 32, token_size: 4KB, zipf: 1.0, layers: 3, at: 0s}]
duration: 5ms
`,
		// The monitor's stall is set off its 50 us grid for this one (runParts).
		"pfc ring deadlock": strings.NewReplacer("dilation: 1000", "dilation: 1", "duration: 10ms", "duration: 2.2ms",
			"relay_pfc: pass-through", "relay_pfc: ingress").Replace(string(ring)),
	}
}

// TestParallelSameRecords: a fabric split into 2, 3 and 5 parts gives the sequential run's result and
// records, in the order the run files write them. Run it with -race: the parts run on goroutines.
func TestParallelSameRecords(t *testing.T) {
	for name, yaml := range parallelCases(t) {
		t.Run(name, func(t *testing.T) {
			want, wantLog := runParts(t, yaml, 1)
			// Each case covers what its name says.
			switch {
			case strings.Contains(name, "pfc") && len(wantLog.Pauses) == 0,
				strings.Contains(name, "lossy") && len(wantLog.Drops) == 0,
				strings.Contains(name, "stops when done") && !want.AllDone,
				strings.Contains(name, "times out") && !want.TimedOut,
				strings.Contains(name, "deadlock") && !want.Deadlock.Detected,
				(strings.HasPrefix(name, "ps") || strings.HasPrefix(name, "moe")) && !want.AllDone:
				t.Fatalf("the sequential run does not cover the case: %+v, %d pauses, %d drops", want, len(wantLog.Pauses), len(wantLog.Drops))
			}
			for _, n := range []int{2, 3, 5} {
				got, log := runParts(t, yaml, n)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%d parts: result %+v, sequential %+v", n, got, want)
				}
				if d := diffLogs(wantLog, log); d != "" {
					t.Errorf("%d parts: %s", n, d)
				}
			}
		})
	}
}

// runParts runs yaml's lab split into n parts by node index (n = 1: New's sequential fabric).
func runParts(t *testing.T, yaml string, n int) (virtual.Result, *records.Log) {
	t.Helper()
	l := buildLab(t, yaml)
	var f *virtual.Fabric
	var err error
	if n == 1 {
		f, err = virtual.New(l)
	} else {
		parts := keepDependencies(l, n)
		var split virtual.Split
		f, split, err = virtual.NewParallel(l, parts)
		if err == nil && split.Parts != n {
			t.Fatalf("%d parts asked, %d made", n, split.Parts)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(yaml, "ring-deadlock") {
		f.Monitor = monitor.New(l.Graph, monitor.Config{Stall: 137 * clock.Microsecond})
	}
	res := f.Run(context.Background())
	return res, f.Log
}

// diffLogs compares two logs as the run files see them: flows by ID, per-device records by time and
// device (stable: a device's own order kept), counters by device; violations, reorders and faults as
// they are.
func diffLogs(a, b *records.Log) string {
	norm := func(l *records.Log) records.Log {
		c := *l
		c.Flows = slices.Clone(l.Flows)
		slices.SortStableFunc(c.Flows, func(x, y records.Flow) int { return cmp.Compare(x.ID, y.ID) })
		c.Pauses = slices.Clone(l.Pauses)
		slices.SortStableFunc(c.Pauses, func(x, y records.Pause) int { return cmp.Or(cmp.Compare(x.At, y.At), cmp.Compare(x.Device, y.Device)) })
		c.Drops = slices.Clone(l.Drops)
		slices.SortStableFunc(c.Drops, func(x, y records.Drop) int { return cmp.Or(cmp.Compare(x.At, y.At), cmp.Compare(x.Device, y.Device)) })
		c.Counters = slices.Clone(l.Counters)
		slices.SortStableFunc(c.Counters, func(x, y records.Counters) int { return cmp.Compare(x.Device, y.Device) })
		c.Links = slices.Clone(l.Links)
		slices.SortStableFunc(c.Links, func(x, y records.LinkBytes) int {
			return cmp.Or(cmp.Compare(x.Device, y.Device), cmp.Compare(x.Port, y.Port), cmp.Compare(x.At, y.At))
		})
		return c
	}
	x, y := norm(a), norm(b)
	for _, f := range []struct {
		name string
		a, b any
	}{
		{"flows", x.Flows, y.Flows}, {"pauses", x.Pauses, y.Pauses}, {"drops", x.Drops, y.Drops},
		{"samples", x.Samples, y.Samples}, {"counters", x.Counters, y.Counters}, {"links", x.Links, y.Links},
		{"flow bytes", x.FlowRx, y.FlowRx}, {"meter bin", x.MeterBin, y.MeterBin},
		{"violations", x.Violations, y.Violations}, {"reorders", x.Reorders, y.Reorders}, {"faults", x.Faults, y.Faults},
	} {
		if !reflect.DeepEqual(f.a, f.b) {
			return fmt.Sprintf("%s differ", f.name)
		}
	}
	return ""
}

// TestParallelZeroDelayKeptTogether: a zero-delay link between parts would leave no lookahead; its ends
// go to one part, and the run still matches the sequential one.
func TestParallelZeroDelayKeptTogether(t *testing.T) {
	yaml := `
name: p-zero
topology: {family: fattree, k: 4, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: pfc}
host: {transport: gbn, cc: none}
workload: [{kind: incast, senders: 7, size: 50KB, receiver: h0, at: 0s}]
duration: 1ms
`
	build := func() *lab.Lab {
		l := buildLab(t, yaml)
		// The spec refuses a zero delay; a topology file's links may carry one. Host links get it here.
		for i, lk := range l.Graph.Links {
			if l.Graph.Nodes[lk.A.Node].Name[0] == 'h' || l.Graph.Nodes[lk.B.Node].Name[0] == 'h' {
				l.Graph.Links[i].Delay = 0
			}
		}
		return l
	}
	seq, err := virtual.New(build())
	if err != nil {
		t.Fatal(err)
	}
	want := seq.Run(context.Background())
	l := build()
	parts := map[int]int{}
	for v := range l.Graph.Nodes {
		parts[v] = v % 2
	}
	f, split, err := virtual.NewParallel(l, parts)
	if err != nil {
		t.Fatal(err)
	}
	if split.Parts != 2 || split.Kept == 0 || split.Lookahead <= 0 {
		t.Fatalf("split %+v: host links of zero delay kept inside parts, the rest cut", split)
	}
	got := f.Run(context.Background())
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("result %+v, sequential %+v", got, want)
	}
	if d := diffLogs(seq.Log, f.Log); d != "" {
		t.Fatal(d)
	}
}

func hasAfter(l *lab.Lab) bool {
	for _, fp := range l.Flows {
		if len(fp.After) > 0 {
			return true
		}
	}
	return false
}

// keepDependencies deals the nodes to n parts by index, then moves every flow's source to the part of
// its predecessors' sources (the smallest node of their group), as netns.TrafficParts keeps them.
func keepDependencies(l *lab.Lab, n int) map[int]int {
	up := make([]int, len(l.Graph.Nodes))
	for i := range up {
		up[i] = i
	}
	var find func(int) int
	find = func(x int) int {
		for up[x] != x {
			x = up[x]
		}
		return x
	}
	src := map[uint32]int{}
	for _, fp := range l.Flows {
		src[fp.ID] = fp.SrcNode
	}
	for _, fp := range l.Flows {
		for _, a := range fp.After {
			x, y := find(fp.SrcNode), find(src[a])
			up[max(x, y)] = min(x, y)
		}
	}
	parts := map[int]int{}
	for v := range l.Graph.Nodes {
		parts[v] = find(v) % n
	}
	return parts
}

// TestParallelRefusesDependencyAcrossParts: a split that puts a flow's source and its predecessor's in
// different parts is refused, naming both, rather than run with releases out of place.
// It also shows that the ps and moe cases of TestParallelSameRecords hold dependencies.
func TestParallelRefusesDependencyAcrossParts(t *testing.T) {
	for _, name := range []string{"ps, stops when done", "moe, stops when done"} {
		l := buildLab(t, parallelCases(t)[name])
		if !hasAfter(l) {
			t.Fatalf("%s: no flow waits for another", name)
		}
		parts := map[int]int{}
		for v := range l.Graph.Nodes {
			parts[v] = v % 2
		}
		_, _, err := virtual.NewParallel(l, parts)
		if err == nil || !strings.Contains(err.Error(), "waits for flow") || !strings.Contains(err.Error(), "another part") {
			t.Fatalf("%s: err %v, want a refusal naming the dependency across parts", name, err)
		}
		if _, _, err := virtual.NewParallel(l, keepDependencies(l, 2)); err != nil {
			t.Fatalf("%s: dependencies kept in one part: %v", name, err)
		}
	}
}

// TestParallelFaultAtRelease: a fault due at the very picosecond a flow is released fires first on one
// clock (it was scheduled before any release) and split alike: the window ends before the part's
// release, the fault fires between windows, then the release. Here the released flow's own link goes
// down then and its frames are dropped as they leave. (The engines give the two orders the same
// records here, a frame leaving only at the end of its serialization; the test holds the run that
// takes the tie to the sequential one's, events and records.)
func TestParallelFaultAtRelease(t *testing.T) {
	base := parallelCases(t)["ps, stops when done"]
	build := func(yaml string, at clock.Time) *lab.Lab {
		l := buildLab(t, yaml)
		for i := range l.Faults {
			l.Faults[i].At = at
		}
		return l
	}
	// The first flow released by a completion, and where the sequential run started it.
	l := build(base, 0)
	var dep lab.FlowPlan
	for _, fp := range l.Flows {
		if len(fp.After) > 0 {
			dep = fp
			break
		}
	}
	seq, err := virtual.New(l)
	if err != nil {
		t.Fatal(err)
	}
	seq.Run(context.Background())
	var at clock.Time = -1
	for _, fr := range seq.Log.Flows {
		if fr.ID == dep.ID {
			at = fr.Start
		}
	}
	if at <= 0 {
		t.Fatalf("flow %d (after %v) never started", dep.ID, dep.After)
	}
	g := l.Graph
	peer := g.Peer(dep.SrcNode, 0)
	yaml := base + fmt.Sprintf("faults:\n  - {at: 1us, link: [%s, %s], state: down}\n", g.Nodes[dep.SrcNode].Name, g.Nodes[peer.Node].Name)
	seq, err = virtual.New(build(yaml, at))
	if err != nil {
		t.Fatal(err)
	}
	want := seq.Run(context.Background())
	dropped := false
	for _, d := range seq.Log.Drops {
		dropped = dropped || d.At >= at && d.At < at+clock.Microsecond && int(d.Device) == dep.SrcNode
	}
	if !dropped {
		t.Fatalf("the sequential run dropped nothing of %s within 1 us of %v: the fault at the release did not act", g.Nodes[dep.SrcNode].Name, at)
	}
	for _, n := range []int{2, 3} {
		lp := build(yaml, at)
		f, _, err := virtual.NewParallel(lp, keepDependencies(lp, n))
		if err != nil {
			t.Fatal(err)
		}
		got := f.Run(context.Background())
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%d parts: result %+v, sequential %+v", n, got, want)
		}
		if d := diffLogs(seq.Log, f.Log); d != "" {
			t.Errorf("%d parts: %s", n, d)
		}
	}
}
