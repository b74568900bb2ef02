package clock

import (
	"math"
	"strings"
	"testing"
)

func TestStringOnExtremes(t *testing.T) {
	for _, c := range []struct {
		t    Time
		want string
	}{
		{math.MinInt64, "-9.22337e+06s"},
		{math.MaxInt64, "9.22337e+06s"},
		{-Microsecond, "-1us"},
		{0, "0ps"},
	} {
		if got := c.t.String(); got != c.want {
			t.Errorf("Time(%d).String() = %q, want %q", int64(c.t), got, c.want)
		}
	}
}

func TestSaturation(t *testing.T) {
	for _, s := range []float64{1e12, math.Inf(1), math.NaN()} {
		if got := FromSeconds(s); got != Never {
			t.Errorf("FromSeconds(%g) = %v, want Never", s, got)
		}
	}
	if got := FromSeconds(-1e12); got != -Never {
		t.Errorf("FromSeconds(-1e12) = %v, want -Never", got)
	}
	if got := FromSeconds(2.5e-6); got != 2500*Nanosecond {
		t.Errorf("FromSeconds(2.5us) = %v", got)
	}
	if got := Add(Never-1, 5); got != Never {
		t.Errorf("Add past the end = %v, want Never", got)
	}
	if got := Add(-Never, -5); got != -Never {
		t.Errorf("Add before the start = %v, want -Never", got)
	}
	if got := Add(3, -5); got != -2 {
		t.Errorf("Add(3, -5) = %v", got)
	}
	if got := TxTime(1<<30, 1e-9); got != Never {
		t.Errorf("TxTime at a tiny rate = %v, want Never", got)
	}
}

func FuzzTimeString(f *testing.F) {
	for _, v := range []int64{0, 1, -1, 999, 1e3, 84480, 1e12, math.MaxInt64, math.MinInt64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v int64) {
		s := Time(v).String()
		if s == "" || strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
			t.Fatalf("Time(%d).String() = %q", v, s)
		}
		if (v < 0) != strings.HasPrefix(s, "-") {
			t.Fatalf("Time(%d).String() = %q: sign lost", v, s)
		}
	})
}
