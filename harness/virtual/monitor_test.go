package virtual_test

import (
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
	"github.com/fabriclab/fabriclab/records"
)

func runWith(t *testing.T, yaml string, poll bool, stall clock.Time) (virtual.Result, *virtual.Fabric) {
	t.Helper()
	l := buildLab(t, yaml)
	f, err := virtual.New(l)
	if err != nil {
		t.Fatal(err)
	}
	f.PollMonitor = poll
	if stall > 0 {
		f.Monitor = monitor.New(l.Graph, monitor.Config{Stall: stall})
	}
	return f.Run(context.Background()), f
}

// TestWatchMatchesPolling: the event-driven monitor gives the periodic one's verdict (detected, cycle,
// time) and ends the run at the same engine time with the same flows, on deadlocking and live fabrics.
func TestWatchMatchesPolling(t *testing.T) {
	ring, err := os.ReadFile("../../lab/spec/testdata/ring-deadlock-pfc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ringSpec := strings.NewReplacer("dilation: 1000", "dilation: 1", "duration: 10ms", "duration: 2.2ms").Replace(string(ring))
	cases := map[string]string{
		"pfc ring deadlock":       ringSpec,
		"pfc ring ingress relays": strings.Replace(ringSpec, "relay_pfc: pass-through", "relay_pfc: ingress", 1),
		"pfc ring, short flows":   strings.NewReplacer("size: 50MB", "size: 200KB", "size: 20MB", "size: 100KB").Replace(ringSpec),
		"pfc incast, runs to its end": `
name: incast-stop-false
topology: {family: fattree, k: 4, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: pfc}
host: {transport: gbn, cc: none}
workload: [{kind: incast, senders: 15, size: 200KB, receiver: h0, at: 0s}]
duration: 5ms
stop: false`,
	}
	detected := 0
	for name, y := range cases {
		stalls := []clock.Time{0}
		if strings.Contains(name, "ingress") { // the deadlock: also at a stall off the 50 us grid
			stalls = append(stalls, 137*clock.Microsecond)
		}
		for _, stall := range stalls {
			t.Run(fmt.Sprintf("%s, stall %v", name, stall), func(t *testing.T) {
				poll, pf := runWith(t, y, true, stall)
				watch, wf := runWith(t, y, false, stall)
				t.Logf("polling: end %v deadlock %+v; watch: end %v deadlock %+v; events %d vs %d",
					poll.End, poll.Deadlock, watch.End, watch.Deadlock, poll.Events, watch.Events)
				if !reflect.DeepEqual(poll.Deadlock, watch.Deadlock) {
					t.Errorf("verdicts differ: polling %+v, watch %+v", poll.Deadlock, watch.Deadlock)
				}
				if poll.End != watch.End || poll.AllDone != watch.AllDone || poll.TimedOut != watch.TimedOut {
					t.Errorf("runs end differently: polling %+v, watch %+v", poll, watch)
				}
				// Unfinished flows are flushed in map order: compare by ID.
				a, b := slices.Clone(pf.Log.Flows), slices.Clone(wf.Log.Flows)
				for _, fs := range [][]records.Flow{a, b} {
					slices.SortFunc(fs, func(x, y records.Flow) int { return int(x.ID) - int(y.ID) })
				}
				if !reflect.DeepEqual(a, b) {
					t.Errorf("flow records differ")
				}
				if poll.Deadlock.Detected {
					detected++
				}
			})
		}
	}
	if detected == 0 {
		t.Error("no case deadlocked: the comparison never saw a verdict")
	}
}
