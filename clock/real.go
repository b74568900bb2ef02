package clock

import (
	"runtime"
	_ "unsafe" // go:linkname runtime.nanotime

	"golang.org/x/sys/unix"
)

// Real is the netns backend's clock: picoseconds since an epoch on CLOCK_MONOTONIC (shared by every
// process on the machine, so agents started separately agree on time 0). It is not safe for concurrent
// use: one event-loop goroutine owns it, fires due timers with RunDue and sleeps until Next, doing its
// I/O in between (the agent sleeps in ppoll so frames wake it too).
//
// Now is a logical time that never goes backwards: inside a timer callback it is the timer's deadline
// (not the moment the loop got to it), after Sync it is the wall time. So an egress port that chains
// "serialize the next frame" timers keeps its schedule when the loop wakes a few microseconds late,
// instead of losing that time on every frame (the naive token bucket's 35 Mb/s of 100: docs/architecture.md
// §Measured choices). How late the loop ran is measured, not hidden: see Lag.
type Real struct {
	epoch  int64 // CLOCK_MONOTONIC nanoseconds at Time 0
	now    Time
	seq    uint64
	events []*event // 4-ary min-heap on (at, ord, seq)
	fired  uint64
	lag    LagStats
	spare  []*event // fired events of Schedule, for reuse
	halted bool
}

// LagStats says how late timers fired: the wall time at which the loop ran each callback minus its
// deadline.
type LagStats struct {
	Fired uint64
	Max   Time
	MaxAt Time // the deadline of the latest timer: when in the run the worst stall happened
	// Sum is in picoseconds, for the mean. A float: an int64 of picoseconds holds 107 days, which a loop
	// seconds behind the wall clock passes within a million timers (NDC(8,1) at pace 14 wrapped it and
	// reported a mean lag of -691.8 ms).
	Sum float64
	// Over[i] counts callbacks later than LagBuckets[i].
	Over [len(LagBuckets)]uint64
}

// LagBuckets are the thresholds LagStats.Over counts against.
var LagBuckets = [...]Time{10 * Microsecond, 100 * Microsecond, Millisecond, 10 * Millisecond}

// Mean is the mean lag.
func (l LagStats) Mean() Time {
	if l.Fired == 0 {
		return 0
	}
	return Time(l.Sum / float64(l.Fired))
}

// MonotonicNanos reads CLOCK_MONOTONIC. It goes through the Go runtime's clock (the vDSO) rather
// than unix.ClockGettime, which is a real system call: an agent reads the clock several times per frame,
// and the system call was 15% of a loop's CPU on NDC(3,1) (pprof). TestMonotonicNanosIsClockMonotonic
// holds the two to the same clock.
func MonotonicNanos() int64 { return nanotime() }

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// NewReal returns a clock whose Time 0 is epoch (CLOCK_MONOTONIC nanoseconds; use MonotonicNanos()+lead
// to start a little in the future so every process is ready). Now is 0 until the epoch has passed.
func NewReal(epoch int64) *Real { return &Real{epoch: epoch} }

// SetEpoch sets Time 0, for a clock handed to engines before the common start time was known. Call it
// before anything reads the clock.
func (r *Real) SetEpoch(epoch int64) { r.epoch = epoch }

// Epoch returns the CLOCK_MONOTONIC nanoseconds of Time 0.
func (r *Real) Epoch() int64 { return r.epoch }

// Wall is the real time since the epoch (negative before it).
func (r *Real) Wall() Time { return Time(MonotonicNanos()-r.epoch) * Nanosecond }

// Now is the logical time (see Real).
func (r *Real) Now() Time { return r.now }

// AdvanceTo moves the logical time up to t, but never past the wall time: a loop catching up in steps
// (RunDueUntil) processes what it reads between steps at the step's time, not at the moment it woke.
func (r *Real) AdvanceTo(t Time) Time {
	if w := r.Wall(); t > w {
		t = w
	}
	if t > r.now {
		r.now = t
	}
	return r.now
}

