package traffic

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/units"
)

// Seeds are the repo's own distributions and schedules as its writers print them.
func FuzzParseCDF(f *testing.F) {
	for _, name := range BuiltinCDFs() {
		c, _ := Builtin(name)
		var b bytes.Buffer
		c.Format(&b)
		f.Add(b.String())
	}
	f.Add("0 0\n+Inf 100\n")
	f.Add("# ConWeave writes fractions\n100 0\n1000 0.5\n10000 1\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := ParseCDF("f", strings.NewReader(text))
		if err != nil {
			return
		}
		m := c.Mean()
		if !(m >= 0 && m <= float64(units.MaxBytes)) {
			t.Fatalf("mean %v out of range", m)
		}
		r := Rand(1, 0)
		for i := 0; i < 8; i++ {
			if s := c.Sample(r); s < 1 || s > units.MaxBytes {
				t.Fatalf("sample %d out of [1, %d]", s, units.MaxBytes)
			}
		}
		// Print and parse again: the same points.
		var b bytes.Buffer
		if err := c.Format(&b); err != nil {
			t.Fatal(err)
		}
		c2, err := ParseCDF("f", &b)
		if err != nil {
			t.Fatalf("printed CDF does not parse: %v\n%s", err, b.String())
		}
		if !reflect.DeepEqual(c.Size, c2.Size) || len(c.Cum) != len(c2.Cum) {
			t.Fatalf("round trip changed the sizes: %v -> %v", c.Size, c2.Size)
		}
		for i := range c.Cum {
			if math.Abs(c.Cum[i]-c2.Cum[i]) > 1e-12 {
				t.Fatalf("round trip changed point %d: %v -> %v", i, c.Cum[i], c2.Cum[i])
			}
		}
	})
}

const fuzzHosts = 16

func seedSchedules() []Schedule {
	var out []Schedule
	web, _ := Builtin("websearch")
	if s, err := Poisson(Rand(1, 0), Arrivals{Sizes: web, RateBps: 100e9, Load: 0.3, Duration: clock.Millisecond,
		Matrix: Uniform([]int{0, 1, 2, 3, 4, 5, 6, 7})}); err == nil {
		out = append(out, s[:min(len(s), 20)])
	}
	if s, err := ParamServer(PS{Server: 0, Workers: []int{1, 2, 3}, Push: 1000, Broadcast: 2000, Rounds: 2}); err == nil {
		out = append(out, s)
	}
	if s, err := Incast(Rand(1, 1), fuzzHosts, 4, 0, nil, 64000, clock.Microsecond); err == nil {
		out = append(out, s)
	}
	return out
}

// checkTrace: every parsed flow in range.
func checkTrace(t *testing.T, s Schedule) {
	t.Helper()
	for _, f := range s {
		switch {
		case f.Src < 0 || f.Src >= fuzzHosts || f.Dst < 0 || f.Dst >= fuzzHosts || f.Src == f.Dst:
			t.Fatalf("flow %d: %d -> %d", f.ID, f.Src, f.Dst)
		case f.Size < 1 || f.Size > units.MaxBytes:
			t.Fatalf("flow %d: size %d", f.ID, f.Size)
		case f.At < 0 || f.At > units.MaxTime:
			t.Fatalf("flow %d: start %d ps", f.ID, int64(f.At))
		}
	}
}

func FuzzReadHPCC(f *testing.F) {
	for _, s := range seedSchedules() {
		var b bytes.Buffer
		WriteHPCC(&b, s)
		f.Add(b.String())
	}
	f.Add("1\n0 1 3 100 1000 1e12\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ReadHPCC("f", strings.NewReader(text), fuzzHosts)
		if err != nil {
			return
		}
		checkTrace(t, s)
		// flow.txt prints times in ns: the first print may round, after that print -> parse is stable.
		var b1, b2 bytes.Buffer
		WriteHPCC(&b1, s)
		s1, err := ReadHPCC("f", bytes.NewReader(b1.Bytes()), fuzzHosts)
		if err != nil {
			t.Fatalf("printed trace does not parse: %v\n%s", err, b1.String())
		}
		WriteHPCC(&b2, s1)
		if b1.String() != b2.String() {
			t.Fatalf("print -> parse -> print differs:\n%s\n%s", b1.String(), b2.String())
		}
	})
}

func FuzzReadHTSim(f *testing.F) {
	for _, s := range seedSchedules() {
		var b bytes.Buffer
		if WriteHTSim(&b, s, fuzzHosts) == nil {
			f.Add(b.String())
		}
	}
	f.Add("Nodes 4\nConnections 1\n0->1 id 1 start nan size 100\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ReadHTSim("f", strings.NewReader(text), fuzzHosts)
		if err != nil {
			return
		}
		checkTrace(t, s)
		var b1, b2 bytes.Buffer
		if err := WriteHTSim(&b1, s, fuzzHosts); err != nil {
			return // a dependency shape .cm cannot hold (one trigger per connection)
		}
		s1, err := ReadHTSim("f", bytes.NewReader(b1.Bytes()), fuzzHosts)
		if err != nil {
			t.Fatalf("printed matrix does not parse: %v\n%s", err, b1.String())
		}
		if err := WriteHTSim(&b2, s1, fuzzHosts); err != nil || b1.String() != b2.String() {
			t.Fatalf("print -> parse -> print differs (%v):\n%s\n%s", err, b1.String(), b2.String())
		}
	})
}
