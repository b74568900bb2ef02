package clock

import "container/heap"

// Virtual is a deterministic discrete-event clock: events fire in (time, scheduling order), so the same
// inputs give the same run bit for bit. It is not safe for concurrent use; the virtual backend runs
// every engine on one goroutine.
type Virtual struct {
	now    Time
	seq    uint64
	events eventHeap
	fired  uint64
}

type event struct {
	at    Time
	seq   uint64
	f     func()
	index int // position in the heap, -1 once fired or stopped
}

func (e *event) Stop() bool {
	if e.index < 0 || e.f == nil {
		return false
	}
	e.f = nil // lazily removed when it reaches the top: cheaper than heap.Remove on the hot path
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
	heap.Push(&v.events, e)
	return e
}

// Step fires the next pending event and reports whether there was one.
func (v *Virtual) Step() bool {
	for len(v.events) > 0 {
		e := heap.Pop(&v.events).(*event)
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
			heap.Pop(&v.events)
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

// RunWhile fires events while cond() holds and events remain.
func (v *Virtual) RunWhile(cond func() bool) uint64 {
	start := v.fired
	for cond() && v.Step() {
	}
	return v.fired - start
}

// Pending reports how many live or stopped-but-not-yet-discarded events are queued.
func (v *Virtual) Pending() int { return len(v.events) }

// Fired is the number of callbacks run so far.
func (v *Virtual) Fired() uint64 { return v.fired }

type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *eventHeap) Push(x any) {
	e := x.(*event)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *eventHeap) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	e.index = -1
	*h = old[:n-1]
	return e
}
