package clock

// Virtual is a deterministic discrete-event clock: events fire in (time, scheduling order), so the same
// inputs give the same run bit for bit. It is not safe for concurrent use; the virtual backend runs
// every engine on one goroutine.
//
// The queue is a 4-ary min-heap of 16-byte entries holding only the keys: the time, and the scheduling
// sequence number packed with the slot of the event's callback in a side table. Sifting compares keys
// without following a pointer, four children share one cache line, and the heap holds no pointers, so
// moving entries needs no GC write barriers and the collector never scans it. (With a heap of pointers
// pop was 19% of a fat-tree run; with 32-byte entries carrying the callbacks, still 13-19%.) Callbacks
// scheduled with Schedule need no handle and allocate nothing; AfterFunc allocates the small handle
// Stop needs.
type Virtual struct {
	now    Time
	seq    uint64
	events []ventry
	slots  []vslot  // callbacks by slot
	free   []uint32 // slots not in use
	fired  uint64
	live   int // scheduled, not yet fired or stopped
}

// ventry is a heap entry. key is seq<<slotBits | slot: comparing keys compares sequence numbers, which
// are unique, so (at, key) orders events by time, then by scheduling order.
type ventry struct {
	at  Time
	key uint64
}

const (
	slotBits = 24 // up to 16.7M events pending at once (a fat-tree k=12 permutation peaks near 16k)
	slotMask = 1<<slotBits - 1
	// maxSeq bounds the events one clock can schedule: 2^40, about 30 hours of scheduling at 10M
	// events per second.
	maxSeq = 1<<(64-slotBits) - 1
)

type vslot struct {
	f func()  // Schedule's callback; nil for an AfterFunc event
	t *vtimer // AfterFunc's handle; nil for a Schedule event
}

type vtimer struct {
	f func() // nil once fired or stopped
	v *Virtual
}

// Stop cancels the event. A stopped event stays in the heap and is discarded when it reaches the top,
// which is cheaper on the hot path than removing it from the middle.
func (e *vtimer) Stop() bool {
	if e.f == nil {
		return false
	}
	e.f = nil
	e.v.live--
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
	e := &vtimer{f: f, v: v}
	v.add(v.now+d, vslot{t: e})
	return e
}

// Schedule runs f at Now()+d (a negative d is treated as 0), like AfterFunc but with no way to stop it,
// which lets the clock keep it without allocating. The engines' per-frame events use it.
func (v *Virtual) Schedule(d Time, f func()) {
	if d < 0 {
		d = 0
	}
	v.add(v.now+d, vslot{f: f})
}

// add queues an event: its callback into a free slot, its keys into the heap.
func (v *Virtual) add(at Time, cb vslot) {
	var slot uint32
	if n := len(v.free); n > 0 {
		slot = v.free[n-1]
		v.free = v.free[:n-1]
	} else {
		if len(v.slots) > slotMask {
			panic("clock: more than 16,777,216 events pending at once")
		}
		slot = uint32(len(v.slots))
		v.slots = append(v.slots, vslot{})
	}
	v.slots[slot] = cb
	v.seq++
	if v.seq > maxSeq {
		panic("clock: more than 2^40 events scheduled on one clock")
	}
	v.live++
	v.push(ventry{at: at, key: v.seq<<slotBits | uint64(slot)})
}

// take empties the slot of entry e and returns its callback.
func (v *Virtual) take(e ventry) vslot {
	slot := uint32(e.key & slotMask)
	cb := v.slots[slot]
	v.slots[slot] = vslot{}
	v.free = append(v.free, slot)
	return cb
}

// Step fires the next pending event and reports whether there was one.
func (v *Virtual) Step() bool {
	for len(v.events) > 0 {
		e := v.pop()
		cb := v.take(e)
		f := cb.f
		if cb.t != nil {
			if f = cb.t.f; f == nil {
				continue // stopped
			}
			cb.t.f = nil
		}
		v.now = e.at
		v.fired++
		v.live--
		f()
		return true
	}
	return false
}

// RunUntil fires events up to and including time t, then sets Now to t. It returns the events fired.
func (v *Virtual) RunUntil(t Time) uint64 {
	start := v.fired
	for len(v.events) > 0 {
		top := &v.events[0]
		if t := v.slots[top.key&slotMask].t; t != nil && t.f == nil {
			v.take(v.pop())
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

// Live reports how many events will still fire (stopped ones left out).
func (v *Virtual) Live() int { return v.live }

// Horizon is the latest time of any queued event, stopped ones included (Now if none): how far a
// clock that discards stopped events only when it reaches them would run. It scans the queue.
func (v *Virtual) Horizon() Time {
	h := v.now
	for i := range v.events {
		h = max(h, v.events[i].at)
	}
	return h
}

// Fired is the number of callbacks run so far.
func (v *Virtual) Fired() uint64 { return v.fired }

func vbefore(a, b *ventry) bool {
	return a.at < b.at || (a.at == b.at && a.key < b.key)
}

// A 4-ary heap: half the depth of a binary heap, and the four children (16 B each) share a cache line.
func (v *Virtual) push(e ventry) {
	h := v.events
	if len(h) == cap(h) {
		// Grow by hand so that entry 0 sits 3 entries (48 B) into its allocation: the children of entry
		// i, 4i+1..4i+4, then start on a 64-byte boundary in the page-aligned arrays a large heap gets.
		nb := make([]ventry, 3+len(h), 3+2*cap(h)+64)[3:]
		copy(nb[:len(h)], h)
		h = nb[:len(h)]
	}
	h = append(h, e)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !vbefore(&e, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
	v.events = h
}

func (v *Virtual) pop() ventry {
	h := v.events
	top := h[0]
	n := len(h) - 1
	last := h[n]
	h[n] = ventry{}
	h = h[:n]
	if n > 0 {
		i := 0
		for {
			c := 4*i + 1
			if c >= n {
				break
			}
			m := c
			end := min(c+4, n)
			for j := c + 1; j < end; j++ {
				if vbefore(&h[j], &h[m]) {
					m = j
				}
			}
			if !vbefore(&h[m], &last) {
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
