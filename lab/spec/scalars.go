package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/units"
)

// Size is a byte quantity as written in a spec: "5MB", "1500", or "6bdp" (resolved by the lab against
// its BDP). It marshals back to the same text, so a resolved spec re-parses to itself.
type Size struct{ units.Size }

// ParseSize parses a spec size.
func ParseSize(text string) (Size, error) {
	s, err := units.ParseSize(text)
	return Size{s}, err
}

// MustSize is ParseSize for literals in Go specs and tests.
func MustSize(text string) Size {
	s, err := ParseSize(text)
	if err != nil {
		panic(err)
	}
	return s
}

// UnmarshalYAML accepts a plain byte count or a size with a unit.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a size such as 1500, 64KB, 5MB or 6bdp, got a %s", kindName(n))
	}
	v, err := units.ParseSize(n.Value)
	if err != nil {
		return err
	}
	s.Size = v
	return nil
}

// MarshalYAML writes the size as a spec would.
func (s Size) MarshalYAML() (any, error) { return s.String(), nil }

// Negative reports a size no parser produces but a Go spec can hold.
func (s Size) Negative() bool { return s.Bytes < 0 || s.BDPs < 0 }

// Rate is bits per second.
type Rate float64

// Bps returns the rate in bits per second.
func (r Rate) Bps() float64 { return float64(r) }

func (r Rate) String() string { return formatRate(float64(r)) }

// UnmarshalYAML accepts "100Gbps", "25gbit" or a bare number of bits per second.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a rate such as 100Gbps, got a %s", kindName(n))
	}
	v, err := units.ParseRate(n.Value)
	if err != nil {
		return err
	}
	*r = Rate(v)
	return nil
}

// MarshalYAML writes the rate exactly (units.FormatRate rounds to 6 digits).
func (r Rate) MarshalYAML() (any, error) { return formatRate(float64(r)), nil }

// formatRate prints bps exactly, in the largest unit that divides it.
func formatRate(bps float64) string {
	for _, u := range []struct {
		s string
		m float64
	}{{"Tbps", 1e12}, {"Gbps", 1e9}, {"Mbps", 1e6}, {"Kbps", 1e3}} {
		if v := bps / u.m; bps >= u.m && v == math.Trunc(v*1e3)/1e3 {
			return strconv.FormatFloat(v, 'f', -1, 64) + u.s
		}
	}
	return strconv.FormatFloat(bps, 'f', -1, 64) + "bps"
}

// Time is a point or span of paper time, in picoseconds (clock.Time).
type Time clock.Time

// Clock returns the time as a clock.Time.
func (t Time) Clock() clock.Time { return clock.Time(t) }

func (t Time) String() string { return formatTime(clock.Time(t)) }

// UnmarshalYAML accepts "1us", "10ms", "2s", and a bare 0 (zero in any unit). Other bare numbers are
// refused: a unit is never implied.
func (t *Time) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a time such as 1us, 10ms or 2s, got a %s", kindName(n))
	}
	if v, err := strconv.ParseFloat(strings.TrimSpace(n.Value), 64); err == nil && v == 0 {
		*t = 0
		return nil
	}
	v, err := units.ParseTime(n.Value)
	if err != nil {
		return err
	}
	*t = Time(v)
	return nil
}

// MarshalYAML writes the time exactly, in the largest unit that divides it.
func (t Time) MarshalYAML() (any, error) { return formatTime(clock.Time(t)), nil }

func formatTime(t clock.Time) string {
	if t == 0 {
		return "0s"
	}
	for _, u := range []struct {
		s string
		m clock.Time
	}{{"s", clock.Second}, {"ms", clock.Millisecond}, {"us", clock.Microsecond}, {"ns", clock.Nanosecond}} {
		// Up to three decimals in a unit reads better than a long integer in the next one down.
		if t >= u.m && t%(u.m/1000) == 0 { // (t*1000)%u.m == 0 without overflowing

			return strconv.FormatFloat(float64(t)/float64(u.m), 'f', -1, 64) + u.s
		}
	}
	return strconv.FormatInt(int64(t), 10) + "ps"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	}
	return "scalar"
}
