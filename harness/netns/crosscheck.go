package netns

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/report"
)

// Cross-check tolerances: how far a netns run may be from the schedule-keeping run of the same lab (the
// same engines on the virtual clock) before it counts as distorted. Faithful runs measured 0-1% apart
// in FCT and identical drops (suites/netns); the distorted lossy incasts that frame lateness passed were
// +45% to +74% drops, about twice the retransmissions, +13% to +38% FCT, and two agents that took
// each other's frames when they happened to read them were +8-14% on FCT. Where drops happen at all, a
// timing difference of a fraction of a frame changes which packets drop and so which flows wait out a
// retransmission timer: an 8->1 lossless incast with 2 KB of headroom measured 907 to 1262 drops against
// 1316, FCT bimodal. There the counts are compared (with room for that spread), and FCT and the set of
// completed flows are only reported.
const (
	crossCountRel = 0.35 // drops, retransmissions, pauses: relative (to the schedule-keeping run's) ...
	crossCountAbs = 20   // ... and absolute difference, both exceeded
	// crossFCTRel bounds the average FCT over the flows both runs completed (paired by flow id): 3%, three
	// times the faithful runs' spread and well under the +8% of unsynchronised agents.
	crossFCTRel = 0.03
	// crossSetRel bounds the flows only one run completed (outside the edge, see flowPairs), relative to
	// the schedule-keeping run's completed flows. It serves only a fractional dilation, where the agents
	// run engines on configs scaled by D and their rounding differs from the paper's (a whole D runs the
	// paper's configs on a dilated clock and is compared exactly). Measured before the shared order of
	// simultaneous events, when ties still broke differently: Dragonfly(2,4,2) WebSearch 0.5, 3 ms, 9 of
	// 447 completed flows (2.0%) in one run only, paired FCT +0.6%, per-flow median 2.2% apart.
	crossSetRel = 0.05
)

// DefaultCrossCheckBudget bounds the schedule-keeping run's wall time (at least the netns run's own).
const DefaultCrossCheckBudget = 10 * time.Second

// VirtualTwin is the virtual backend's run of a netns run's lab, compared flow by flow with the netns
// run (report.CompareRuns; at the nearest whole D below a fractional one, where every time differs,
// which is the answer), and how long the virtual run took.
type VirtualTwin struct {
	Diff report.RunDiff
	Wall time.Duration
}

