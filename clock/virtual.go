package clock

import (
	"math/bits"
	"slices"
)

// Virtual is a deterministic discrete-event clock: events fire in (time, Order, scheduling order)
// (order.go: the rule both backends share), so the same inputs give the same run bit for bit. It is
// not safe for concurrent use; the virtual backend runs every engine on one goroutine.
//
// Events hold only keys: the time, and the event's Order packed with the slot of its callback in a
// side table (16 bytes, no pointers: moving entries needs no GC write barriers and the collector never
// scans them). The scheduling sequence number, which breaks ties of time and Order, lives with the
// callback: it is read only on such a tie. Callbacks scheduled with Schedule need no handle and allocate
// nothing; AfterFunc allocates the small handle Stop needs.
//
// The queue is a timing wheel in front of a heap. Nine in ten events of a fabric run fire within
// 100 ns of being scheduled (a frame's serialization) and nearly all the rest within a link delay, so
// the wheel's buckets (8.192 ns each, 4.19 us in all) take them in O(1) and pop them from the first
// non-empty bucket, found in a bitmap; only later events (transport timers) go to a 4-ary heap. A
// bucket is kept in firing order, and pop takes the smaller of the wheel's and the heap's
// first, so the order is exactly the heap-only order and runs are unchanged. (As a heap alone, pop
// and its comparisons were 25% of a fat-tree k=4 run.)
type Virtual struct {
	now     Time
	seq     uint64
	wheel   [wheelBuckets]bucket
	filled  [wheelBuckets / 64]uint64 // bit b: wheel[b] holds events
	inWheel int
	// spare holds the arrays of emptied buckets that had grown past bucketKeep. Hundreds of hosts
	// sending in step put hundreds of events in one bucket, and the step pattern moves through every
	// bucket in turn: each keeping its largest array held 3.7 MB on a fat-tree k=12 incast, for about
	// 2,200 events on the wheel at once (sampled).
	spare   [][]ventry
	scratch []ventry // sortEntries' copy of a bucket
	keys    []uint64 // sortEntries' sort keys
	events  []ventry // the heap: events beyond the wheel's span when scheduled
	slots   []vslot  // callbacks by slot
	free    []uint32 // slots not in use
	fired   uint64
	live    int // scheduled, not yet fired or stopped
}

// ventry is a heap entry. key is Order<<slotBits | slot: (at, key>>slotBits) orders events by time,
// then Order; events equal in both are ordered by their slots' sequence numbers (Virtual.before).
type ventry struct {
	at  Time
	key uint64
}

const (
	slotBits = 64 - OrderBits // up to 16.7M events pending at once (a fat-tree k=12 permutation peaks near 16k)
	slotMask = 1<<slotBits - 1
)

const (
	wheelShift   = 13  // a bucket spans 2^13 ps
	wheelBuckets = 512 // a power of two, a multiple of 64
	bucketKeep   = 64  // a bucket keeps an array up to this many events when it empties
)

// bucket holds the events of one wheel slot, from head on in firing order unless unordered is set.
// Most buckets take their events in firing order, or nearly (an incast's hold about three): push keeps
// them in order with one comparison an event, placing a late-comer among the last few entries by hand.
// A bucket that takes an event out of order past smallPlace entries is marked unordered and sorted
// once, when it is first read (Virtual.sortBucket), unless it is the bucket being drained (its time is
// now), where the event is placed by binary search.
type bucket struct {
	e         []ventry
	head      int32
	unordered bool
	// last is the largest (time within the bucket, Order) pushed since the bucket was last empty: an
	// event at or after it goes last, one compare and no load of the entries. (It may be a fired
	// entry's, above every pending one: place then finds e's place is last.)
	last uint64
}

// vslot is an event's callback: a Handler (ScheduleHandler), a func (Schedule, as funcHandler) or an
// AfterFunc's handle (*vtimer).
type vslot struct {
	h   Handler
	seq uint64 // scheduling order
}

