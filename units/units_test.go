package units

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{"1500": 1500, "1500B": 1500, "64KB": 64000, "5MB": 5000000, "1MiB": 1 << 20, "1.5kb": 1500} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if s, err := ParseSize("6bdp"); err != nil || s.Resolve(25000) != 150000 {
		t.Errorf("6bdp -> %v %v", s, err)
	}
	for in, want := range map[string]float64{"100Gbps": 100e9, "10mbps": 10e6, "1e9": 1e9, "1.6Tbps": 1.6e12} {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %g, %v; want %g", in, got, err, want)
		}
	}
	for in, want := range map[string]clock.Time{"1us": clock.Microsecond, "10ms": 10 * clock.Millisecond, "2s": 2 * clock.Second, "300ns": 300 * clock.Nanosecond} {
		got, err := ParseTime(in)
		if err != nil || got != want {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "fast", "-1MB", "1xB"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"10", "1 fortnight", "-1us"} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}
	if _, err := ParseRate("0Gbps"); err == nil {
		t.Error("zero rate accepted")
	}
}

// The inputs issue 12 found overflowing or accepted: each is refused, naming the text.
func TestNonFiniteAndOutOfRange(t *testing.T) {
	for _, bad := range []string{"1e30", "1e30B", "nan", "NaN", "inf", "+Inf", "-inf", "infinity", "1e400", "2PB", "1e7bdp", "nanbdp", "infbdp", "0x10", "1_000"} {
		if s, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %v, accepted", bad, s)
		} else if !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseSize(%q): %v does not quote the text", bad, err)
		}
	}
	for _, bad := range []string{"nan", "infGbps", "1e30s", "1e30", "nanbps", "2e15"} {
		if r, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) = %g, accepted", bad, r)
		}
	}
	for _, bad := range []string{"1e30s", "nans", "infus", "2e6s", "-0.1ps"} {
		if v, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) = %v, accepted", bad, v)
		}
	}
	if v, err := ParseTime("1e6s"); err != nil || v != MaxTime {
		t.Errorf("ParseTime(1e6s) = %v, %v; want the largest time", v, err)
	}
	if v, err := ParseBytes("1000TB"); err == nil {
		t.Errorf("1000TB has no unit TB but parsed as %d", v)
	}
	if got := (Size{BDPs: MaxBDPs}).Resolve(math.MaxInt64); got != MaxBytes {
		t.Errorf("Resolve saturates at %d, want %d", got, MaxBytes)
	}
}

// inRange is what every parsed value must satisfy.
func checkSize(t *testing.T, in string, s Size) {
	t.Helper()
	switch {
	case s.BDPs != 0 && s.Bytes != 0:
		t.Fatalf("ParseSize(%q) = %+v: both bytes and BDPs", in, s)
	case s.BDPs != 0 && !(s.BDPs > 0 && s.BDPs <= MaxBDPs):
		t.Fatalf("ParseSize(%q) = %+v: BDPs out of range", in, s)
	case s.Bytes < 0 || s.Bytes > MaxBytes:
		t.Fatalf("ParseSize(%q) = %+v: bytes out of range", in, s)
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1500", "64KB", "5MB", "1.5MiB", "6bdp", "1e15", "1e30", "nan", "0.5bdp", "-1", "1GB", "123.45GB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSize(in)
		if err != nil {
			return
		}
		checkSize(t, in, s)
		// Printing and parsing again gives the same size.
		out := s.String()
		s2, err := ParseSize(out)
		if err != nil || s2 != s {
			t.Fatalf("ParseSize(%q) = %+v prints %q, which parses to %+v, %v", in, s, out, s2, err)
		}
	})
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"100Gbps", "25gbit", "1.6Tbps", "1e9", "10m", "nan", "1e30"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r, err := ParseRate(in)
		if err != nil {
			return
		}
		if !(r > 0 && r <= MaxRate) {
			t.Fatalf("ParseRate(%q) = %g: out of (0, %g]", in, r, MaxRate)
		}
		out := FormatRate(r)
		r2, err := ParseRate(out)
		if err != nil || math.Abs(r2-r) > 1e-5*r { // FormatRate keeps 6 digits
			t.Fatalf("ParseRate(%q) = %g prints %q, which parses to %g, %v", in, r, out, r2, err)
		}
	})
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"1us", "10ms", "2s", "300ns", "84.48ns", "1e6s", "1e30s", "nans", "1µs"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, err := ParseTime(in)
		if err != nil {
			return
		}
		if v < 0 || v > MaxTime {
			t.Fatalf("ParseTime(%q) = %d ps: out of [0, %v]", in, int64(v), MaxTime)
		}
		// Picoseconds printed back parse to the same time.
		if v2, err := ParseTime(strconv.FormatInt(int64(v), 10) + "ps"); err != nil || v2 != v {
			t.Fatalf("ParseTime(%q) = %d ps does not parse back: %v %v", in, int64(v), v2, err)
		}
	})
}
