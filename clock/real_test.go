package clock

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestRealFiresInOrderAndKeepsLogicalTime(t *testing.T) {
	if err := PreciseThread(); err != nil {
		t.Fatal(err)
	}
	r := NewReal(MonotonicNanos())
	var got []Time
	var at []Time
	for _, d := range []Time{3 * Millisecond, 1 * Millisecond, 2 * Millisecond} {
		d := d
		r.AfterFunc(d, func() { got = append(got, d); at = append(at, r.Now()) })
	}
	stopped := r.AfterFunc(Millisecond, func() { t.Error("a stopped timer fired") })
	if !stopped.Stop() {
		t.Fatal("Stop on a pending timer returned false")
	}
	r.Run(nil)
	want := []Time{Millisecond, 2 * Millisecond, 3 * Millisecond}
	for i := range want {
		if got[i] != want[i] || at[i] != want[i] {
			t.Fatalf("fired %v at logical %v, want %v at their deadlines", got, at, want)
		}
	}
	if r.Wall() < 3*Millisecond {
		t.Fatalf("ran before the deadlines: wall %v", r.Wall())
	}
}

// A chain of timers (an egress port serializing frame after frame) keeps its schedule even though each
// wake-up is late: the next deadline is computed from the logical time.
func TestRealChainDoesNotAccumulateLag(t *testing.T) {
	if err := PreciseThread(); err != nil {
		t.Fatal(err)
	}
	r := NewReal(MonotonicNanos())
	const step, n = 50 * Microsecond, 200
	k := 0
	var tick func()
	tick = func() {
		if k++; k < n {
			r.AfterFunc(step, tick)
		}
	}
	r.AfterFunc(step, tick)
	r.Run(nil)
	if r.Now() != step*n {
		t.Fatalf("logical end %v, want %v", r.Now(), step*n)
	}
	lag := r.Lag()
	// Accumulated lag would put the end past the schedule by the sum of every wake-up's lateness; a
	// chain that keeps its schedule ends at most one wake-up late. Compare against the worst single
	// lateness, so that one VM stall (40-70 ms here now and then) is not taken for accumulation.
	if over := r.Wall() - step*n; over > lag.Max+5*Millisecond {
		t.Fatalf("wall end %v is %v past the schedule, more than the worst single lateness %v", r.Wall(), over, lag.Max)
	}
	t.Logf("lag mean %v max %v, >10us %d of %d", lag.Mean(), lag.Max, lag.Over[0], lag.Fired)
	if lag.Fired != n {
		t.Fatalf("lag counted %d callbacks, want %d", lag.Fired, n)
	}
}

func TestRealSyncIsMonotonic(t *testing.T) {
	r := NewReal(MonotonicNanos() + int64(Second/Nanosecond))
	if r.Sync() != 0 {
		t.Fatal("Sync before the epoch must not go negative")
	}
	r2 := NewReal(MonotonicNanos())
	a := r2.Sync()
	b := r2.Sync()
	if b < a {
		t.Fatalf("Sync went backwards: %v then %v", a, b)
	}
}

func BenchmarkRealTimerLag(b *testing.B) {
	if err := PreciseThread(); err != nil {
		b.Fatal(err)
	}
	r := NewReal(MonotonicNanos())
	k := 0
	var tick func()
	tick = func() {
		if k++; k < b.N {
			r.AfterFunc(20*Microsecond, tick)
		}
	}
	r.AfterFunc(20*Microsecond, tick)
	r.Run(nil)
	lag := r.Lag()
	b.ReportMetric(float64(lag.Mean())/1e6, "lag-mean-us")
	b.ReportMetric(float64(lag.Max)/1e6, "lag-max-us")
}

// A loop catching up after a stall fires timers one step at a time and reads frames at the step's
// time: RunDueUntil must leave later overdue timers alone, and AdvanceTo must not pass the wall clock.
func TestRealCatchUpSteps(t *testing.T) {
	r := NewReal(MonotonicNanos())
	var fired []Time
	for _, at := range []Time{10 * Microsecond, 20 * Microsecond, 30 * Microsecond} {
		r.AfterFunc(at, func() { fired = append(fired, r.Now()) })
	}
	r.SleepUntil(40 * Microsecond) // all three are overdue now
	if n := r.RunDueUntil(25 * Microsecond); n != 2 {
		t.Fatalf("RunDueUntil(25us) fired %d timers, want the 2 due by then", n)
	}
	if got := r.AdvanceTo(25 * Microsecond); got != 25*Microsecond {
		t.Fatalf("AdvanceTo(25us) = %v, want 25us", got)
	}
	if n := r.RunDue(); n != 1 || fired[2] != 30*Microsecond {
		t.Fatalf("RunDue fired %d, third at %v; want 1 at its 30us deadline", n, fired)
	}
	if got, wall := r.AdvanceTo(Second), r.Wall(); got > wall {
		t.Fatalf("AdvanceTo(1s) = %v, past the wall clock %v", got, wall)
	}
}

// MonotonicNanos must be CLOCK_MONOTONIC itself: agents, the backend and the kernel-host driver (which
// reads it with clock_gettime) share time zero through it.
func TestMonotonicNanosIsClockMonotonic(t *testing.T) {
	var ts unix.Timespec
	for i := 0; i < 5; i++ {
		a := MonotonicNanos()
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		b := MonotonicNanos()
		if c := ts.Nano(); c < a || c > b {
			t.Fatalf("clock_gettime(CLOCK_MONOTONIC) = %d is not between two MonotonicNanos readings %d and %d", c, a, b)
		}
	}
}

// The lag sum holds what an int64 of picoseconds cannot: two million timers each 10 s late (a loop far
// behind the wall clock) sum to 2e19 ps, past int64's 9.2e18, which once printed a negative mean.
func TestLagSumDoesNotWrap(t *testing.T) {
	r := NewReal(0)
	for i := 0; i < 2_000_000; i++ {
		r.noteLag(10*Second, 0)
	}
	if m := r.Lag().Mean(); m != 10*Second {
		t.Fatalf("mean lag %v, want 10s", m)
	}
}

// A timer that halts the clock is the last to fire: a timer due at the same instant and scheduled
// after it does not, nor any later one, and Next reports nothing pending.
func TestRealHalt(t *testing.T) {
	r := NewReal(MonotonicNanos() - 1e12) // everything is due
	var fired []int
	r.AfterFunc(10, func() { fired = append(fired, 1) })
	r.AfterFunc(20, func() { fired = append(fired, 2); r.Halt() })
	r.AfterFunc(20, func() { fired = append(fired, 3) })
	r.AfterFunc(30, func() { fired = append(fired, 4) })
	r.RunDue()
	r.RunDue()
	if len(fired) != 2 || fired[0] != 1 || fired[1] != 2 || !r.Halted() {
		t.Fatalf("fired %v, halted %v: want [1 2], halted", fired, r.Halted())
	}
	if _, ok := r.Next(); ok {
		t.Fatal("a halted clock reports a pending timer")
	}
	if r.Now() != 20 {
		t.Fatalf("now %v, want the halting timer's 20", r.Now())
	}
}
