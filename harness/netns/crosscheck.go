package netns

import (
	"context"
	"fmt"
	"math"
	"regexp"
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
// +45% to +74% drops, about twice the retransmissions, +13% to +38% FCT. Where drops happen at all, a
// timing difference of a fraction of a frame changes which packets drop and so which flows wait out a
// retransmission timer: an 8->1 lossless incast with 2 KB of headroom measured 907 to 1262 drops against
// 1316, FCT bimodal. There the counts are compared (with room for that spread) and FCT is not.
const (
	crossCountRel = 0.35 // drops, retransmissions, pauses: relative (to the schedule-keeping run's) ...
	crossCountAbs = 20   // ... and absolute difference, both exceeded
	crossFCTRel   = 0.10 // average FCT
)

// DefaultCrossCheckBudget bounds the schedule-keeping run's wall time (at least the netns run's own).
const DefaultCrossCheckBudget = 10 * time.Second

// crossCheck compares what the netns run measured with what a run that keeps the schedule exactly gives:
// the virtual backend on the same lab. Frame lateness alone can pass a run whose timing errors, each
// within a frame time, still add up where queues decide (a drop threshold, a pause, a retransmission
// timer): it judged faithful a lossy incast with half again the drops. A difference beyond the
// tolerances makes the run unfaithful, naming each figure; a lab the virtual backend cannot run (kernel
// hosts) or cannot run within budget is left to the lateness verdict, and the reason says so.
func crossCheck(ctx context.Context, l *lab.Lab, log *records.Log, res RunResult, budget time.Duration) report.Fidelity {
	f := res.Fidelity
	if res.Cancelled {
		return f
	}
	if budget <= 0 {
		budget = DefaultCrossCheckBudget
	}
	budget = max(budget, res.Wall)
	vctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	vf, err := virtual.New(l)
	if err != nil {
		f.Reason += fmt.Sprintf("; not cross-checked (virtual backend: %v)", err)
		return f
	}
	vres := vf.Run(vctx)
	if vres.Cancelled {
		f.Reason += fmt.Sprintf("; not cross-checked (the schedule-keeping run took longer than %v)", budget)
		return f
	}
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
	// After a deadlock both runs stop where their monitors fired: the counts up to then are not comparable.
	if !n.Deadlock.Detected && !v.Deadlock.Detected {
		count("lossy drops", int64(n.Drops.Lossy), int64(v.Drops.Lossy))
		count("lossless drops", int64(n.Drops.Lossless), int64(v.Drops.Lossless))
		count("retransmissions", n.Retransmissions, v.Retransmissions)
		count("pauses sent", int64(n.Pauses.Sent), int64(v.Pauses.Sent))
		count("flows completed", int64(n.Flows.Completed), int64(v.Flows.Completed))
		drops := n.Drops.Lossy + n.Drops.Lossless + v.Drops.Lossy + v.Drops.Lossless
		if drops == 0 && v.FCT.Avg > 0 && math.Abs(n.FCT.Avg-v.FCT.Avg) > crossFCTRel*v.FCT.Avg {
			off = append(off, fmt.Sprintf("FCT avg %.4g s vs %.4g s (%+.1f%%)", n.FCT.Avg, v.FCT.Avg, 100*(n.FCT.Avg/v.FCT.Avg-1)))
		}
	}
	if len(off) > 0 {
		return report.Fidelity{Faithful: false, Reason: fmt.Sprintf(
			"distorted: against a schedule-keeping run of the same lab (virtual backend), %s; %s",
			strings.Join(off, ", "), f.Reason)}
	}
	f.Reason += fmt.Sprintf("; cross-checked against a schedule-keeping run: drops %d vs %d, retransmissions %d vs %d, pauses %d vs %d, FCT avg %.4g vs %.4g s",
		n.Drops.Lossy+n.Drops.Lossless, v.Drops.Lossy+v.Drops.Lossless, n.Retransmissions, v.Retransmissions,
		n.Pauses.Sent, v.Pauses.Sent, n.FCT.Avg, v.FCT.Avg)
	return f
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
