package spec

import (
	"math"
	"strconv"

	"github.com/fabriclab/fabriclab/units"
)

// Range is the interval a spec number must fall in. Every numeric field is checked against one, so a
// NaN, an infinity or a value whose arithmetic would overflow is refused where it is written, naming the
// field, instead of surfacing later as a wrapped time or a hang. Validators of any spec section call
// checker.number / checker.integer with a Range (docs/bad-input.md lists them).
type Range struct {
	Lo, Hi         float64
	LoOpen, HiOpen bool // true: the bound itself is excluded
}

// Contains reports whether v is finite and in the range.
func (r Range) Contains(v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	if v < r.Lo || (r.LoOpen && v == r.Lo) || v > r.Hi || (r.HiOpen && v == r.Hi) {
		return false
	}
	return true
}

func (r Range) String() string {
	lo, hi := "[", "]"
	if r.LoOpen {
		lo = "("
	}
	if r.HiOpen {
		hi = ")"
	}
	return lo + formatNumber(r.Lo) + ", " + formatNumber(r.Hi) + hi
}

func formatNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e16 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// MaxCount bounds every count in a spec (senders, incasts, tokens, rounds, paths, ...): a product of two
// counts, or a count times a size, then stays far from overflowing int64. Whether the work the counts
// describe fits is the lab's work budget, checked separately with the numbers multiplied out.
const MaxCount = 1 << 30

// The ranges of the spec's numbers that are not counts.
var (
	Fraction    = Range{Lo: 0, Hi: 1, LoOpen: true}   // load, fraction, dcqcn.g
	Probability = Range{Lo: 0, Hi: 1}                 // ecn.pmax
	DilationR   = Range{Lo: 1, Hi: 1e6}               // D: 100 Gb/s / 1e6 is still 100 kb/s
	AlphaR      = Range{Lo: 0, Hi: 64}                // dynamic-threshold alpha; switches use 1/128 .. 8
	ShapeR      = Range{Lo: 1, Hi: 100, LoOpen: true} // Pareto shape: <= 1 has no mean
	ZipfR       = Range{Lo: 0, Hi: 100}               // expert popularity skew
	RateR       = Range{Lo: 0, Hi: units.MaxRate, LoOpen: true}
)

// number checks a float field against r; what says what the field is, for the message.
func (c *checker) number(field string, v float64, r Range, what string) bool {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		c.add(field, "%v is not a finite number (want %s: %s)", v, r, what)
	case !r.Contains(v):
		c.add(field, "%v is not in %s: %s", v, r, what)
	default:
		return true
	}
	return false
}

// integer checks an int field against [lo, hi].
func (c *checker) integer(field string, v, lo, hi int, what string) bool {
	if v < lo || v > hi {
		c.add(field, "%d is not in %d..%d: %s", v, lo, hi, what)
		return false
	}
	return true
}

// rate checks a positive rate within units.MaxRate.
func (c *checker) rate(field string, v Rate) bool {
	return c.number(field, float64(v), RateR, "a positive rate such as 100Gbps")
}

// time checks a time within [0, units.MaxTime] (positive: (0, MaxTime]).
func (c *checker) time(field string, v Time, positive bool) bool {
	switch {
	case positive && v <= 0:
		c.add(field, "%s must be greater than zero", v)
	case v < 0:
		c.add(field, "%s is negative", v)
	case v.Clock() > units.MaxTime:
		c.add(field, "%s is more than %s, the longest time a spec takes", v, Time(units.MaxTime))
	default:
		return true
	}
	return false
}

// sizeInRange checks what no parser produces but a Go spec can hold: a size beyond units' range.
func (c *checker) sizeInRange(field string, v Size) bool {
	switch {
	case v.BDPs != 0 && !(v.BDPs > 0 && v.BDPs <= units.MaxBDPs):
		c.add(field, "%v is not in (0, %.0f] BDPs", v.BDPs, units.MaxBDPs)
	case v.Bytes > units.MaxBytes:
		c.add(field, "%s is more than %s, the largest size", v, units.FormatBytes(units.MaxBytes))
	default:
		return true
	}
	return false
}