// funcHandler holds a Schedule callback: a func is one pointer, so it goes into the interface as it is.
type funcHandler func()

func (f funcHandler) Fire() { f() }

// Fire runs the timer's callback, which Step has checked is not stale.
func (t *vtimer) Fire() {
	f := t.f
	t.f = nil
	f()
}

type vtimer struct {
	f    func() // nil once fired or stopped
	v    *Virtual
	slot uint32 // the slot of its latest arming: an entry of an earlier one (Rearm) is stale
}

// stale says that e, an entry of t, will not fire: t was stopped, or re-armed since (Rearm), which
// queued a new entry in another slot.
func (t *vtimer) stale(e ventry) bool { return t.f == nil || t.slot != uint32(e.key&slotMask) }

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

// AfterFunc schedules f at Now()+d with Order Harness; a negative d is treated as 0.
func (v *Virtual) AfterFunc(d Time, f func()) Timer { return v.AfterFuncOrdered(d, Harness, f) }

// AfterFuncOrdered is AfterFunc for an event of Order o.
func (v *Virtual) AfterFuncOrdered(d Time, o Order, f func()) Timer {
	if d < 0 {
		d = 0
	}
	e := &vtimer{f: f, v: v}
	e.slot = v.add(v.now+d, o, vslot{h: e})
	return e
}

// Rearm stops t if it is pending and arms it again to run f at Now()+d (a negative d is treated as 0),
// reusing its handle: t must come from this clock's AfterFunc or Rearm (anything else, nil included,
// gets a new AfterFunc) and be held by its caller alone, since every copy of the handle now stops the
// new arming. Events fire exactly as with Stop and AfterFunc; only the allocation is gone. PFC re-arms
// a timer for every pause frame a device sends or obeys: 4.6 MB of handles on a fat-tree k=12 incast.
func (v *Virtual) Rearm(t Timer, d Time, f func()) Timer { return v.rearm(t, d, Harness, f) }

func (v *Virtual) rearm(t Timer, d Time, o Order, f func()) Timer {
	e, ok := t.(*vtimer)
	if !ok || e == nil || e.v != v {
		return v.AfterFuncOrdered(d, o, f)
	}
	e.Stop()
	if d < 0 {
		d = 0
	}
	e.f = f
	// An entry of a stopped arming may still be queued: it holds its own slot until it is discarded,
	// so the new slot differs from it, and Step tells the two apart by slot.
	e.slot = v.add(v.now+d, o, vslot{h: e})
	return e
}

// Schedule runs f at Now()+d (a negative d is treated as 0), like AfterFunc but with no way to stop it,
// which lets the clock keep it without allocating. The engines' per-frame events use it.
func (v *Virtual) Schedule(d Time, f func()) { v.ScheduleOrdered(d, Harness, f) }

// ScheduleOrdered is Schedule for an event of Order o.
func (v *Virtual) ScheduleOrdered(d Time, o Order, f func()) {
	if d < 0 {
		d = 0
	}
	v.add(v.now+d, o, vslot{h: funcHandler(f)})
}

// ScheduleHandler is ScheduleOrdered for a Handler: h.Fire() runs at Now()+d, in the same order a func
// scheduled in its place would. An engine's per-frame events use it: a method value's closure is one
// more object to load (and miss) per event, where the Handler is the engine's own state.
func (v *Virtual) ScheduleHandler(d Time, o Order, h Handler) {
	if d < 0 {
		d = 0
	}
	v.add(v.now+d, o, vslot{h: h})
}

// add queues an event: its callback into a free slot, its keys into the heap. It returns the slot.
func (v *Virtual) add(at Time, o Order, cb vslot) uint32 {
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
	v.seq++
	cb.seq = v.seq
	v.slots[slot] = cb
	v.live++
	v.push(ventry{at: at, key: uint64(o)<<slotBits | uint64(slot)})
	return slot
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
	for v.inWheel > 0 || len(v.events) > 0 {
		e := v.pop()
		cb := v.take(e)
		if t, ok := cb.h.(*vtimer); ok && t.stale(e) {
			continue
		}
		v.now = e.at
		v.fired++
		v.live--
		cb.h.Fire()
		return true
	}
	return false
}

