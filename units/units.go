// Package units parses the quantities specs and topology parameters are written in: sizes (B, KB, MB, GB
// as powers of 10, KiB/MiB/GiB as powers of 2, and multiples of a BDP), rates (bps..Tbps) and times
// (s, ms, us, ns, ps). Errors quote the text that failed.
//
// Every parsed value is finite and within a documented range (MaxBytes, MaxBDPs, MaxRate, MaxTime), so
// callers may add two of them, or multiply one by a count below a billion, without overflowing int64.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fabriclab/fabriclab/clock"
)

// The ranges every parsed quantity falls in. They are far beyond any lab (a 1.6 Tb/s link runs for a
// week in 1e6 s moving 1.2e17 B) yet small enough that sums and products with counts stay in int64.
const (
	MaxBytes int64      = 1e15               // 1 PB
	MaxBDPs  float64    = 1e6                // bandwidth-delay products
	MaxRate  float64    = 1e15               // 1 Pb/s
	MaxTime  clock.Time = 1e6 * clock.Second // 1e6 s (11.6 days): twice that is still in int64
)

// Size is a byte count, possibly expressed in bandwidth-delay products that only a lab can resolve.
type Size struct {
	Bytes int64   // used when BDPs == 0
	BDPs  float64 // > 0: the size is BDPs x the lab's BDP
}

// Resolve returns the size in bytes given the lab's BDP in bytes.
// A product beyond MaxBytes saturates there (and at 0 below zero), so it never wraps.
func (s Size) Resolve(bdpBytes int64) int64 {
	if s.BDPs > 0 {
		v := s.BDPs*float64(bdpBytes) + 0.5
		switch {
		case !(v >= 0): // negative or NaN
			return 0
		case v > float64(MaxBytes):
			return MaxBytes
		}
		return int64(v)
	}
	return s.Bytes
}

func (s Size) String() string {
	if s.BDPs > 0 {
		return strconv.FormatFloat(s.BDPs, 'g', -1, 64) + "bdp"
	}
	return FormatBytes(s.Bytes)
}

// IsZero reports whether no size was given.
func (s Size) IsZero() bool { return s.Bytes == 0 && s.BDPs == 0 }

var sizeSuffixes = []struct {
	s string
	m float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"b", 1},
}

// ParseSize parses "1500", "1500B", "64KB", "5MB", "1.5MiB" or "6bdp".
func ParseSize(text string) (Size, error) {
	t := strings.ToLower(strings.TrimSpace(text))
	if strings.HasSuffix(t, "bdp") {
		v, err := parseFinite(strings.TrimSpace(strings.TrimSuffix(t, "bdp")))
		switch {
		case err != nil || v <= 0:
			return Size{}, fmt.Errorf("size %q: want a positive number of BDPs such as 6bdp", text)
		case v > MaxBDPs:
			return Size{}, fmt.Errorf("size %q: more than %.0fbdp, the largest size in BDPs", text, MaxBDPs)
		}
		return Size{BDPs: v}, nil
	}
	v, err := parseScaled(t, sizeSuffixes, 1)
	switch {
	case err != nil || v < 0:
		return Size{}, fmt.Errorf("size %q: want a byte count such as 1500, 64KB, 5MB or 6bdp", text)
	case v+0.5 > float64(MaxBytes):
		return Size{}, fmt.Errorf("size %q: more than %d bytes (1 PB), the largest size", text, MaxBytes)
	}
	return Size{Bytes: int64(v + 0.5)}, nil
}

// ParseBytes parses a size that must not be in BDPs.
func ParseBytes(text string) (int64, error) {
	s, err := ParseSize(text)
	if err != nil {
		return 0, err
	}
	if s.BDPs > 0 {
		return 0, fmt.Errorf("size %q: BDP multiples are not allowed here, give bytes", text)
	}
	return s.Bytes, nil
}

