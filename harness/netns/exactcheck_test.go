package netns

import (
	"context"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/harness/nslink/nstest"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/report"
)

// A 4->1 incast into small lossy buffers: a frame's timing decides what drops, as in the runs the exact
// cross-check judges.
const exactSpec = `
name: exact
backend: netns
dilation: 1000
topology: {family: fattree, k: 4, link: {rate: 100Gbps, delay: 1us}}
switch: {buffer: 256KB, flow_control: lossy}
host: {transport: gbn, cc: dcqcn, mtu: 1000}
workload: [{kind: incast, senders: 4, size: 300KB, at: 1us}]
duration: 2ms`

// runVirtual runs l on the virtual backend; perturb, if set, may change the fabric before it runs.
func runVirtual(t *testing.T, l *lab.Lab, perturb func(*virtual.Fabric)) (*records.Log, virtual.Result) {
	t.Helper()
	f, err := virtual.New(l)
	if err != nil {
		t.Fatal(err)
	}
	if perturb != nil {
		perturb(f)
	}
	res := f.Run(context.Background())
	return f.Log, res
}

// dilated is log as a netns run at D would return it: every time multiplied by D.
func dilated(log *records.Log, d clock.Time) *records.Log {
	c := *log
	c.Flows = append([]records.Flow(nil), log.Flows...)
	c.Pauses = append([]records.Pause(nil), log.Pauses...)
	c.Drops = append([]records.Drop(nil), log.Drops...)
	c.Dilate(d)
	return &c
}

// The exact cross-check passes a run identical to the virtual one (at D=1000: times compared as whole
// picoseconds of paper time) and fails one in which a single frame left one serialization time late,
// naming the flows that moved with both FCTs.
func TestExactCheckNamesADelayedFrame(t *testing.T) {
	l := nstest.Lab(t, exactSpec)
	base, bres := runVirtual(t, l, nil)
	if len(base.Drops) == 0 {
		t.Fatal("the incast dropped nothing: the test would not show that timing moves drops")
	}
	again, _ := runVirtual(t, l, nil)
	same := report.CompareRuns(report.RunSide{Log: dilated(again, 1000), D: 1000}, report.RunSide{Log: base, D: 1})
	if !same.Identical() {
		t.Fatalf("two virtual runs of one lab differ: %s", same.Describe(5))
	}

	// Delay the 40th data frame the first flow's sender sends by one serialization time, from its NIC's
	// egress onto the cable: the frame, and whatever it meets downstream, moves.
	var victim uint32
	perturbed, _ := runVirtual(t, l, func(f *virtual.Fabric) {
		port := f.NICs[l.Flows[0].SrcNode].Port(0)
		next, n := port.Link(), 0
		port.SetLink(egress.LinkFunc(func(p *pkt.Packet) {
			if p.Kind == pkt.Data {
				if n++; n == 40 {
					victim = p.Flow
					f.Clock.Schedule(clock.TxTime(int(p.Size), port.Rate()), func() { next.Send(p) })
					return
				}
			}
			next.Send(p)
		}))
	})
	if victim == 0 {
		t.Fatal("the sender sent fewer than 40 data frames")
	}
	d := report.CompareRuns(report.RunSide{Log: dilated(perturbed, 1000), D: 1000}, report.RunSide{Log: base, D: 1})
	if d.Identical() {
		t.Fatal("a frame one serialization time late left the run identical")
	}
	named := false
	for _, fd := range d.Differing {
		named = named || fd.ID == victim
	}
	if !named {
		t.Fatalf("the delayed frame's flow %d is not named: %s", victim, d.Describe(0))
	}

	n := report.Summarize(perturbed, report.Meta{Dilation: 1, Duration: bres.End, Graph: l.Graph})
	v := report.Summarize(base, report.Meta{Dilation: 1, Duration: bres.End, Graph: l.Graph})
	p := pairFlows(perturbed.Flows, base.Flows, 1, bres.End, bres.End)
	verdict := exactCheck(report.Fidelity{Faithful: true, Reason: "no frame late"}, n, v, p, d)
	if verdict.Faithful || len(verdict.Differing) != len(d.Differing) || !strings.Contains(verdict.Reason, "flows differ") {
		t.Fatalf("verdict on the perturbed run: %+v", verdict)
	}
	ok := exactCheck(report.Fidelity{Faithful: true, Reason: "no frame late"}, v, v, pairFlows(base.Flows, base.Flows, 1, bres.End, bres.End), same)
	if !ok.Faithful || !strings.Contains(ok.Reason, "identical to the virtual backend's run") {
		t.Fatalf("verdict on an identical run: %+v", ok)
	}
	t.Logf("one frame of flow %d delayed %v: %s", victim, clock.TxTime(1048, 100e9), d.Describe(5))
}

// crossCheck hands back its comparison with the virtual twin (RunResult.Twin), which `lab run
// --check-against virtual` reports instead of running the twin again: identical for a run that is the
// twin's (dilated by D), naming the flow of a run that is not; none for a cancelled run.
func TestCrossCheckReturnsTheTwin(t *testing.T) {
	l := nstest.Lab(t, exactSpec)
	base, bres := runVirtual(t, l, nil)
	res := RunResult{Dilation: 1000, End: bres.End * 1000, Fidelity: report.Fidelity{Faithful: true, Reason: "no frame late"}}
	f, twin := crossCheck(context.Background(), l, dilated(base, 1000), res, 0)
	if twin == nil || !twin.Diff.Identical() || twin.Diff.Flows != len(base.Flows) || twin.Wall <= 0 || !f.Faithful {
		t.Fatalf("identical run: verdict %+v, twin %+v", f, twin)
	}
	moved := dilated(base, 1000)
	moved.Flows[0].Finish++
	f, twin = crossCheck(context.Background(), l, moved, res, 0)
	if twin == nil || twin.Diff.Identical() || len(twin.Diff.Differing) != 1 || twin.Diff.Differing[0].ID != moved.Flows[0].ID || f.Faithful {
		t.Fatalf("a flow finishing 1 ps later: verdict %+v, twin %+v", f, twin)
	}
	res.Cancelled = true
	if _, twin = crossCheck(context.Background(), l, moved, res, 0); twin != nil {
		t.Fatalf("a cancelled run got a twin: %+v", twin)
	}
}