// RunUntil fires events up to and including time t, then sets Now to t. It returns the events fired.
func (v *Virtual) RunUntil(t Time) uint64 {
	start := v.fired
	for v.inWheel > 0 || len(v.events) > 0 {
		top := v.peek()
		if t, ok := v.slots[top.key&slotMask].h.(*vtimer); ok && t.stale(*top) {
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
func (v *Virtual) Pending() int { return v.inWheel + len(v.events) }

// Live reports how many events will still fire (stopped ones left out).
func (v *Virtual) Live() int { return v.live }

// Horizon is the latest time of any queued event, stopped ones included (Now if none): how far a
// clock that discards stopped events only when it reaches them would run. It scans the queue.
func (v *Virtual) Horizon() Time {
	h := v.now
	for i := range v.events {
		h = max(h, v.events[i].at)
	}
	for i := range v.wheel {
		b := &v.wheel[i]
		for j := int(b.head); j < len(b.e); j++ {
			h = max(h, b.e[j].at)
		}
	}
	return h
}

// Fired is the number of callbacks run so far.
func (v *Virtual) Fired() uint64 { return v.fired }

// before says whether a fires before b: by time, then Order, then scheduling order (read from the
// slots only when time and Order tie).
func (v *Virtual) before(a, b *ventry) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if oa, ob := a.key>>slotBits, b.key>>slotBits; oa != ob {
		return oa < ob
	}
	return v.slots[a.key&slotMask].seq < v.slots[b.key&slotMask].seq
}

// push queues e on the wheel if it falls within the wheel's span from now's bucket, else on the heap.
// Every wheel event then lies within one span from now's bucket on, so the buckets from now's on, in
// circular order, are in time order.
func (v *Virtual) push(e ventry) {
	if uint64(e.at>>wheelShift-v.now>>wheelShift) >= wheelBuckets {
		v.heapPush(e)
		return
	}
	i := int(e.at>>wheelShift) & (wheelBuckets - 1)
	b := &v.wheel[i]
	if len(b.e) == cap(b.e) {
		if b.head > 0 {
			// Reuse the room fired events left at the front: a bucket that takes events while it is
			// being drained (its time is now) would otherwise grow with every event it ever held.
			b.e = b.e[:copy(b.e, b.e[b.head:])]
			b.head = 0
		} else if n := len(v.spare); n > 0 && cap(v.spare[n-1]) > cap(b.e) {
			if len(b.e) == 0 {
				// An emptied bucket takes the array as it is: on an incast a bucket holds about three
				// events, and every bucket that comes up took a spare through append's copy.
				b.e = v.spare[n-1][:0]
			} else {
				b.e = append(v.spare[n-1], b.e...)
			}
			v.spare = v.spare[:n-1]
		}
	}
	b.e = append(b.e, e)
	if k := uint64(e.at&(1<<wheelShift-1))<<OrderBits | e.key>>slotBits; k >= b.last {
		b.last = k
	} else if !b.unordered {
		v.place(b, i, len(b.e)-1)
	}
	v.filled[i>>6] |= 1 << uint(i&63)
	v.inWheel++
}

// smallPlace is how many of a bucket's last entries push searches for a late-comer's place, shifting
// them by hand; a bucket whose late-comer goes further back is sorted when it comes up instead. On the
// k=8 incast 3 and 8 cost the clock the same instructions an event and 2 cost 10 more (more buckets
// left to sort); on the 128-flow k=8 permutation, whose buckets take late-comers in every order and
// are sorted anyway, 8 cost 14 more than 3 (callgrind, docs/performance.md).
const smallPlace = 3

// place puts b.e[n], the latest scheduled entry of bucket i, whose key is below the bucket's last,
// where it fires in a bucket in order, or marks the bucket unordered: e goes after every entry that
// does not fire after it, e being the latest scheduled.
func (v *Virtual) place(b *bucket, i, n int) {
	e := b.e[n]
	head := int(b.head)
	if lo := max(head, n-smallPlace); lo == head || !firesAfter(&b.e[lo-1], &e) {
		// The entries from head on fire in order, so e's place is at or after lo.
		j := n
		for ; j > lo && firesAfter(&b.e[j-1], &e); j-- {
			b.e[j] = b.e[j-1]
		}
		b.e[j] = e
		return
	}
	if i != int(v.now>>wheelShift)&(wheelBuckets-1) {
		b.unordered = true
		return
	}
	// The bucket being drained: few events land in the bucket of now.
	lo, hi := head, n-1 // b.e[hi] fires after e
	for lo < hi {
		if m := int(uint(lo+hi) >> 1); firesAfter(&b.e[m], &e) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	copy(b.e[lo+1:], b.e[lo:n])
	b.e[lo] = e
}

// sortBucket puts bucket b in firing order; pop and peek call it on a bucket they find unordered (the
// test is theirs, so that it costs no call on every event). Hosts in step schedule hundreds of events
// for one instant, which fire by device (docs/architecture.md), not in the order they were scheduled:
// placing each on arrival (binary search and a copy of the entries after it) cost a fifth of a fat-tree
// k=8 permutation's instructions, and the copies grow with the events per bucket, that is with the
// fabric. One sort when the bucket comes up costs O(log n) an entry.
func (v *Virtual) sortBucket(b *bucket) {
	v.sortEntries(b.e[b.head:])
	b.unordered = false
}

// firesAfter says whether a fires after b by time and Order alone: an entry scheduled after a that ties
// with it fires after it.
func firesAfter(a, b *ventry) bool {
	return a.at > b.at || a.at == b.at && a.key>>slotBits > b.key>>slotBits
}

// sortRun is the length of the runs sortEntries puts in order by insertion before merging them.
const sortRun = 12

// rankBits is the room for an entry's place in its bucket in the keys sortEntries sorts: 13 bits of time
// within the bucket, the 40 of the Order and these 11 fill a uint64.
const rankBits = 64 - wheelShift - OrderBits

// sortEntries puts s, the entries of one bucket, in firing order by time and Order, keeping entries that
// tie in both in their order in s (scheduling order: a bucket takes its entries in the order they were
// scheduled). A bucket already in order costs one pass. Otherwise each entry becomes one uint64, its
// time within the bucket, its Order and its place in s, unique and ordered as the entries must fire, and
// those are sorted as integers (a merge sort of the 16-byte entries cost three times as much); a bucket
// of more entries than the place has room for is merge sorted.
func (v *Virtual) sortEntries(s []ventry) {
	n := len(s)
	i := 1
	for i < n && !firesAfter(&s[i-1], &s[i]) {
		i++
	}
	if i >= n {
		return
	}
	if cap(v.scratch) < n {
		v.scratch = make([]ventry, n, 2*n)
	}
	if n <= 1<<rankBits {
		if cap(v.keys) < n {
			v.keys = make([]uint64, n, 2*n)
		}
		keys := v.keys[:n]
		base := s[0].at >> wheelShift << wheelShift // every entry of a bucket has the same at>>wheelShift
		for j := range s {
			keys[j] = uint64(s[j].at-base)<<(OrderBits+rankBits) | s[j].key>>slotBits<<rankBits | uint64(j)
		}
		slices.Sort(keys)
		tmp := v.scratch[:n]
		copy(tmp, s)
		for j, k := range keys {
			s[j] = tmp[k&(1<<rankBits-1)]
		}
		return
	}
	for lo := 0; lo < n; lo += sortRun {
		insertionSort(s[lo:min(lo+sortRun, n)])
	}
	src, dst := s, v.scratch[:n]
	for w := sortRun; w < n; w *= 2 {
		for lo := 0; lo < n; lo += 2 * w {
			mid, hi := min(lo+w, n), min(lo+2*w, n)
			mergeEntries(dst[lo:hi], src[lo:mid], src[mid:hi])
		}
		src, dst = dst, src
	}
	if &src[0] != &s[0] {
		copy(s, src)
	}
}

// insertionSort sorts s stably by time and Order.
func insertionSort(s []ventry) {
	for i := 1; i < len(s); i++ {
		x := s[i]
		j := i
		for ; j > 0 && firesAfter(&s[j-1], &x); j-- {
			s[j] = s[j-1]
		}
		s[j] = x
	}
}

// mergeEntries merges a and b, each in order, into out (len(a)+len(b) long); on a tie a's entry, the
// earlier scheduled, goes first.
func mergeEntries(out, a, b []ventry) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if firesAfter(&a[i], &b[j]) {
			out[k] = b[j]
			j++
		} else {
			out[k] = a[i]
			i++
		}
		k++
	}
	k += copy(out[k:], a[i:])
	copy(out[k:], b[j:])
}

// first returns the wheel's non-empty bucket that comes first from now's bucket; the wheel must not
// be empty. pop has its own copy of the common case (a bucket within now's 64): first does not inline.
func (v *Virtual) first() int {
	cur := int(v.now>>wheelShift) & (wheelBuckets - 1)
	if m := v.filled[cur>>6] >> uint(cur&63); m != 0 {
		return cur + bits.TrailingZeros64(m)
	}
	return v.firstBeyond(cur >> 6)
}

// firstBeyond is first past bitmap word w.
func (v *Virtual) firstBeyond(w int) int {
	for k := 1; k <= len(v.filled); k++ {
		ww := (w + k) & (len(v.filled) - 1)
		if m := v.filled[ww]; m != 0 {
			return ww<<6 + bits.TrailingZeros64(m)
		}
	}
	panic("clock: wheel count and bitmap disagree")
}

// peek returns the next event to fire without removing it; the queue must not be empty.
func (v *Virtual) peek() *ventry {
	if v.inWheel == 0 {
		return &v.events[0]
	}
	b := &v.wheel[v.first()]
	if b.unordered {
		v.sortBucket(b)
	}
	e := &b.e[b.head]
	if len(v.events) > 0 && v.before(&v.events[0], e) {
		return &v.events[0]
	}
	return e
}

func (v *Virtual) pop() ventry {
	if v.inWheel == 0 {
		return v.heapPop()
	}
	cur := int(v.now>>wheelShift) & (wheelBuckets - 1)
	var i int
	if m := v.filled[cur>>6] >> uint(cur&63); m != 0 {
		i = cur + bits.TrailingZeros64(m)
	} else {
		i = v.firstBeyond(cur >> 6)
	}
	b := &v.wheel[i]
	if b.unordered {
		v.sortBucket(b)
	}
	top := b.e[b.head]
	if len(v.events) > 0 && v.before(&v.events[0], &top) {
		return v.heapPop()
	}
	b.head++
	if int(b.head) == len(b.e) {
		b.e, b.head, b.last = b.e[:0], 0, 0 // not unordered: pop sorted it before taking its last entry
		if cap(b.e) > bucketKeep {
			v.spare, b.e = append(v.spare, b.e), nil
		}
		v.filled[i>>6] &^= 1 << uint(i&63)
	}
	v.inWheel--
	return top
}

// A 4-ary heap: half the depth of a binary heap, and the four children (16 B each) share a cache line.
// Real keeps the same heap over *event (real.go). One generic heap for both was tried (a type parameter
// with a before method): Go calls a type parameter's method through the instantiation's dictionary, not
// inlined, and BenchmarkVirtualFar (every event through the heap) ran 1.2-1.9x slower (12 interleaved
// runs, loaded 2-core machine), so each clock keeps its own copy of these twenty lines.
func (v *Virtual) heapPush(e ventry) {
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
		if !v.before(&e, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
	v.events = h
}

func (v *Virtual) heapPop() ventry {
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
				if v.before(&h[j], &h[m]) {
					m = j
				}
			}
			if !v.before(&h[m], &last) {
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