// crossCheck compares what the netns run measured with what a run that keeps the schedule exactly gives:
// the virtual backend on the same lab. Frame lateness alone can pass a run whose timing errors, each
// within a frame time, still add up where queues decide (a drop threshold, a pause, a retransmission
// timer): it judged faithful a lossy incast with half again the drops. A difference beyond the
// tolerances makes the run unfaithful, naming each figure; a lab the virtual backend cannot run (kernel
// hosts) or cannot run within budget is left to the lateness verdict, and the reason says so.
//
// The comparison with the twin is returned too (nil when the twin did not run to its end), so that `lab
// run --check-against virtual` reports on it rather than running the twin a second time.
func crossCheck(ctx context.Context, l *lab.Lab, log *records.Log, res RunResult, budget time.Duration) (report.Fidelity, *VirtualTwin) {
	f := res.Fidelity
	if res.Cancelled {
		return f, nil
	}
	if budget <= 0 {
		budget = DefaultCrossCheckBudget
	}
	budget = max(budget, res.Wall)
	vctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	start := time.Now()
	vf, err := virtual.New(l)
	if err != nil {
		f.Reason += fmt.Sprintf("; not cross-checked (virtual backend: %v)", err)
		return f, nil
	}
	vres := vf.Run(vctx)
	if vres.Cancelled {
		f.Reason += fmt.Sprintf("; not cross-checked (the schedule-keeping run took longer than %v)", budget)
		return f, nil
	}
	e := max(int64(res.Dilation), 1)
	twin := &VirtualTwin{Wall: time.Since(start), Diff: report.CompareRuns(
		report.RunSide{Log: log, D: e, Deadlock: res.Deadlock.Detected, DeadlockAt: res.Deadlock.At},
		report.RunSide{Log: vf.Log, D: 1, Deadlock: vres.Deadlock.Detected, DeadlockAt: vres.Deadlock.At})}
	n := report.Summarize(log, report.Meta{Dilation: res.Dilation, Duration: res.End, Graph: l.Graph, Deadlock: res.Deadlock})
	v := report.Summarize(vf.Log, report.Meta{Dilation: 1, Duration: vres.End, Graph: l.Graph, Deadlock: vres.Deadlock})
	var off []string
	count := func(what string, a, b int64) {
		if d := math.Abs(float64(a - b)); d > crossCountAbs && d > crossCountRel*float64(b) {
			off = append(off, fmt.Sprintf("%s %d vs %d", what, a, b))
		}
	}
	if n.Deadlock.Detected != v.Deadlock.Detected {
		off = append(off, fmt.Sprintf("deadlock %v vs %v", n.Deadlock.Detected, v.Deadlock.Detected))
	}
	p := pairFlows(log.Flows, vf.Log.Flows, res.Dilation, res.End, vres.End)
	if float64(e) == res.Dilation {
		return exactCheck(f, n, v, p, twin.Diff), twin
	}
	// After a deadlock both runs stop where their monitors fired: the counts up to then are not comparable.
	if !n.Deadlock.Detected && !v.Deadlock.Detected {
		count("lossy drops", int64(n.Drops.Lossy), int64(v.Drops.Lossy))
		count("lossless drops", int64(n.Drops.Lossless), int64(v.Drops.Lossless))
		count("retransmissions", n.Retransmissions, v.Retransmissions)
		count("pauses sent", int64(n.Pauses.Sent), int64(v.Pauses.Sent))
		count("flows completed", int64(n.Flows.Completed), int64(v.Flows.Completed))
		drops := n.Drops.Lossy + n.Drops.Lossless + v.Drops.Lossy + v.Drops.Lossless
		if drops == 0 {
			if d := p.setDiff(); d != "" && float64(len(p.onlyNetns)+len(p.onlyVirt)) > crossSetRel*float64(v.Flows.Completed) {
				off = append(off, d)
			} else if d != "" {
				f.Reason += "; " + d
			}
			if p.virtual > 0 && math.Abs(p.netns-p.virtual) > crossFCTRel*p.virtual {
				off = append(off, fmt.Sprintf("FCT avg over the %d flows both completed %.4g s vs %.4g s (%+.1f%%)",
					p.both, p.netns, p.virtual, 100*(p.netns/p.virtual-1)))
			}
		} else if d := p.setDiff(); d != "" {
			f.Reason += "; " + d + " (not judged: drops make that timing-sensitive)"
		}
	}
	if len(off) > 0 {
		return report.Fidelity{Faithful: false, Reason: fmt.Sprintf(
			"distorted: against a schedule-keeping run of the same lab (virtual backend), %s; %s",
			strings.Join(off, ", "), f.Reason)}, twin
	}
	f.Reason += fmt.Sprintf("; cross-checked against a schedule-keeping run: drops %d vs %d, retransmissions %d vs %d, pauses %d vs %d, FCT avg %.4g vs %.4g s (over the %d flows both completed %.4g vs %.4g s)",
		n.Drops.Lossy+n.Drops.Lossless, v.Drops.Lossy+v.Drops.Lossless, n.Retransmissions, v.Retransmissions,
		n.Pauses.Sent, v.Pauses.Sent, n.FCT.Avg, v.FCT.Avg, p.both, p.netns, p.virtual)
	return f, twin
}

// exactCheck is the verdict of a run whose agents ran the engines on the paper's configs (a whole D,
// Dilated.EngineD): it must be identical to the virtual backend's run flow by flow, drop by drop and
// pause by pause (report.CompareRuns). Any difference is unfaithful and names every flow that differs,
// with both FCTs; an identical run keeps the lateness verdict (identity is needed for a faithful run,
// and frames taken late still say the machine did not keep the schedule). The averages stay as a
// summary.
func exactCheck(f report.Fidelity, n, v *report.Summary, p flowPairs, d report.RunDiff) report.Fidelity {
	avg := fmt.Sprintf("averages: drops %d vs %d, retransmissions %d vs %d, pauses %d vs %d, FCT avg %.4g vs %.4g s",
		n.Drops.Lossy+n.Drops.Lossless, v.Drops.Lossy+v.Drops.Lossless, n.Retransmissions, v.Retransmissions,
		n.Pauses.Sent, v.Pauses.Sent, p.netns, p.virtual)
	if !d.Identical() {
		return report.Fidelity{Faithful: false, Differing: d.Differing, Reason: fmt.Sprintf(
			"distorted: against the virtual backend's run of the same lab and seed, %s; %s; %s", d.Describe(20), avg, f.Reason)}
	}
	f.Reason += fmt.Sprintf("; identical to the virtual backend's run flow by flow (%s); %s", d.Describe(0), avg)
	return f
}