var rateSuffixes = []struct {
	s string
	m float64
}{
	{"tbps", 1e12}, {"gbps", 1e9}, {"mbps", 1e6}, {"kbps", 1e3}, {"bps", 1},
	{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3},
}

// ParseRate parses "100Gbps", "25gbit", "1.6Tbps" or a bare number of bits per second.
func ParseRate(text string) (float64, error) {
	v, err := parseScaled(strings.ToLower(strings.TrimSpace(text)), rateSuffixes, 1)
	switch {
	case err != nil || v <= 0:
		return 0, fmt.Errorf("rate %q: want a positive rate such as 100Gbps, 10Mbps or 1e9", text)
	case v > MaxRate:
		return 0, fmt.Errorf("rate %q: more than %s, the largest rate", text, FormatRate(MaxRate))
	}
	return v, nil
}

var timeSuffixes = []struct {
	s string
	m float64
}{
	{"ps", 1}, {"ns", 1e3}, {"us", 1e6}, {"µs", 1e6}, {"ms", 1e9}, {"s", 1e12},
}

// ParseTime parses "1us", "10ms", "2.5s", "300ns". A bare number is refused: the unit is never implied.
func ParseTime(text string) (clock.Time, error) {
	t := strings.ToLower(strings.TrimSpace(text))
	v, err := parseScaled(t, timeSuffixes, 0)
	switch {
	case err != nil || v < 0:
		return 0, fmt.Errorf("time %q: want a duration with a unit such as 1us, 10ms or 2s", text)
	case v+0.5 > float64(MaxTime):
		return 0, fmt.Errorf("time %q: more than %.0fs, the longest time", text, MaxTime.Seconds())
	}
	return clock.Time(v + 0.5), nil
}

// parseScaled parses a number with one of the suffixes; def is the multiplier for a bare number (0
// refuses bare numbers).
func parseScaled(t string, suffixes []struct {
	s string
	m float64
}, def float64) (float64, error) {
	for _, s := range suffixes {
		if strings.HasSuffix(t, s.s) {
			v, err := parseFinite(strings.TrimSpace(strings.TrimSuffix(t, s.s)))
			if err != nil {
				return 0, err
			}
			return v * s.m, nil
		}
	}
	if def == 0 {
		return 0, fmt.Errorf("no unit")
	}
	v, err := parseFinite(t)
	return v * def, err
}

// parseFinite is strconv.ParseFloat without NaN and infinities (which it accepts as "nan", "inf"),
// and without hex floats ("0x1p-2"), which no spec means.
func parseFinite(t string) (float64, error) {
	if strings.ContainsAny(t, "xXpP_") {
		return 0, fmt.Errorf("%q is not a decimal number", t)
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a finite number", t)
	}
	return v, nil
}

// FormatBytes prints a byte count compactly (powers of 10, as sizes are written in specs).
func FormatBytes(b int64) string {
	switch {
	case b >= 1e9 && b%1e7 == 0:
		return strconv.FormatFloat(float64(b)/1e9, 'g', -1, 64) + "GB"
	case b >= 1e6 && b%1e4 == 0:
		return strconv.FormatFloat(float64(b)/1e6, 'g', -1, 64) + "MB"
	case b >= 1e3 && b%10 == 0:
		return strconv.FormatFloat(float64(b)/1e3, 'g', -1, 64) + "KB"
	}
	return strconv.FormatInt(b, 10) + "B"
}

// FormatRate prints bits per second compactly.
func FormatRate(bps float64) string {
	switch {
	case bps >= 1e9:
		return strconv.FormatFloat(bps/1e9, 'g', 6, 64) + "Gbps"
	case bps >= 1e6:
		return strconv.FormatFloat(bps/1e6, 'g', 6, 64) + "Mbps"
	case bps >= 1e3:
		return strconv.FormatFloat(bps/1e3, 'g', 6, 64) + "Kbps"
	}
	return strconv.FormatFloat(bps, 'g', 6, 64) + "bps"
}
