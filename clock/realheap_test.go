package clock

import "testing"

// BenchmarkRealPending fires timers that each schedule another, with pending timers kept at about
// 2000 spread over 2 ms ahead (an agent's NDC(4,1) run: egress serialization and delivery timers),
// every one already due on the wall clock: the cost of the queue per fired timer.
func BenchmarkRealPending(b *testing.B) {
	r := NewReal(MonotonicNanos() - 1e12) // the wall clock is 1000 s ahead: everything is due
	rng := uint64(1)
	next := func() Time {
		rng = rng*6364136223846793005 + 1442695040888963407
		return Time(rng>>33) % (2 * Millisecond)
	}
	left := b.N
	var f func()
	f = func() {
		if left--; left > 0 {
			r.Schedule(next(), f)
		}
	}
	for i := 0; i < 2000; i++ {
		r.Schedule(next(), f)
	}
	b.ResetTimer()
	for left > 0 {
		if r.RunDueUntil(r.Now()+Millisecond) == 0 {
			break
		}
	}
}
