package units

import (
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
