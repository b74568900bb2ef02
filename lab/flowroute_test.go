package lab_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/spec"
)

const flowRouteSpec = `
name: flowroute
topology: {family: xpander, switches: 8, degree: 3, hosts_per_switch: 2, seed: 1}
switch: {flow_control: lossy}
host: {transport: irn}
routing: {algorithm: %s}
workload:
  - kind: flows
    list:
      - {src: h0, dst: h15, size: 50KB, at: 0s}
      - {src: h0, dst: h15, size: 1MB, at: 0s}
      - {src: h1, dst: h14, size: 1MB, at: 0s, path: [h1, s0, s7, h14]}
duration: 10ms
`

// The lab stamps a FlowRouter's choice: vlb as the flow's source route, hybrid as tables first and the
// VLB route past the threshold; a pinned path still wins. (s0 and s7 are neighbours in this draw.)
func TestFlowRouterStamped(t *testing.T) {
	for _, alg := range []string{"vlb", "hybrid"} {
		l, err := buildLab(t, fmt.Sprintf(flowRouteSpec, alg))
		if err != nil {
			t.Fatal(err)
		}
		small, big, pinned := l.Flows[0], l.Flows[1], l.Flows[2]
		if len(pinned.Route) != 3 || pinned.Then != nil {
			t.Fatalf("%s: pinned flow route %v then %v, want its 3-hop path and no second route", alg, pinned.Route, pinned.Then)
		}
		for _, fp := range []struct {
			name string
			id   int
		}{{"small", 0}, {"big", 1}} {
			if err := l.Flows[fp.id].Path.Validate(l.Graph); err != nil {
				t.Fatalf("%s %s flow: %v", alg, fp.name, err)
			}
		}
		switch alg {
		case "vlb":
			if small.Route == nil || big.Route == nil || small.Then != nil || big.Then != nil {
				t.Fatalf("vlb: routes %v %v, then %v %v; want both source-routed once", small.Route, big.Route, small.Then, big.Then)
			}
		case "hybrid":
			if small.Route != nil || small.Then != nil {
				t.Fatalf("hybrid 50 KB flow: route %v then %v, want the tables only (Q = 100 KB)", small.Route, small.Then)
			}
			nf := big.NICFlow()
			if big.Route != nil || len(big.Then) < 4 || big.ThenAfter != route.DefaultHybridThreshold ||
				nf.After != route.DefaultHybridThreshold || len(nf.Then) != len(big.Then) {
				t.Fatalf("hybrid 1 MB flow: route %v then %v after %d (NIC: %v after %d); want tables, then a VLB route after 100000 B",
					big.Route, big.Then, big.ThenAfter, nf.Then, nf.After)
			}
		}
	}
}

// routing.flowlet_gap reaches every switch; a negative gap is refused naming the field.
func TestFlowletGapReachesSwitches(t *testing.T) {
	const gapSpec = `
name: flowlets
topology: {family: xpander, switches: 8, degree: 3, hosts_per_switch: 2, seed: 1}
switch: {flow_control: lossy}
host: {transport: irn}
routing: {algorithm: shortest, flowlet_gap: %s}
workload: [{kind: flows, list: [{src: h0, dst: h15, size: 50KB, at: 0s}]}]
duration: 1ms
`
	l, err := buildLab(t, fmt.Sprintf(gapSpec, "50us"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sw := range l.Switches {
		if sw.Config.FlowletGap != 50*clock.Microsecond {
			t.Fatalf("switch %d: flowlet gap %v, want 50us", sw.Node, sw.Config.FlowletGap)
		}
	}
	if _, err := spec.Parse([]byte(fmt.Sprintf(gapSpec, "-1us"))); err == nil || !strings.Contains(err.Error(), "routing.flowlet_gap") {
		t.Fatalf("a negative flowlet gap was accepted or the error does not name the field: %v", err)
	}
}
