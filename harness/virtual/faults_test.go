package virtual_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
)

func faultRun(t *testing.T, faults string) (*virtual.Fabric, virtual.Result) {
	t.Helper()
	y := `name: faults
topology: {family: fattree, k: 4, link: {rate: 10Gbps, delay: 1us}}
switch: {flow_control: lossy}
host: {transport: irn}
routing: {algorithm: shortest}
workload:
  - {kind: flows, list: [{src: h0, dst: h15, size: 2MB, at: 0s}]}
duration: 50ms
faults:
` + faults
	_, f := virtual.FabricOf(t, y)
	return f, f.Run(context.Background())
}

// One uplink of h0's edge switch fails mid-flow and comes back: ECMP moves the flow to the other, which
// completes; the faults are in the records at their times. Both uplinks down for good: it cannot.
func TestSpecFaultsReroute(t *testing.T) {
	f, res := faultRun(t, `  - {at: 200us, link: [s0, s8], state: down}
  - {at: 200us, link: [s0, s9], state: set, loss: 0.01, delay: 1us}
  - {at: 1ms, link: [s0, s8], state: up}
`)
	if !res.AllDone {
		t.Fatalf("the flow did not complete around one failed uplink: %+v", res)
	}
	ev := f.Log.Faults
	if len(ev) != 3 || ev[0].At != 200*clock.Microsecond || ev[0].State != "down" || ev[0].Reroutes == 0 || ev[2].At != clock.Millisecond {
		t.Fatalf("fault records: %+v", ev)
	}
	f, res = faultRun(t, `  - {at: 200us, link: [s0, s8], state: down}
  - {at: 200us, link: [s0, s9], state: down}
`)
	if res.AllDone {
		t.Fatal("the flow completed with both of h0's edge uplinks down")
	}
	var cut int
	for _, d := range f.Log.Drops {
		if d.Reason == "no-route" || d.Reason == "link-down" {
			cut++
		}
	}
	if cut == 0 {
		t.Fatalf("no frame dropped for the cut uplinks")
	}
}

func TestSpecFaultsRefused(t *testing.T) {
	for bad, want := range map[string]string{
		"  - {at: 1ms, link: [s0, s1], state: down}\n":            "faults[0].link: no cable joins s0 and s1",
		"  - {at: 1ms, link: [s0, s8], state: sideways}\n":        "faults[0].state",
		"  - {at: 1s, link: [s0, s8], state: down}\n":             "faults[0].at",
		"  - {at: 1ms, link: [s0, s8], state: set, loss: 2}\n":    "faults[0]: loss 2",
		"  - {at: 1ms, link: [s0, s8], state: down, loss: 0.1}\n": "faults[0]: loss and delay go with state: set",
	} {
		s, err := spec.Parse([]byte("name: x\ntopology: {family: fattree, k: 4}\nduration: 10ms\nfaults:\n" + bad))
		if err == nil {
			_, err = lab.Build(s)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", bad, err, want)
		}
	}
}
