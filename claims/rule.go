package claims

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// PointTolerance is how far a measured mean may sit from a paper's point value and still count as
// within it: ±10% of the value.
const PointTolerance = 0.10

// Judge is the strict rule, from a row's stored numbers only:
//
//   - R (reproduced): the whole 95% interval lies inside the paper's band (a point value: within
//     PointTolerance of it), or a deterministic measurement does. A mean inside the band whose
//     interval sticks out of it needs more seeds; it does not earn R. One run that is not
//     deterministic has no interval and is never R.
//   - O (ordering only): not R, but the claim's Direction holds over the whole interval (with one seed
//     and no interval, on the single value).
//   - N (not reproduced): otherwise.
//   - Zero-tolerance claims (KindCount) count violations: 0 is R when the count is deterministic or
//     taken over two samples or more (seeds x topology seeds), like any other row; 0 on one run that
//     is not deterministic is N (more seeds); anything else N.
//   - "-": not judged (KindNone, or nothing measured).
//
// The second result says which test decided, in words.
func Judge(c Claim) (verdict, rule string) {
	if c.Kind == KindNone {
		return "-", "not a judgeable claim"
	}
	if c.MeasuredMean == nil {
		return "-", "not measured"
	}
	m := *c.MeasuredMean
	if c.Kind == KindCount {
		switch {
		case m != 0 || (c.CI95 != nil && c.CI95[1] != 0):
			return "N", fmt.Sprintf("zero tolerance: %s violations", num(m))
		case !c.Deterministic && c.Seeds*max(c.TopologySeeds, 1) < 2:
			return "N", "zero tolerance: 0 violations, but on one run that is not deterministic (more seeds)"
		}
		return "R", "zero tolerance: 0 violations"
	}
	lo, hi := bandOf(c)
	ci, haveCI := interval(c)
	in := inside(m, lo, hi)
	band := fmt.Sprintf("[%s, %s]", num(lo), num(hi))
	switch {
	case !in:
		rule = fmt.Sprintf("mean %s outside band %s", num(m), band)
	case !haveCI:
		rule = "mean in band " + band + " but one seed, no interval (more seeds)"
	case !inside(ci[0], lo, hi) || !inside(ci[1], lo, hi):
		rule = fmt.Sprintf("mean %s in band %s but CI [%s, %s] leaves it (more seeds)", num(m), band, num(ci[0]), num(ci[1]))
	case c.Deterministic:
		return "R", fmt.Sprintf("deterministic %s in band %s", num(m), band)
	default:
		return "R", fmt.Sprintf("CI [%s, %s] inside band %s (mean %s)", num(ci[0]), num(ci[1]), band, num(m))
	}
	if c.Direction == "" {
		return "N", rule + "; no ordering to fall back on"
	}
	op, ref, _ := parseDirection(c.Direction)
	if haveCI {
		if holds(op, ci[0], ref) && holds(op, ci[1], ref) {
			return "O", rule + "; direction " + c.Direction + " holds over the CI"
		}
		return "N", rule + "; direction " + c.Direction + " not over the whole CI"
	}
	if holds(op, m, ref) {
		return "O", rule + "; direction " + c.Direction + " holds (one seed)"
	}
	return "N", rule + "; direction " + c.Direction + " fails"
}

// inside says whether x lies in [lo, hi] (an infinite end is open).
func inside(x, lo, hi float64) bool {
	return (math.IsInf(lo, -1) || x >= lo) && (math.IsInf(hi, 1) || x <= hi)
}

// bandOf is the band the mean must lie in: the published range, or ±PointTolerance of a point value
// (an open end is infinite).
func bandOf(c Claim) (lo, hi float64) {
	lo, hi = math.Inf(-1), math.Inf(1)
	if len(c.Band) != 2 {
		return lo, hi
	}
	if c.Kind == KindPoint && c.Band[0] != nil {
		v := *c.Band[0]
		d := math.Abs(v) * PointTolerance
		return v - d, v + d
	}
	if c.Band[0] != nil {
		lo = *c.Band[0]
	}
	if c.Band[1] != nil {
		hi = *c.Band[1]
	}
	return lo, hi
}

// interval is the row's 95% interval: [mean, mean] for a deterministic measurement, else CI95.
func interval(c Claim) ([2]float64, bool) {
	if c.Deterministic {
		return [2]float64{*c.MeasuredMean, *c.MeasuredMean}, true
	}
	if len(c.CI95) == 2 {
		return [2]float64{c.CI95[0], c.CI95[1]}, true
	}
	return [2]float64{}, false
}

func parseDirection(d string) (op string, ref float64, err error) {
	for _, o := range []string{">=", "<=", ">", "<"} {
		if rest, ok := strings.CutPrefix(d, o); ok {
			ref, err = strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return o, ref, nil
			}
			break
		}
	}
	return "", 0, fmt.Errorf("direction %q: want <op><number>, op one of > >= < <=", d)
}

func holds(op string, x, ref float64) bool {
	switch op {
	case ">":
		return x > ref
	case ">=":
		return x >= ref
	case "<":
		return x < ref
	default:
		return x <= ref
	}
}

func num(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}
