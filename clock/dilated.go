package clock

// Dilated is a clock D times slower than the one it wraps: its time t is the wrapped clock's t x D.
// The netns agents give it to the engines, so that an engine runs on the paper's times and rates (the
// configs the virtual backend runs, not divided by D) and computes the very numbers it computes there:
// a serialization time rounded to the picosecond at 100 Mb/s is not a thousand times the one rounded at
// 100 Gb/s, and a DCQCN rate divided by D does not multiply back exactly. Inside a timer the wrapped
// clock's Now is the timer's deadline, a multiple of D, so Now is exact; after a Sync to the wall
// clock (a frame from a kernel host) it is truncated to the picosecond of engine time.
type Dilated struct {
	c Ordered
	d Time
}

// Dilate returns c seen D times slower (D >= 1).
func Dilate(c Ordered, d int64) *Dilated { return &Dilated{c: c, d: Time(max(d, 1))} }

// D is the dilation.
func (c *Dilated) D() Time { return c.d }

func (c *Dilated) Now() Time                        { return c.c.Now() / c.d }
func (c *Dilated) AfterFunc(d Time, f func()) Timer { return c.c.AfterFunc(c.scale(d), f) }
func (c *Dilated) Schedule(d Time, f func())        { ScheduleFunc(c.c)(c.scale(d), f) }
func (c *Dilated) AfterFuncOrdered(d Time, o Order, f func()) Timer {
	return c.c.AfterFuncOrdered(c.scale(d), o, f)
}
func (c *Dilated) ScheduleOrdered(d Time, o Order, f func()) { c.c.ScheduleOrdered(c.scale(d), o, f) }

// scale is d in the wrapped clock's time: d x D, from the engine time Now is truncated to, so that a
// timer set for Now()+d fires when Now() reads Now()+d.
func (c *Dilated) scale(d Time) Time {
	if d <= 0 {
		return d
	}
	at := Add(c.c.Now()/c.d, d)
	if at >= Never/c.d {
		return Never - c.c.Now()
	}
	return at*c.d - c.c.Now()
}

var (
	_ Ordered   = (*Dilated)(nil)
	_ Scheduler = (*Dilated)(nil)
)
