package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/records"
)

// Two runs of one lab with the same seed on the two backends are identical, not close: the engines
// compute the same numbers (the netns agents run them on the paper's configs, clock.Dilated) and fire
// simultaneous events in one order (docs/architecture.md §Order of simultaneous events). CompareRuns
// holds them to that, flow by flow and record by record, in paper time exactly: a time t of a run
// dilated by D is t/D, compared as whole picoseconds (t_a x D_b = t_b x D_a), never as floats.

// FlowDiff is a flow whose outcome differs between two runs: its FCTs in paper seconds (0: not
// completed) and what differs.
type FlowDiff struct {
	ID   uint32  `json:"id"`
	FCTA float64 `json:"fct_s"`
	FCTB float64 `json:"fct_other_s"`
	What string  `json:"what"`
}

// RunDiff is what CompareRuns found.
type RunDiff struct {
	Flows         int        // flows compared (the larger of the two runs' counts)
	Differing     []FlowDiff // in id order
	DropsA        int        // drop records of run A, and of B
	DropsB        int
	PausesA       int // pause records (sent and received) of run A, and of B
	PausesB       int
	FirstDrop     string // the first drop record that differs ("" when none)
	FirstPause    string // the first pause record that differs ("" when none)
	DeadlockA     bool
	DeadlockB     bool
	DeadlockAtA   float64 // paper seconds
	DeadlockAtB   float64
	deadlockDiffs bool
}

// Identical says whether the two runs gave the same flows, drops, pauses and deadlock verdict.
func (d RunDiff) Identical() bool {
	return len(d.Differing) == 0 && d.FirstDrop == "" && d.FirstPause == "" && !d.deadlockDiffs
}

// RunSide is one run for CompareRuns: its log, its dilation (a whole number; 1 for the virtual
// backend) and its deadlock verdict's time in its own engine time (0: none).
type RunSide struct {
	Log        *records.Log
	D          int64
	Deadlock   bool
	DeadlockAt clock.Time
}

