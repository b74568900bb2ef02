package lab_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/switchsw"
	"github.com/fabriclab/fabriclab/switchsw/fc"
)

func buildLab(t *testing.T, text string) (*lab.Lab, error) {
	t.Helper()
	s, err := spec.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return lab.Build(s)
}

func runLab(t *testing.T, text string) (*virtual.Fabric, virtual.Result) {
	t.Helper()
	l, err := buildLab(t, text)
	if err != nil {
		t.Fatal(err)
	}
	f, err := virtual.New(l)
	if err != nil {
		t.Fatal(err)
	}
	return f, f.Run(context.Background())
}

const incast41 = `
name: fc-incast
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: %FC%}
host: {transport: lossless, cc: dcqcn}
workload: [{kind: incast, senders: 8, size: 1MB, receiver: h0, at: 0s}]
duration: 100ms`

type fcRun struct {
	completed, total        int
	drops, lossless, retx   int64
	pausesSent, pausesRecv  int
	maxQueue                int64
	fctAvg, fctMax          float64
	switchSent, nodeRelayed int
}

func measure(f *virtual.Fabric) fcRun {
	var r fcRun
	log := f.Log
	var sum float64
	for _, fl := range log.Flows {
		r.total++
		if fl.Completed {
			r.completed++
			s := fl.FCT().Seconds()
			sum += s
			r.fctMax = max(r.fctMax, s)
		}
		r.retx += fl.Retransmits
	}
	if r.completed > 0 {
		r.fctAvg = sum / float64(r.completed)
	}
	for _, d := range log.Drops {
		r.drops++
		if d.Lossless {
			r.lossless++
		}
	}
	for _, p := range log.Pauses {
		if p.Sent {
			r.pausesSent++
			if p.Kind == records.Switch {
				r.switchSent++
			} else {
				r.nodeRelayed++
			}
		} else {
			r.pausesRecv++
		}
	}
	for _, sw := range f.Switches {
		for _, pc := range sw.Counters().Ports {
			r.maxQueue = max(r.maxQueue, pc.MaxBytes)
		}
	}
	return r
}

// TestPortFCIncastNDC41 is the paper's 8->1 x 1 MB incast on NDC(4,1) under PortFC, end to end through
// lab.Build and the virtual backend: lossless, retransmission-free, every flow completes, switch queues
// stay within X_off plus the in-flight bound, and the pause records obey the propagation rules.
func TestPortFCIncastNDC41(t *testing.T) {
	f, res := runLab(t, strings.ReplaceAll(incast41, "%FC%", "portfc"))
	r := measure(f)
	t.Logf("portfc 8->1 incast: %d/%d flows, drops %d, retransmissions %d, pauses sent %d (switch %d, node relays %d) received %d, max switch port queue %d B, FCT avg %.1f us max %.1f us, end %v",
		r.completed, r.total, r.drops, r.retx, r.pausesSent, r.switchSent, r.nodeRelayed, r.pausesRecv, r.maxQueue, r.fctAvg*1e6, r.fctMax*1e6, res.End)
	if !res.AllDone || r.completed != 8 || r.drops != 0 || r.retx != 0 || len(f.Log.Violations) != 0 {
		t.Fatalf("not lossless/complete: %+v, violations %v", r, f.Log.Violations)
	}
	if r.switchSent == 0 {
		t.Fatal("an 8->1 incast at 100G should trip X_off somewhere")
	}
	// Bound: lab.PortFCQueueBound, the one formula the suite and docs/portfc.md use. It must agree with
	// the engine's own thresholds.
	var sw0 *switchsw.Switch
	for _, sw := range f.Switches {
		sw0 = sw
		break
	}
	xoff, _, dxoff, _ := sw0.FlowControl().(*fc.PortFC).Thresholds(0)
	mtu := f.Lab.Switches[0].Config.MTU
	bound := f.Lab.PortFCQueueBound(0)
	if want := max(xoff, dxoff) + 3*2*switchsw.Headroom(100e9, 1e6, mtu); bound != want || bound != 244_572 {
		t.Fatalf("PortFCQueueBound %d, want X_off %d + 3 x 2 x headroom = %d (244,572 B at the paper's parameters)", bound, max(xoff, dxoff), want)
	}
	t.Logf("bound %d B", bound)
	if r.maxQueue > bound {
		t.Fatalf("max switch queue %d > %d", r.maxQueue, bound)
	}
	for _, p := range f.Log.Pauses {
		switch {
		case p.Kind == records.Host && p.Sent && p.Hops != 1:
			t.Fatalf("a node originated a pause: %+v", p)
		case p.Kind == records.Switch && p.Sent && p.Hops != 0:
			t.Fatalf("a switch relayed a pause: %+v", p)
		case p.Hops > 1:
			t.Fatalf("a pause went further than one relay: %+v", p)
		case p.Kind == records.Host && p.Queue == 6:
			t.Fatalf("a relay queue was paused: %+v", p)
		}
	}
}