// flowPairs compares two runs' flows by id: the average FCT (seconds, paper time) of the flows both
// completed, and the flows only one of them completed. Averages over different sets of flows compared
// nothing: a fat-tree k=4 run was called +20.2% distorted where the flows common to both differed by 3.5%.
// A flow one run completed within crossFCTRel of its FCT before that run's end is not counted against
// the other: the tolerated timing difference could have moved it past the end (Dragonfly(2,4,2), 3 ms:
// 7 of 488 flows flipped that way).
type flowPairs struct {
	both                int
	netns, virtual      float64
	onlyNetns, onlyVirt []uint32
}

// pairFlows pairs netns flows (dilated time, divided by d; the run ended at nEnd) with virtual ones
// (paper time, ended at vEnd) by id.
func pairFlows(netns, virt []records.Flow, d float64, nEnd, vEnd clock.Time) flowPairs {
	var p flowPairs
	edge := func(f records.Flow, end clock.Time) bool {
		return float64(f.Finish)+crossFCTRel*float64(f.FCT()) >= float64(end)
	}
	vdone := map[uint32]records.Flow{}
	for _, f := range virt {
		if f.Completed {
			vdone[f.ID] = f
		}
	}
	seen := map[uint32]bool{}
	for _, f := range netns {
		if !f.Completed {
			continue
		}
		seen[f.ID] = true
		v, ok := vdone[f.ID]
		if !ok {
			if !edge(f, nEnd) {
				p.onlyNetns = append(p.onlyNetns, f.ID)
			}
			continue
		}
		p.both++
		p.netns += f.FCT().Seconds() / d
		p.virtual += v.FCT().Seconds()
	}
	for id, f := range vdone {
		if !seen[id] && !edge(f, vEnd) {
			p.onlyVirt = append(p.onlyVirt, id)
		}
	}
	slices.Sort(p.onlyVirt)
	if p.both > 0 {
		p.netns /= float64(p.both)
		p.virtual /= float64(p.both)
	}
	return p
}

// setDiff names the flows only one run completed ("" when the sets agree).
func (p flowPairs) setDiff() string {
	if len(p.onlyNetns)+len(p.onlyVirt) == 0 {
		return ""
	}
	ids := func(s []uint32) string {
		if len(s) > 10 {
			return fmt.Sprint(s[:10]) + fmt.Sprintf(" and %d more", len(s)-10)
		}
		return fmt.Sprint(s)
	}
	return fmt.Sprintf("flows completed only on netns %s, only on the schedule-keeping run %s", ids(p.onlyNetns), ids(p.onlyVirt))
}

// engineTime matches "at <time>" in an engine's violation message (clock.Time's format).
var engineTime = regexp.MustCompile(`\bat (\d+(?:\.\d+)?(?:e[+-]?\d+)?)(ps|ns|us|ms|s)\b`)

var timeUnit = map[string]clock.Time{"ps": 1, "ns": clock.Nanosecond, "us": clock.Microsecond, "ms": clock.Millisecond, "s": clock.Second}

// paperTimes rewrites the engine times in a violation message from dilated to paper units (divided by
// d), so a message reads in the same units as summary.json and the spec.
func paperTimes(msg string, d float64) string {
	if d == 1 {
		return msg
	}
	return engineTime.ReplaceAllStringFunc(msg, func(m string) string {
		g := engineTime.FindStringSubmatch(m)
		x, err := strconv.ParseFloat(g[1], 64)
		if err != nil {
			return m
		}
		return "at " + clock.Time(x*float64(timeUnit[g[2]])/d+0.5).String()
	})
}
