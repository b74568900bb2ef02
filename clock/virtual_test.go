package clock

import (
	"fmt"
	"sort"
	"testing"
)

func TestVirtualOrderAndStop(t *testing.T) {
	v := NewVirtual()
	var got []int
	v.AfterFunc(3*Nanosecond, func() { got = append(got, 3) })
	v.AfterFunc(Nanosecond, func() { got = append(got, 1) })
	// Same instant: scheduling order breaks the tie, which is what makes runs reproducible.
	v.AfterFunc(Nanosecond, func() { got = append(got, 2) })
	stopped := v.AfterFunc(2*Nanosecond, func() { got = append(got, 99) })
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer returned false")
	}
	if stopped.Stop() {
		t.Fatal("second Stop returned true")
	}
	v.AfterFunc(Nanosecond, func() {
		v.AfterFunc(0, func() { got = append(got, 4) })
	})
	n := v.RunUntil(10 * Nanosecond)
	want := []int{1, 2, 4, 3}
	if len(got) != len(want) {
		t.Fatalf("got %v want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v want %v", got, want)
		}
	}
	if n != 5 || v.Now() != 10*Nanosecond {
		t.Fatalf("fired %d now %v", n, v.Now())
	}
}

func TestTxTime(t *testing.T) {
	if got := TxTime(1056, 100e9); got != 84480 {
		t.Fatalf("1056 B at 100G = %d ps, want 84480", got)
	}
}

func BenchmarkVirtualEvents(b *testing.B) {
	v := NewVirtual()
	var tick func()
	tick = func() { v.AfterFunc(Nanosecond, tick) }
	for i := 0; i < 64; i++ {
		v.AfterFunc(Time(i), tick)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v.Step()
	}
}

func TestVirtualHeapOrderRandom(t *testing.T) {
	v := NewVirtual()
	var got []Time
	rnd := xorshift(12345)
	for i := 0; i < 5000; i++ {
		d := Time(rnd(1000))
		v.AfterFunc(d, func() { got = append(got, v.Now()) })
	}
	v.RunUntil(Second)
	if len(got) != 5000 {
		t.Fatalf("fired %d of 5000", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			t.Fatalf("time went backwards at %d: %v after %v", i, got[i], got[i-1])
		}
	}
}

// BenchmarkVirtualDeep keeps 4096 events pending (a fat-tree's ports and links in flight) at random
// near-future times, as the virtual backend does; the Schedule variant allocates nothing.
func BenchmarkVirtualDeep(b *testing.B) {
	b.Run("AfterFunc", func(b *testing.B) { benchPending(b, Microsecond, 1, false) })
	b.Run("Schedule", func(b *testing.B) { benchPending(b, Microsecond, 1, true) })
}