// TestPFCStarTagsIncrease: with P = 3, a four-hop NDC flow is queued at tag 0 in its first switch and,
// raised by the relay after crossing that switch, at tag 1 in its second (tag = switches crossed
// before the device, docs/portfc.md §4).
func TestPFCStarTagsIncrease(t *testing.T) {
	f, res := runLab(t, `
name: pfcstar-tags
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: pfcstar, priorities: 3}
host: {transport: lossless, cc: none}
workload: [{kind: flows, list: [{src: h0, dst: h5, size: 100KB, at: 0s}]}]
duration: 10ms`)
	if !res.AllDone {
		t.Fatal("flow did not complete")
	}
	fp := f.Lab.Flows[0]
	var tags []int
	for i, node := range fp.Path.Nodes {
		sw := f.Switches[node]
		if sw == nil {
			continue
		}
		q := sw.Counters().Ports[fp.Path.Ports[i]].Queues
		tag := -1
		for prio := range 8 {
			if q[prio].Enqueued > 0 {
				if tag >= 0 {
					t.Fatalf("switch %d used two priorities", node)
				}
				tag = prio - 3
			}
		}
		tags = append(tags, tag)
	}
	t.Logf("pfcstar P=3 path %v: tags at switch egress %v", fp.Path.Nodes, tags)
	if len(tags) != 2 || tags[0] != 0 || tags[1] != 1 {
		t.Fatalf("tags %v, want [0 1]", tags)
	}
	for _, sw := range f.Lab.Switches {
		lossless := sw.Config.Lossless
		if !lossless[3] || !lossless[4] || !lossless[5] || lossless[2] || lossless[6] {
			t.Fatalf("lossless priorities %v", lossless)
		}
	}
}

// TestRelayPFCModesIncast runs the PFC and PFC* baselines with both relay modes: lossless and complete.
func TestRelayPFCModesIncast(t *testing.T) {
	for _, fcm := range []string{"pfc", "pfcstar"} {
		for _, relay := range []string{"pass-through", "ingress"} {
			f, res := runLab(t, strings.ReplaceAll(incast41, "%FC%", fcm+", relay_pfc: "+relay))
			r := measure(f)
			t.Logf("%s relay_pfc %s: %d/%d flows, drops %d, retx %d, pauses sent %d (switch %d, node %d), max queue %d B, FCT avg %.1f us max %.1f us",
				fcm, relay, r.completed, r.total, r.drops, r.retx, r.pausesSent, r.switchSent, r.nodeRelayed, r.maxQueue, r.fctAvg*1e6, r.fctMax*1e6)
			if !res.AllDone || r.drops != 0 || r.retx != 0 {
				t.Fatalf("%s/%s: %+v violations %v", fcm, relay, r, f.Log.Violations)
			}
			var hostSent int
			for _, h := range f.Lab.Hosts {
				if h.Config.RelayPFC.Mode != relay {
					t.Fatalf("host config relay mode %q", h.Config.RelayPFC.Mode)
				}
			}
			for _, p := range f.Log.Pauses {
				if p.Kind == records.Host && p.Sent {
					hostSent++
				}
			}
			if hostSent == 0 {
				t.Errorf("%s/%s: no relay node sent a pause", fcm, relay)
			}
		}
	}
}

func TestFCRefusals(t *testing.T) {
	for _, c := range []struct{ topo, sw, want string }{
		{"{family: fattree, k: 4}", "{flow_control: portfc}", "switch.flow_control"},
		{"{family: ndc, n: 33, k: 1}", "{flow_control: portfc}", "switch.flow_control"}, // 2 x 32 + 2 node queues
		{"{family: ndc, n: 4, k: 1}", "{flow_control: portfc, alpha: 0.125}", "switch.alpha"},
		{"{family: ndc, n: 4, k: 1}", "{flow_control: pfcstar, priorities: 8}", "switch.priorities"},
	} {
		_, err := buildLab(t, "name: x\ntopology: "+c.topo+"\nswitch: "+c.sw+"\nduration: 1ms\n")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want an error naming %s", c.topo, c.sw, err, c.want)
		}
	}
}
