// Package clock is the only source of time the engines see. The virtual backend drives it from an event
// heap, the netns backend from the monotonic clock, and the engines cannot tell which.
package clock

import (
	"fmt"
	"math"
	"time"
)

// Time is picoseconds since the clock started. Nanoseconds are too coarse: one 1 KB frame at 100 Gb/s
// serializes in 84.48 ns, and rounding that per frame skews line-rate FCTs by more than the 1% suites ask.
type Time int64

const (
	Picosecond  Time = 1
	Nanosecond  Time = 1000
	Microsecond Time = 1000 * Nanosecond
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond
)

// Seconds returns t in seconds.
func (t Time) Seconds() float64 { return float64(t) / float64(Second) }

// Duration converts to a time.Duration (truncating sub-nanosecond parts).
func (t Time) Duration() time.Duration { return time.Duration(t / Nanosecond) }

// FromDuration converts a time.Duration.
func FromDuration(d time.Duration) Time { return Time(d) * Nanosecond }

// Never is the latest time: what a conversion or sum beyond the clock's range saturates to, so that
// nothing scheduled too late for int64 wraps around to a negative time and runs first.
const Never Time = math.MaxInt64

// FromSeconds converts seconds, rounding to the nearest picosecond. Beyond the clock's range (about
// 106 days) and for NaN it saturates: Never, or -Never for large negatives.
func FromSeconds(s float64) Time { return fromPicos(s*float64(Second) + 0.5) }

func fromPicos(ps float64) Time {
	switch {
	case ps >= math.MaxInt64 || ps != ps: // NaN included
		return Never
	case ps <= -math.MaxInt64:
		return -Never
	}
	return Time(ps)
}

// Add is a + b, saturating at Never and -Never instead of wrapping.
func Add(a, b Time) Time {
	switch s := a + b; {
	case b > 0 && s < a:
		return Never
	case b < 0 && s > a:
		return -Never
	default:
		return s
	}
}

func (t Time) String() string {
	switch a := t; {
	case a == math.MinInt64: // has no positive counterpart: -t is t again
		return fmt.Sprintf("%.6gs", t.Seconds())
	case a < 0:
		return "-" + (-t).String()
	case a < Nanosecond:
		return fmt.Sprintf("%dps", int64(t))
	case a < Microsecond:
		return fmt.Sprintf("%.3gns", float64(t)/float64(Nanosecond))
	case a < Millisecond:
		return fmt.Sprintf("%.4gus", float64(t)/float64(Microsecond))
	case a < Second:
		return fmt.Sprintf("%.4gms", float64(t)/float64(Millisecond))
	default:
		return fmt.Sprintf("%.6gs", t.Seconds())
	}
}

// TxTime is how long bytes take to serialize at rateBps.
func TxTime(bytes int, rateBps float64) Time {
	return fromPicos(float64(bytes)*8*float64(Second)/rateBps + 0.5)
}

// Timer is a pending callback.
type Timer interface {
	// Stop cancels the callback; it reports false if the callback already ran or was stopped.
	Stop() bool
}

// Clock is what an engine is given instead of the wall clock. Callbacks run one at a time on the
// engine's goroutine, so engines need no locks.
type Clock interface {
	Now() Time
	AfterFunc(d Time, f func()) Timer
}

// Scheduler is a Clock that can also run a callback that will never be stopped without handing back a
// Timer, which lets the virtual clock keep it without an allocation. Engines use it for per-frame
// events through ScheduleFunc.
type Scheduler interface {
	Schedule(d Time, f func())
}

// ScheduleFunc returns c's Schedule, or AfterFunc with the Timer dropped for clocks without one.
func ScheduleFunc(c Clock) func(d Time, f func()) {
	if s, ok := c.(Scheduler); ok {
		return s.Schedule
	}
	return func(d Time, f func()) { c.AfterFunc(d, f) }
}

// Handler is an event's callback as a method of the state it acts on.
type Handler interface{ Fire() }

// Handlers is a Clock that schedules Handlers (the virtual clock seen by one device's Order: For):
// h.Fire() runs at Now()+d exactly where Schedule(d, h.Fire) would, without a closure to load.
type Handlers interface {
	ScheduleHandler(d Time, h Handler)
}

// Rearmer is a Clock that can arm a Timer it made again instead of making a new one.
type Rearmer interface {
	Rearm(t Timer, d Time, f func()) Timer
}

// Rearm stops t (if not nil) and schedules f at Now()+d, through c's Rearm when it has one (the virtual
// clock, which then reuses t's handle), else with AfterFunc. The caller must hold t alone and replace it
// with the returned Timer.
func Rearm(c Clock, t Timer, d Time, f func()) Timer {
	if r, ok := c.(Rearmer); ok {
		return r.Rearm(t, d, f)
	}
	if t != nil {
		t.Stop()
	}
	return c.AfterFunc(d, f)
}

// HeldTimer is a timer an engine keeps for one event it arms again and again (a PFC pause's expiry or
// refresh, per port and priority): its callback is set once, before the first Arm, and every Arm after
// re-arms the same handle (Rearm), which allocates nothing on the virtual clock. The zero value is
// ready for SetFunc; callers set the callback lazily because most holders never arm (on the fat-tree
// k=12 incast nearly all of 17,280 port-priority groups stayed unpaused: 1.1 MB of closures made up
// front). Arm and Stop are exactly the clock calls they stand for, so the events fire as before.
type HeldTimer struct {
	t Timer
	f func()
}

// HasFunc says whether the callback is set.
func (h *HeldTimer) HasFunc() bool { return h.f != nil }

// SetFunc sets the callback every Arm schedules.
func (h *HeldTimer) SetFunc(f func()) { h.f = f }

// Arm schedules the callback at c.Now()+d, replacing the pending event if there is one.
func (h *HeldTimer) Arm(c Clock, d Time) { h.t = Rearm(c, h.t, d, h.f) }

// Stop cancels the pending event, if there is one; the handle stays for the next Arm.
func (h *HeldTimer) Stop() {
	if h.t != nil {
		h.t.Stop()
	}
}

// Virtual (the virtual backend's deterministic clock) and Real (the netns agents' wall clock) implement
// Clock, so every engine runs unchanged on both backends; Virtual also implements Scheduler.
var (
	_ Clock     = (*Virtual)(nil)
	_ Clock     = (*Real)(nil)
	_ Scheduler = (*Virtual)(nil)
	_ Scheduler = (*Real)(nil)
	_ Rearmer   = (*Virtual)(nil)
	_ Timer     = (*vtimer)(nil)
	_ Timer     = (*event)(nil)
)
