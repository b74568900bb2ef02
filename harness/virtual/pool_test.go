package virtual

import (
	"context"
	"reflect"
	"testing"
)

// Recycling packets must not change a run: a packet put back while something still held it would be
// overwritten by the next send, and the flows' records would differ from a run that allocates every
// packet. The spec has an incast under PFC and DCQCN beside a flow crossing it.
func TestPacketPoolChangesNothing(t *testing.T) {
	y := `name: pool
topology: {family: fattree, k: 4}
switch: {flow_control: pfc}
host: {transport: gbn, cc: dcqcn}
workload: [{kind: incast, senders: 12, size: 200KB, receiver: h0, at: 0s}, {kind: flows, list: [{src: h1, dst: h9, size: 300KB, at: 3us}]}]
duration: 5ms
`
	run := func(pool bool) (*Fabric, Result) {
		_, f := newFabricOf(t, y)
		if !pool {
			f.pool = nil
			for _, nic := range f.NICs {
				nic.SetPool(nil)
			}
			for _, sw := range f.Switches {
				sw.SetPool(nil)
			}
		}
		return f, f.Run(context.Background())
	}
	a, ra := run(false)
	b, rb := run(true)
	if !ra.AllDone || !rb.AllDone {
		t.Fatalf("flows did not complete: %+v %+v", ra, rb)
	}
	if b.pool.Free() == 0 {
		t.Fatal("the pool recycled no packet")
	}
	if !reflect.DeepEqual(a.Log.Flows, b.Log.Flows) || !reflect.DeepEqual(a.Log.Pauses, b.Log.Pauses) || ra.Events != rb.Events {
		t.Errorf("runs differ: %d vs %d events, %d vs %d pauses", ra.Events, rb.Events, len(a.Log.Pauses), len(b.Log.Pauses))
	}
	t.Logf("%d events, %d pauses, %d packets free at the end", rb.Events, len(b.Log.Pauses), b.pool.Free())
}