// Sync moves the logical time up to the wall time, for work triggered by the outside world (a frame
// arrived) rather than by a timer. It returns the new Now.
func (r *Real) Sync() Time {
	if w := r.Wall(); w > r.now {
		r.now = w
	}
	return r.now
}

// AfterFunc schedules f at Now()+d with Order Harness; a negative d is treated as 0.
func (r *Real) AfterFunc(d Time, f func()) Timer { return r.AfterFuncOrdered(d, Harness, f) }

// AfterFuncOrdered is AfterFunc for an event of Order o. Timers fire in (time, Order, scheduling
// order), the virtual clock's rule (order.go): frames that reach a device at the same instant are then
// taken in an order fixed by the fabric, not by when the loop happened to read them (an 8->1 incast's
// frames arrive in dead heats, and that read order moved its average FCT by 1-2% from one run to the
// next), and in the order the virtual backend takes them.
func (r *Real) AfterFuncOrdered(d Time, o Order, f func()) Timer {
	return r.push(new(event), d, o, f)
}

func (r *Real) push(e *event, d Time, o Order, f func()) *event {
	if d < 0 {
		d = 0
	}
	r.seq++
	e.at, e.ord, e.seq, e.f = r.now+d, o, r.seq, f
	r.events = heapPush(r.events, e)
	return e
}

// Schedule is AfterFunc for a callback nobody will stop (clock.Scheduler): no Timer is handed out, so
// its event is reused once it has fired. An agent fires about two timers per frame-hop (egress
// serialization, delivery at the far port), and a fresh event for each was 90 MB of new memory per
// 2 ms NDC(4,1) run, with its collector off.
func (r *Real) Schedule(d Time, f func()) { r.ScheduleOrdered(d, Harness, f) }

// ScheduleOrdered is Schedule for an event of Order o.
func (r *Real) ScheduleOrdered(d Time, o Order, f func()) {
	var e *event
	if n := len(r.spare); n > 0 {
		e, r.spare = r.spare[n-1], r.spare[:n-1]
	} else {
		e = &event{reuse: true}
	}
	r.push(e, d, o, f)
}

// Halt ends the clock's run at Now, from inside a timer: nothing fires after the timer running, not
// even a timer due at the same instant (the virtual backend stops on the event that found a
// deadlock, and the two backends end a run at the same point), and Next reports nothing pending.
func (r *Real) Halt() { r.halted = true }

// Halted says whether Halt was called.
func (r *Real) Halted() bool { return r.halted }

// RunDue fires every timer whose deadline has passed on the wall clock, in deadline order, including
// timers those callbacks schedule for the past or present. It returns how many fired.
func (r *Real) RunDue() int { return r.RunDueUntil(r.Wall()) }

// RunDueUntil is RunDue for the timers due by limit (and by the wall clock): a loop that woke late
// catches up in steps, reading what its devices sent each other between steps, instead of firing a
// whole stall's worth of timers before any frame sent in it is received.
func (r *Real) RunDueUntil(limit Time) int {
	n := 0
	wall := r.Wall()
	for len(r.events) > 0 && !r.halted {
		top := r.events[0]
		if top.f == nil {
			r.events, _ = heapPop(r.events)
			continue
		}
		if top.at > wall || top.at > limit {
			break
		}
		r.events, _ = heapPop(r.events)
		if top.at > r.now {
			r.now = top.at
		}
		r.noteLag(wall-top.at, top.at)
		f := top.f
		top.f = nil
		if top.reuse {
			r.spare = append(r.spare, top)
		}
		r.fired++
		n++
		f()
		if n&63 == 0 { // a long burst: let later timers see how late they really are
			wall = r.Wall()
		}
	}
	return n
}

func (r *Real) noteLag(l, at Time) {
	if l < 0 {
		l = 0
	}
	s := &r.lag
	s.Fired++
	s.Sum += float64(l)
	if l > s.Max {
		s.Max, s.MaxAt = l, at
	}
	for i, b := range LagBuckets {
		if l > b {
			s.Over[i]++
		}
	}
}

// Next returns the earliest pending deadline.
func (r *Real) Next() (Time, bool) {
	for len(r.events) > 0 && !r.halted {
		if r.events[0].f != nil {
			return r.events[0].at, true
		}
		r.events, _ = heapPop(r.events)
	}
	return 0, false
}

