package traffic

import (
	"math"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
)

// A load so small that the mean gap passes the clock's range used to wrap to negative times (flows ran
// at t=0); now the arrivals simply end.
func TestPoissonTinyLoadDoesNotWrap(t *testing.T) {
	c, _ := Builtin("websearch")
	s, err := Poisson(Rand(1, 0), Arrivals{Sizes: c, RateBps: 100e9, Load: 1e-12, Duration: 20 * clock.Millisecond, Matrix: Uniform([]int{0, 1, 2, 3})})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range s {
		if f.At < 0 || f.At >= 20*clock.Millisecond {
			t.Fatalf("flow at %v, outside [0, 20ms)", f.At)
		}
	}
	inc, err := PoissonIncast(Rand(1, 0), IncastArrivals{Hosts: []int{0, 1, 2}, Senders: 2, Size: 1e15, RateBps: 1, Load: 1e-12, Duration: clock.Second})
	if err != nil || len(inc) != 0 {
		t.Fatalf("incast with a gap beyond the clock: %d flows, %v", len(inc), err)
	}
}

func TestCDFNonFiniteRefused(t *testing.T) {
	for _, text := range []string{"0 0\n+Inf 100\n", "0 0\nNaN 100\n", "0 0\n1e30 100\n", "0 0\n100 NaN\n", "0 0\n100 Inf\n"} {
		if c, err := ParseCDF("x", strings.NewReader(text)); err == nil {
			t.Errorf("%q accepted: %+v", text, c)
		}
	}
}

func TestTraceStartBeyondTheClock(t *testing.T) {
	_, err := ReadHPCC("f", strings.NewReader("1\n0 1 3 100 1000 1e12\n"), 4)
	if err == nil || !strings.Contains(err.Error(), "f:2: start 1e+12 s is beyond") {
		t.Errorf("start 1e12 s: %v", err)
	}
	_, err = ReadHTSim("f", strings.NewReader("Nodes 4\n0->1 id 1 start nan size 100\n"), 4)
	if err == nil || !strings.Contains(err.Error(), "start NaN") {
		t.Errorf("start nan: %v", err)
	}
	if got := seconds(math.Inf(1)); got != clock.Never {
		t.Errorf("seconds(+Inf) = %v", got)
	}
}

func TestMoEBytesDoNotWrap(t *testing.T) {
	_, err := MixtureOfExperts(Rand(1, 0), MoE{Hosts: []int{0, 1}, Experts: 2, TopK: 1, Tokens: 1 << 20, TokenSize: 1 << 40, Layers: 1})
	if err == nil || !strings.Contains(err.Error(), "tokens x top_k x token_size") {
		t.Errorf("2^60 bytes per pair: %v", err)
	}
}