// CompareRuns compares run a with run b exactly.
func CompareRuns(a, b RunSide) RunDiff {
	da, db := clock.Time(max(a.D, 1)), clock.Time(max(b.D, 1))
	// same says whether time x of run a is time y of run b.
	same := func(x, y clock.Time) bool { return x*db == y*da }
	sec := func(t, d clock.Time) float64 { return float64(t) / (float64(clock.Second) * float64(d)) }
	var r RunDiff
	bf := map[uint32]*records.Flow{}
	for i := range b.Log.Flows {
		bf[b.Log.Flows[i].ID] = &b.Log.Flows[i]
	}
	seen := map[uint32]bool{}
	fct := func(f *records.Flow, d clock.Time) float64 {
		if f == nil || !f.Completed {
			return 0
		}
		return sec(f.FCT(), d)
	}
	for i := range a.Log.Flows {
		fa := &a.Log.Flows[i]
		seen[fa.ID] = true
		fb := bf[fa.ID]
		var what []string
		switch {
		case fb == nil:
			what = append(what, "only in the first run")
		default:
			if fa.Completed != fb.Completed {
				what = append(what, fmt.Sprintf("completed %v vs %v", fa.Completed, fb.Completed))
			}
			if !same(fa.Start, fb.Start) {
				what = append(what, "start")
			}
			if fa.Completed && fb.Completed && !same(fa.Finish, fb.Finish) {
				what = append(what, "finish")
			}
			if fa.Delivered != fb.Delivered {
				what = append(what, fmt.Sprintf("delivered %d vs %d", fa.Delivered, fb.Delivered))
			}
			if fa.Retransmits != fb.Retransmits {
				what = append(what, fmt.Sprintf("retransmissions %d vs %d", fa.Retransmits, fb.Retransmits))
			}
			if fa.WindowBytes != fb.WindowBytes {
				what = append(what, "window bytes")
			}
		}
		if len(what) > 0 {
			r.Differing = append(r.Differing, FlowDiff{ID: fa.ID, FCTA: fct(fa, da), FCTB: fct(fb, db), What: strings.Join(what, ", ")})
		}
	}
	for i := range b.Log.Flows {
		if fb := &b.Log.Flows[i]; !seen[fb.ID] {
			r.Differing = append(r.Differing, FlowDiff{ID: fb.ID, FCTB: fct(fb, db), What: "only in the second run"})
		}
	}
	slices.SortFunc(r.Differing, func(x, y FlowDiff) int { return cmp.Compare(x.ID, y.ID) })
	r.Flows = max(len(a.Log.Flows), len(b.Log.Flows))

	r.DropsA, r.DropsB = len(a.Log.Drops), len(b.Log.Drops)
	r.FirstDrop = firstDiff(a.Log.Drops, b.Log.Drops, da, db, func(x records.Drop) clock.Time { return x.At },
		func(x, y records.Drop) int {
			return cmp.Or(cmp.Compare(x.Device, y.Device), cmp.Compare(x.Port, y.Port), cmp.Compare(x.Queue, y.Queue),
				cmp.Compare(x.Flow, y.Flow), cmp.Compare(x.Reason, y.Reason), boolCmp(x.Lossless, y.Lossless))
		})
	r.PausesA, r.PausesB = len(a.Log.Pauses), len(b.Log.Pauses)
	r.FirstPause = firstDiff(a.Log.Pauses, b.Log.Pauses, da, db, func(x records.Pause) clock.Time { return x.At },
		func(x, y records.Pause) int {
			return cmp.Or(cmp.Compare(x.Device, y.Device), cmp.Compare(x.Port, y.Port), cmp.Compare(x.Queue, y.Queue),
				boolCmp(x.On, y.On), boolCmp(x.Sent, y.Sent), cmp.Compare(x.Hops, y.Hops), cmp.Compare(x.Kind, y.Kind))
		})
	r.DeadlockA, r.DeadlockB = a.Deadlock, b.Deadlock
	r.DeadlockAtA, r.DeadlockAtB = sec(a.DeadlockAt, da), sec(b.DeadlockAt, db)
	r.deadlockDiffs = a.Deadlock != b.Deadlock || a.Deadlock && !same(a.DeadlockAt, b.DeadlockAt)
	return r
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// firstDiff sorts both record lists by (paper time, fields) and describes the first pair that differs,
// or a count that differs; "" when they are the same records.
func firstDiff[T any](a, b []T, da, db clock.Time, at func(T) clock.Time, rest func(x, y T) int) string {
	sorted := func(s []T) []T {
		s = slices.Clone(s)
		// Times compared across runs as t x (the other run's D): sorting by t alone is the same order.
		slices.SortStableFunc(s, func(x, y T) int { return cmp.Or(cmp.Compare(at(x), at(y)), rest(x, y)) })
		return s
	}
	sa, sb := sorted(a), sorted(b)
	for i := 0; i < min(len(sa), len(sb)); i++ {
		if at(sa[i])*db != at(sb[i])*da || rest(sa[i], sb[i]) != 0 {
			return fmt.Sprintf("record %d: %+v (at %.12gs) vs %+v (at %.12gs)", i, sa[i],
				float64(at(sa[i]))/(float64(clock.Second)*float64(da)), sb[i], float64(at(sb[i]))/(float64(clock.Second)*float64(db)))
		}
	}
	if len(sa) != len(sb) {
		return fmt.Sprintf("%d records vs %d", len(sa), len(sb))
	}
	return ""
}

// Describe says in one line whether the runs are identical, and otherwise what differs (up to max
// flows named; 0: all).
func (d RunDiff) Describe(max int) string {
	if d.Identical() {
		return fmt.Sprintf("identical: %d flows, %d drops, %d pause records", d.Flows, d.DropsA, d.PausesA)
	}
	var parts []string
	if n := len(d.Differing); n > 0 {
		fs := d.Differing
		if max > 0 && len(fs) > max {
			fs = fs[:max]
		}
		var names []string
		for _, f := range fs {
			names = append(names, fmt.Sprintf("%d (FCT %.6g vs %.6g s: %s)", f.ID, f.FCTA, f.FCTB, f.What))
		}
		more := ""
		if len(fs) < n {
			more = fmt.Sprintf(" and %d more", n-len(fs))
		}
		parts = append(parts, fmt.Sprintf("%d of %d flows differ: %s%s", n, d.Flows, strings.Join(names, "; "), more))
	}
	if d.FirstDrop != "" {
		parts = append(parts, fmt.Sprintf("drops %d vs %d, first difference %s", d.DropsA, d.DropsB, d.FirstDrop))
	}
	if d.FirstPause != "" {
		parts = append(parts, fmt.Sprintf("pause records %d vs %d, first difference %s", d.PausesA, d.PausesB, d.FirstPause))
	}
	if d.deadlockDiffs {
		parts = append(parts, fmt.Sprintf("deadlock %v at %.12gs vs %v at %.12gs", d.DeadlockA, d.DeadlockAtA, d.DeadlockB, d.DeadlockAtB))
	}
	return strings.Join(parts, "; ")
}
