package virtual_test

import (
	"context"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
)

// topology.link.overhead lengthens every frame's serialization at every port: a 1000-packet flow
// through one switch takes at least 1000 x 24 B longer at 100 Gb/s with 24B than without.
func TestLinkOverheadActs(t *testing.T) {
	fct := func(overhead string) clock.Time {
		_, f := virtual.FabricOf(t, `name: overhead
topology: {family: fattree, k: 4, link: {rate: 100Gbps, delay: 1us, overhead: `+overhead+`}}
switch: {flow_control: pfc}
host: {transport: gbn, cc: none, mtu: 1000}
workload: [{kind: flows, list: [{src: h0, dst: h1, size: 1000000B, at: 0s}]}]
duration: 1s
`)
		if res := f.Run(context.Background()); !res.AllDone || len(f.Log.Flows) != 1 {
			t.Fatalf("overhead %s: the flow did not complete", overhead)
		}
		return f.Log.Flows[0].Finish - f.Log.Flows[0].Start
	}
	base, more := fct("0B"), fct("24B")
	min := clock.TxTime(1000*24, 100e9)
	if more-base < min || more-base > 2*min {
		t.Errorf("24B overhead lengthened the flow by %v (%v -> %v); serialization alone gives %v", more-base, base, more, min)
	}
}