// Fired is the number of callbacks run so far.
func (r *Real) Fired() uint64 { return r.fired }

// Lag returns the lag statistics so far.
func (r *Real) Lag() LagStats { return r.lag }

// SleepUntil blocks the calling thread until the wall clock reaches t, with nanosleep rather than Go
// timers (whose granularity was ~1.1 ms on the VMs we measured). Call PreciseThread first.
func (r *Real) SleepUntil(t Time) {
	for {
		d := t - r.Wall()
		if d <= 0 {
			return
		}
		ts := unix.NsecToTimespec(int64(d / Nanosecond))
		_ = unix.Nanosleep(&ts, nil) // EINTR: loop and recompute
	}
}

// Run fires timers until stop is closed or no timer is pending, sleeping precisely in between. It is
// for loops with no I/O of their own (tests, a traffic generator); the agent has its own loop.
func (r *Real) Run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		r.RunDue()
		next, ok := r.Next()
		if !ok {
			return
		}
		if d := next - r.Wall(); d > 10*Millisecond { // wake up now and then to see stop
			next = r.Wall() + 10*Millisecond
		}
		r.SleepUntil(next)
	}
}

// PreciseThread locks the calling goroutine to its OS thread and sets the thread's timer slack to 1 ns,
// so nanosleep and ppoll timeouts wake within microseconds instead of the default 50 us slack. The
// caller keeps the lock for the loop's lifetime.
func PreciseThread() error {
	runtime.LockOSThread()
	return unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
}

// RealtimeThread moves the calling thread (locked with PreciseThread) to SCHED_FIFO at prio (1-99).
// An emulation loop that sleeps in ppoll between frames needs to run within microseconds of its
// deadline; under the default scheduler any CPU-bound process on a small machine (a compiler, another
// test) delays it by a scheduler slice, milliseconds, which the fidelity monitor then sees as late
// frames. Measured on the 2-core VM with a load of ~3: an 8->1 incast at D=5000 had 17% of frames late
// (timer lag mean 211 us) under SCHED_OTHER and 0.16% (mean 34 us) under SCHED_FIFO. The kernel's RT
// throttling (sched_rt_runtime_us) still leaves other tasks 5% of a CPU if the loop ever spins.
func RealtimeThread(prio int) error {
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
	return unix.SchedSetAttr(0, &attr, 0)
}

// ToTimespec converts a non-negative duration for ppoll/nanosleep.
func ToTimespec(d Time) unix.Timespec {
	if d < 0 {
		d = 0
	}
	return unix.NsecToTimespec(int64(d / Nanosecond))
}

// heapPush and heapPop are Virtual's 4-ary heap as functions (Virtual keeps its hand-inlined methods,
// its hottest code).
func heapPush(h []*event, e *event) []*event {
	h = append(h, e)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !before(e, h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
	return h
}

func heapPop(h []*event) ([]*event, *event) {
	top := h[0]
	n := len(h) - 1
	last := h[n]
	h[n] = nil
	h = h[:n]
	if n > 0 {
		i := 0
		for {
			c := 4*i + 1
			if c >= n {
				break
			}
			m := c
			for j := c + 1; j < c+4 && j < n; j++ {
				if before(h[j], h[m]) {
					m = j
				}
			}
			if !before(h[m], last) {
				break
			}
			h[i] = h[m]
			i = m
		}
		h[i] = last
	}
	return h, top
}

// event is one of Real's timers.
type event struct {
	at    Time
	ord   Order
	seq   uint64
	f     func() // nil once fired or stopped
	reuse bool   // made by Schedule: back to Real.spare once fired (nobody holds it)
}

// Stop cancels the timer; a stopped timer stays in the heap until it reaches the top.
func (e *event) Stop() bool {
	if e.f == nil {
		return false
	}
	e.f = nil
	return true
}

func before(a, b *event) bool {
	return a.at < b.at || (a.at == b.at && (a.ord < b.ord || a.ord == b.ord && a.seq < b.seq))
}
