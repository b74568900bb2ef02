// Package fifo is a first-in first-out queue stored in fixed-size chunks drawn from a free list that
// many queues share. A queue holds memory in proportion to what it holds now, not to the most it ever
// held (a slice that doubles and never shrinks keeps its peak: at fat-tree k=12 that was 9.5 MB of
// egress queues, each at its own historical peak), and a drained queue's chunks serve the next queue
// that fills, without a trip through the allocator and the collector.
//
// Neither type is safe for concurrent use; an engine shares one Pool among the queues its own goroutine
// drives.
package fifo

// chunkLen is the items per chunk: with the link, 15 pointers fill a 128-byte size class and 15 16-byte
// records (the switch's per-frame meta) a 256-byte one exactly. Most queues hold a frame or two when
// they hold any (at k=12 thousands do at once), so a small chunk wastes little; a chunk trip every 15
// items costs two pointer moves.
const chunkLen = 15

type chunk[T any] struct {
	items [chunkLen]T
	next  *chunk[T]
}

// Pool is a free list of chunks, ready for use as its zero value. It keeps every chunk returned to it, so
// it holds the most its queues held at once: on the fat-tree k=12 incast a cap of two chunks per switch
// port cut the chunks at the peak from 2.7 to 1.9 MB (of an 82 MB heap), not worth the chunks it would
// send through the collector.
type Pool[T any] struct {
	free *chunk[T]
	n    int // chunks on the free list
}

// Free is the number of chunks on the free list.
func (p *Pool[T]) Free() int { return p.n }

func (p *Pool[T]) get() *chunk[T] {
	c := p.free
	if c == nil {
		return new(chunk[T])
	}
	p.free, c.next = c.next, nil
	p.n--
	return c
}

// put takes a chunk whose items are all zero (popped), so the free list holds no references.
func (p *Pool[T]) put(c *chunk[T]) {
	c.next = p.free
	p.free = c
	p.n++
}

// Queue is a FIFO of T. The zero value is empty and holds no memory. Every call names the pool the
// queue draws from (always the same one): a pointer per queue would cost more than the queue's own
// fields.
type Queue[T any] struct {
	head, tail *chunk[T]
	hi, ti     int32 // next item to pop in head; next free slot in tail
}

// Empty reports whether the queue holds nothing.
func (q *Queue[T]) Empty() bool { return q.head == nil }

// Len is the number of items held. It walks the chunks: callers on a hot path count for themselves.
func (q *Queue[T]) Len() int {
	if q.head == nil {
		return 0
	}
	n := int(q.ti - q.hi)
	for c := q.head; c != q.tail; c = c.next {
		n += chunkLen
	}
	return n
}

// Push appends v.
func (q *Queue[T]) Push(p *Pool[T], v T) {
	switch {
	case q.tail == nil:
		c := p.get()
		q.head, q.tail, q.hi, q.ti = c, c, 0, 0
	case q.ti == chunkLen:
		c := p.get()
		q.tail.next, q.tail, q.ti = c, c, 0
	}
	q.tail.items[q.ti] = v
	q.ti++
}

// Front is the oldest item; the queue must not be empty.
func (q *Queue[T]) Front() T { return q.head.items[q.hi] }

// Pop removes and returns the oldest item; the queue must not be empty. A chunk it empties goes back to
// p at once.
func (q *Queue[T]) Pop(p *Pool[T]) T {
	c := q.head
	v := c.items[q.hi]
	var zero T
	c.items[q.hi] = zero
	q.hi++
	switch {
	case c == q.tail && q.hi == q.ti:
		q.head, q.tail, q.hi, q.ti = nil, nil, 0, 0
		p.put(c)
	case q.hi == chunkLen:
		q.head, q.hi = c.next, 0
		c.next = nil
		p.put(c)
	}
	return v
}