// benchPending steps a clock that keeps 4096 events pending, each rescheduling itself up to span ahead
// (a xorshift draw); the first ones are spaced by gap. sched uses Schedule instead of AfterFunc.
func benchPending(b *testing.B, span, gap Time, sched bool) {
	v := NewVirtual()
	rnd := xorshift(88172645463325252)
	var tick func()
	tick = func() {
		d := Time(rnd(uint64(span)))
		if sched {
			v.Schedule(d, tick)
		} else {
			v.AfterFunc(d, tick)
		}
	}
	for i := 0; i < 4096; i++ {
		if sched {
			v.Schedule(Time(i)*gap, tick)
		} else {
			v.AfterFunc(Time(i)*gap, tick)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v.Step()
	}
}

func TestLiveAndHorizon(t *testing.T) {
	v := NewVirtual()
	a := v.AfterFunc(5*Nanosecond, func() {})
	v.Schedule(2*Nanosecond, func() {})
	if v.Live() != 2 || v.Horizon() != 5*Nanosecond {
		t.Fatalf("live %d horizon %v", v.Live(), v.Horizon())
	}
	a.Stop()
	if v.Live() != 1 || v.Pending() != 2 {
		t.Fatalf("after stop: live %d pending %d", v.Live(), v.Pending())
	}
	v.Step()
	if v.Live() != 0 || v.Step() || v.Pending() != 0 {
		t.Fatalf("after run: live %d pending %d", v.Live(), v.Pending())
	}
}

// TestWheelKeepsHeapOrder drives the clock and a plain reference queue (linear scan for the least
// (time, sequence)) with the same random program: delays from 0 to far beyond the wheel's span, ties,
// events that schedule more events, and stopped timers. They must fire the same events in the same
// order at the same times, which is what keeps runs identical to the heap-only clock.
func TestWheelKeepsHeapOrder(t *testing.T) {
	type ref struct {
		at  Time
		seq int
		id  int
	}
	v := NewVirtual()
	var pending []ref
	stopped := map[int]bool{}
	var got, want []int
	rnd := xorshift(uint64(0x9E3779B97F4A7C15))
	delays := []Time{0, 1, 8191, 8192, 80 * Nanosecond, Microsecond, wheelBuckets<<wheelShift - 1,
		wheelBuckets << wheelShift, 10 * Microsecond, Millisecond}
	seq, id := 0, 0
	var timers []Timer
	var add func()
	add = func() {
		d := delays[rnd(uint64(len(delays)))] + Time(rnd(3))
		me := id
		id++
		seq++
		pending = append(pending, ref{at: v.Now() + d, seq: seq, id: me})
		timers = append(timers, v.AfterFunc(d, func() {
			got = append(got, me)
			for k := rnd(3); k > 0 && id < 20000; k-- {
				add()
			}
			if n := len(timers); n > 0 && rnd(5) == 0 {
				k := int(rnd(uint64(n)))
				if timers[k].Stop() {
					stopped[k] = true
				}
			}
		}))
	}
	for i := 0; i < 200; i++ {
		add()
	}
	v.RunUntil(Second)
	// Replay the reference: fire in (time, sequence) order, skipping the events the clock's run stopped.
	for len(pending) > 0 {
		m := 0
		for i := range pending {
			if pending[i].at < pending[m].at || pending[i].at == pending[m].at && pending[i].seq < pending[m].seq {
				m = i
			}
		}
		if !stopped[pending[m].id] {
			want = append(want, pending[m].id)
		}
		pending = append(pending[:m], pending[m+1:]...)
	}
	if len(got) != len(want) {
		t.Fatalf("fired %d events, reference %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("event %d: fired %d, reference %d", i, got[i], want[i])
		}
	}
	if v.Pending() != 0 || v.Live() != 0 {
		t.Fatalf("left pending %d live %d", v.Pending(), v.Live())
	}
}

// Hosts sending in step put hundreds of events in one bucket, and the step moves through the buckets:
// the arrays must be passed on, not kept by every bucket. Events keep their order throughout.
func TestWheelBurstsReuseArrays(t *testing.T) {
	v := NewVirtual()
	const burst = 500
	var got []int
	for step := 0; step < 3*wheelBuckets; step++ {
		at := Time(step) << wheelShift
		for i := 0; i < burst; i++ {
			id := step*burst + i
			v.Schedule(at-v.Now(), func() { got = append(got, id) })
		}
		v.RunUntil(at)
	}
	for i := range got {
		if got[i] != i {
			t.Fatalf("event %d fired as %d", i, got[i])
		}
	}
	if len(got) != 3*wheelBuckets*burst {
		t.Fatalf("fired %d", len(got))
	}
	held := 0
	for i := range v.wheel {
		held += cap(v.wheel[i].e)
	}
	for _, s := range v.spare {
		held += cap(s)
	}
	// Every bucket keeping a burst-sized array would hold 512 x 512 entries.
	if held > 4*burst+wheelBuckets*bucketKeep {
		t.Fatalf("wheel holds room for %d events after bursts of %d", held, burst)
	}
}

// BenchmarkVirtualFar keeps 4096 events pending up to 100 us ahead, beyond the wheel's 4.19 us span, so
// nearly every event goes through the heap (transport timers do).
func BenchmarkVirtualFar(b *testing.B) { benchPending(b, 100*Microsecond, 25*Nanosecond, true) }

// TestRearmMatchesAfterFunc drives two clocks with the same random program over a few timers: one
// stops a timer and makes a new one with AfterFunc, the other re-arms the one handle with Rearm, while
// the stopped armings' entries are still queued (a pause refreshed before it expires). Both must fire
// the same callbacks at the same times and agree on Live, Pending and Horizon throughout.
func TestRearmMatchesAfterFunc(t *testing.T) {
	type run struct {
		v      *Virtual
		timers [4]Timer
		fired  []string
	}
	a, b := &run{v: NewVirtual()}, &run{v: NewVirtual()}
	rng := uint64(7)
	next := func(n int) int {
		rng = rng*6364136223846793005 + 1442695040888963407
		return int(rng>>33) % n
	}
	for step := 0; step < 20000; step++ {
		i, d := next(4), Time(next(3000))*Nanosecond
		op := next(4)
		for _, r := range []*run{a, b} {
			r := r
			id := step
			f := func() { r.fired = append(r.fired, Time(id).String()+"@"+r.v.Now().String()) }
			switch {
			case op == 0 && r.timers[i] != nil:
				r.timers[i].Stop()
			case r == a:
				if r.timers[i] != nil {
					r.timers[i].Stop()
				}
				r.timers[i] = r.v.AfterFunc(d, f)
			default:
				r.timers[i] = Rearm(r.v, r.timers[i], d, f)
			}
		}
		if next(3) == 0 {
			a.v.Step()
			b.v.Step()
		}
		if a.v.Live() != b.v.Live() || a.v.Pending() != b.v.Pending() || a.v.Horizon() != b.v.Horizon() || a.v.Now() != b.v.Now() {
			t.Fatalf("step %d: live %d/%d pending %d/%d horizon %v/%v now %v/%v", step, a.v.Live(), b.v.Live(),
				a.v.Pending(), b.v.Pending(), a.v.Horizon(), b.v.Horizon(), a.v.Now(), b.v.Now())
		}
	}
	a.v.RunUntil(Second)
	b.v.RunUntil(Second)
	if len(a.fired) == 0 || len(a.fired) != len(b.fired) {
		t.Fatalf("fired %d and %d callbacks", len(a.fired), len(b.fired))
	}
	for i := range a.fired {
		if a.fired[i] != b.fired[i] {
			t.Fatalf("callback %d: %s vs %s", i, a.fired[i], b.fired[i])
		}
	}
	// A re-armed handle stops its new arming.
	v := NewVirtual()
	h := v.AfterFunc(Nanosecond, func() { t.Fatal("a stopped timer fired") })
	h = Rearm(v, h, 2*Nanosecond, func() { t.Fatal("a stopped re-armed timer fired") })
	if !h.Stop() || v.Live() != 0 {
		t.Fatalf("stopping the re-armed timer: live %d", v.Live())
	}
	v.RunUntil(Second)
}

// Re-arming a timer allocates nothing, which is what Rearm is for (a fallback to AfterFunc would pass
// TestRearmMatchesAfterFunc and allocate a handle per pause frame).
func TestRearmDoesNotAllocate(t *testing.T) {
	v := NewVirtual()
	f := func() {}
	h := v.AfterFunc(Nanosecond, f)
	for i := 0; i < 64; i++ { // grow the slots and heap past what the loop below needs
		h = Rearm(v, h, Nanosecond, f)
		v.Step()
	}
	if n := testing.AllocsPerRun(1000, func() { h = Rearm(v, h, Nanosecond, f); v.Step() }); n != 0 {
		t.Errorf("Rearm allocated %.1f times per call", n)
	}
}

// A HeldTimer fires once per arming at the latest arming's time, not after Stop, and arms again after
// a Stop; re-arming it allocates nothing.
func TestHeldTimer(t *testing.T) {
	v := NewVirtual()
	var h HeldTimer
	var fired []Time
	if h.HasFunc() {
		t.Fatal("a zero HeldTimer has a callback")
	}
	h.Stop() // nothing armed yet: no effect
	h.SetFunc(func() { fired = append(fired, v.Now()) })
	h.Arm(v, 10*Nanosecond)
	h.Arm(v, 30*Nanosecond) // replaces the first
	v.RunUntil(Second)
	h.Arm(v, 5*Nanosecond)
	h.Stop()
	v.RunUntil(2 * Second)
	h.Arm(v, 7*Nanosecond)
	v.RunUntil(3 * Second)
	if want := []Time{30 * Nanosecond, 2*Second + 7*Nanosecond}; len(fired) != 2 || fired[0] != want[0] || fired[1] != want[1] {
		t.Fatalf("fired at %v, want %v", fired, want)
	}
	if n := testing.AllocsPerRun(1000, func() { h.Arm(v, Nanosecond); v.Step() }); n != 0 {
		t.Errorf("re-arming a HeldTimer allocated %.1f times per call", n)
	}
}

// TestWheelSortsByOrder drives the clock with events of random Orders scheduled in bursts for a few
// shared instants, as hosts in step schedule them, some into the bucket being drained, and checks each
// event as it fires against a reference: the least pending (time, Order, sequence). A bucket put in
// order when it comes up must fire exactly that.
func TestWheelSortsByOrder(t *testing.T) {
	type ref struct {
		at  Time
		o   Order
		seq int
		id  int
	}
	v := NewVirtual()
	var pending []ref
	rnd := xorshift(uint64(0x2545F4914F6CDD1D))
	delays := []Time{0, 1, 3000, 8191, 8192, 84480, Microsecond, Microsecond + 84480}
	seq, id, fired := 0, 0, 0
	var add func()
	add = func() {
		d := delays[rnd(uint64(len(delays)))]
		o := ArrivalOrder(int(rnd(40)), int(rnd(3)))
		if rnd(4) == 0 {
			o = DeviceOrder(int(rnd(40)))
		}
		me := id
		id++
		seq++
		pending = append(pending, ref{at: v.Now() + d, o: o, seq: seq, id: me})
		v.ScheduleOrdered(d, o, func() {
			m := 0
			for i := range pending {
				p, q := pending[i], pending[m]
				if p.at < q.at || p.at == q.at && (p.o < q.o || p.o == q.o && p.seq < q.seq) {
					m = i
				}
			}
			if pending[m].id != me {
				t.Fatalf("event %d fired %d, reference %d", fired, me, pending[m].id)
			}
			pending = append(pending[:m], pending[m+1:]...)
			fired++
			for k := rnd(3); k > 0 && id < 30000; k-- {
				add()
			}
		})
	}
	for i := 0; i < 500; i++ {
		add()
	}
	v.RunUntil(Second)
	if len(pending) != 0 || fired < 10000 {
		t.Fatalf("fired %d, %d left pending", fired, len(pending))
	}
}

// TestWheelSortsLargeBuckets fills one bucket with events of random times within it and random Orders,
// many tied, both below and above the 2,048 entries the integer keys have room for (above, the bucket
// is merge sorted), and checks the firing order against a stable sort of the scheduling order.
func TestWheelSortsLargeBuckets(t *testing.T) {
	for _, n := range []int{13, 1000, 1 << rankBits, 1<<rankBits + 1, 5000} {
		type ev struct {
			at Time
			o  Order
			id int
		}
		rnd := xorshift(uint64(n)*0x9E3779B97F4A7C15 | 1)
		v := NewVirtual()
		var want []ev
		var got []int
		for i := 0; i < n; i++ {
			e := ev{at: 3<<wheelShift + Time(rnd(4))*2000, o: ArrivalOrder(int(rnd(50)), int(rnd(2))), id: i}
			want = append(want, e)
			v.ScheduleOrdered(e.at, e.o, func() { got = append(got, e.id) })
		}
		sort.SliceStable(want, func(i, j int) bool {
			return want[i].at < want[j].at || want[i].at == want[j].at && want[i].o < want[j].o
		})
		v.RunUntil(Second)
		if len(got) != n {
			t.Fatalf("n=%d: fired %d", n, len(got))
		}
		for i := range want {
			if got[i] != want[i].id {
				t.Fatalf("n=%d: event %d fired %d, want %d", n, i, got[i], want[i].id)
			}
		}
	}
}

// TestWheelPlacesLateComers checks the three ways a bucket that is not being drained takes an event
// that fires before the bucket's last: placed among the last smallPlace entries by push, marked
// unordered and sorted when it comes up (a late-comer further back), and a tie in time and Order
// behind every entry it ties with. A fast path that skipped the sort of a bucket taken out of order, or
// placed a late-comer before a tie, fires another order than the reference's.
func TestWheelPlacesLateComers(t *testing.T) {
	type ev struct {
		at Time
		o  Order
	}
	cases := map[string][]ev{
		"in order":             {{100, DeviceOrder(1)}, {100, DeviceOrder(2)}, {200, DeviceOrder(0)}, {300, DeviceOrder(5)}},
		"late-comer near":      {{100, DeviceOrder(1)}, {300, DeviceOrder(2)}, {400, DeviceOrder(3)}, {200, DeviceOrder(9)}},
		"late-comer ties":      {{100, DeviceOrder(4)}, {100, DeviceOrder(7)}, {100, DeviceOrder(4)}, {100, DeviceOrder(4)}},
		"late-comer far":       {{500, DeviceOrder(1)}, {501, 0}, {502, 0}, {503, 0}, {504, 0}, {505, 0}, {506, 0}, {507, 0}, {508, 0}, {509, 0}, {10, DeviceOrder(3)}},
		"far then in order":    {{500, 0}, {600, 0}, {700, 0}, {800, 0}, {900, 0}, {1000, 0}, {1100, 0}, {1200, 0}, {1300, 0}, {1, 0}, {1400, 0}, {2, 0}},
		"reversed":             {{8000, 0}, {7000, 0}, {6000, 0}, {5000, 0}, {4000, 0}, {3000, 0}, {2000, 0}, {1000, 0}, {0, 0}, {900, 0}, {8100, 0}},
		"near, then far, tied": {{300, DeviceOrder(2)}, {300, DeviceOrder(1)}, {310, 0}, {320, 0}, {330, 0}, {340, 0}, {350, 0}, {360, 0}, {370, 0}, {380, 0}, {300, DeviceOrder(1)}},
	}
	for name, evs := range cases {
		for _, start := range []Time{0, 3 << wheelShift} { // the bucket of now, and one further on
			v := NewVirtual()
			var got []int
			for id, e := range evs {
				v.ScheduleOrdered(start+e.at, e.o, func() { got = append(got, id) })
			}
			want := make([]int, len(evs))
			for i := range want {
				want[i] = i
			}
			sort.SliceStable(want, func(i, j int) bool {
				a, b := evs[want[i]], evs[want[j]]
				return a.at < b.at || a.at == b.at && a.o < b.o
			})
			v.RunUntil(Second)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s, bucket at %v: fired %v, want %v", name, start, got, want)
			}
		}
	}
}

// xorshift is the tests' generator (Marsaglia's xorshift64): seeded, so a failing order is replayed.
func xorshift(x uint64) func(n uint64) uint64 {
	return func(n uint64) uint64 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return x % n
	}
}
