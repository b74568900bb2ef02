package clock

// Virtual is a deterministic discrete-event clock: events fire in (time, scheduling order), so the same
// inputs give the same run bit for bit. It is not safe for concurrent use; the virtual backend runs
// every engine on one goroutine.
type Virtual struct {
	now    Time
	seq    uint64
	events []*event // 4-ary min-heap on (at, seq)
	fired  uint64
}

type event struct {
	at  Time
	seq uint64
	f   func() // nil once fired or stopped
}

// Stop cancels the event. A stopped event stays in the heap and is discarded when it reaches the top,
// which is cheaper on the hot path than removing it from the middle.
func (e *event) Stop() bool {
	if e.f == nil {
		return false
	}
	e.f = nil
	return true
}

// NewVirtual returns a clock at time 0.
func NewVirtual() *Virtual { return &Virtual{} }

func (v *Virtual) Now() Time { return v.now }

// AfterFunc schedules f at Now()+d; a negative d is treated as 0.
func (v *Virtual) AfterFunc(d Time, f func()) Timer {
	if d < 0 {
		d = 0
	}
	v.seq++
	e := &event{at: v.now + d, seq: v.seq, f: f}
	v.push(e)
	return e
}

// Step fires the next pending event and reports whether there was one.
func (v *Virtual) Step() bool {
	for len(v.events) > 0 {
		e := v.pop()
		if e.f == nil {
			continue
		}
		v.now = e.at
		f := e.f
		e.f = nil
		v.fired++
		f()
		return true
	}
	return false
}

// RunUntil fires events up to and including time t, then sets Now to t. It returns the events fired.
func (v *Virtual) RunUntil(t Time) uint64 {
	start := v.fired
	for len(v.events) > 0 {
		top := v.events[0]
		if top.f == nil {
			v.pop()
			continue
		}
		if top.at > t {
			break
		}
		v.Step()
	}
	if v.now < t {
		v.now = t
	}
	return v.fired - start
}

// Pending reports how many live or stopped-but-not-yet-discarded events are queued.
func (v *Virtual) Pending() int { return len(v.events) }

// Fired is the number of callbacks run so far.
func (v *Virtual) Fired() uint64 { return v.fired }

func before(a, b *event) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// A 4-ary heap: half the depth of a binary heap, and the four children share a cache line or two. The
// event heap is the virtual backend's hottest code.
func (v *Virtual) push(e *event) {
	h := append(v.events, e)
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
	v.events = h
}

func (v *Virtual) pop() *event {
	h := v.events
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
	v.events = h
	return top
}
