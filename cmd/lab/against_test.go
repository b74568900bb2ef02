package main

import (
	"context"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/report"
)

// --check-against virtual reports the comparison the run's own cross-check made with the virtual twin
// instead of running the twin a second time. The lab is nil: running a twin would fail on it.
func TestCheckAgainstVirtualReusesTheCrossCheck(t *testing.T) {
	log := &records.Log{Flows: []records.Flow{{ID: 1, Size: 1000, Start: 0, Finish: 5, Completed: true}}}
	twin := &netns.VirtualTwin{Wall: 30 * time.Millisecond, Diff: report.CompareRuns(
		report.RunSide{Log: log, D: 1}, report.RunSide{Log: log, D: 1})}
	a, err := checkAgainstVirtual(context.Background(), nil, log, netns.RunResult{Dilation: 1, Twin: twin})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Identical || !a.Reused || a.Flows != 1 || a.WallS != 0.03 {
		t.Errorf("got %+v, want the cross-check's comparison (identical, 1 flow, 0.03 s), reused", a)
	}
	other := &records.Log{Flows: []records.Flow{{ID: 1, Size: 1000, Start: 0, Finish: 6, Completed: true}}}
	twin.Diff = report.CompareRuns(report.RunSide{Log: log, D: 1}, report.RunSide{Log: other, D: 1})
	a, err = checkAgainstVirtual(context.Background(), nil, log, netns.RunResult{Dilation: 1, Twin: twin})
	if err != nil {
		t.Fatal(err)
	}
	if a.Identical || len(a.Differing) != 1 || a.Differing[0].ID != 1 || a.err() == nil {
		t.Errorf("got %+v, want flow 1 named as differing and a verdict exit", a)
	}
}
