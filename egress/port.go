// Package egress is the output side of a link, shared by switches and NICs: a set of FIFO queues, a
// scheduler (strict priority for control queues, then deficit round robin among data queues), per-queue
// pause state, and the link model (serialization at the port's rate, after which the Link adds
// propagation delay). Queues therefore build here, where the papers put them, never in the kernel.
package egress

import (
	"fmt"
	"math/bits"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/fifo"
	"github.com/fabriclab/fabriclab/pkt"
)

// Link carries a frame whose last bit has left the port to the peer, adding the propagation delay.
type Link interface {
	Send(p *pkt.Packet)
}

// The Link seam: the virtual backend's link (a propagation delay on the virtual clock), the netns
// agent's link (a frame due on a socket at its dilated arrival), FaultLink (a port's spec or live fault,
// in front of either) and LinkFunc (tests) implement Link.
var (
	_ Link = (*FaultLink)(nil)
	_ Link = LinkFunc(nil)
)

// Config describes one egress port.
type Config struct {
	RateBps float64
	Queues  int   // number of queues, at most 64
	Strict  []int // queues served in strict priority before any data queue, in this order; never paused by Pause
	Quantum int   // DRR quantum in bytes (0 = 1500)
	// Weights, when set, multiply queue q's quantum by Weights[q] (missing or < 1 entries count as 1):
	// weighted DRR, so a queue of weight w gets w times the share of a weight-1 queue when all are busy.
	Weights []int
	// Overhead is added to every frame's Size for serialization only (e.g. 24 for preamble, SFD, FCS and
	// inter-frame gap). Zero matches the HPCC ns-3 model the papers were run on.
	Overhead int
	// Pool is where the queues take their storage from and return it as they drain; the ports of one
	// engine share one, so a port that empties leaves its memory to the next that fills. Nil: the port
	// keeps its own.
	Pool *fifo.Pool[*pkt.Packet]
}

// Hooks let the owning engine account buffer and run flow-control rules when a frame leaves a queue.
type Hooks struct {
	// Dequeue runs when a frame leaves queue q and starts serializing (buffer release, ECN on dequeue,
	// PortFC Algorithm 2). It may call Pause/Enqueue on this port.
	Dequeue func(q int, p *pkt.Packet)
	// Sent runs when the frame's last bit has left, just before Link.Send.
	Sent func(p *pkt.Packet)
}

// queue is one FIFO and its counters. Occupancy is derived from the counters (bytes and frames in are
// counted anyway), so the struct holds nothing twice: a fat-tree k=12 has 2,600 ports of 8-10 queues.
type queue struct {
	frames  fifo.Queue[*pkt.Packet]
	deficit int
	quantum int // DRR quantum of this queue (Config.Quantum x its weight)
	// counters
	enq, deq uint64
	enqBytes uint64
	deqBytes uint64
	maxBytes int
	lastDeq  clock.Time // when the last frame left (the deadlock monitor's "no departures since")
}

func (q *queue) len() int   { return int(q.enq - q.deq) }
func (q *queue) bytes() int { return int(q.enqBytes - q.deqBytes) }

func (q *queue) push(pool *fifo.Pool[*pkt.Packet], p *pkt.Packet) {
	q.frames.Push(pool, p)
	q.enq++
	q.enqBytes += uint64(p.Size)
	if b := q.bytes(); b > q.maxBytes {
		q.maxBytes = b
	}
}

func (q *queue) pop(pool *fifo.Pool[*pkt.Packet]) *pkt.Packet {
	p := q.frames.Pop(pool)
	q.deq++
	q.deqBytes += uint64(p.Size)
	return p
}

// Port is one egress port. It is driven entirely by the clock and by calls from its owning engine.
//
// The fields every frame touches come first, packed into the struct's first two cache lines: at fat-tree
// scale a port's state is out of cache by the time its next frame comes, and each further line read per
// frame is another miss.
type Port struct {
	queues  []queue
	strict  uint64 // bitmask of strict queues
	paused  uint64 // bitmask of paused queues
	filled  uint64 // bitmask of non-empty queues: pick finds the next queue to serve in O(1)
	busy    bool
	granted bool // the queue at rr has had its quantum for this turn
	rr      int  // DRR position among data queues
	// total is every queue's bytes together (TotalBytes): a NIC reads it for every frame it queues, and
	// summing the queues' counters there read 8-10 queues' lines, the most missed loads of a fat-tree run.
	total int

	inTx      *pkt.Packet
	handlers  clock.Handlers               // clk's ScheduleHandler where it has one (the virtual clock)
	sched     func(d clock.Time, f func()) // else clk's allocation-free Schedule where it has one
	txDone    func()                       // allocated once: the serialization-complete callback
	link      Link
	hooks     Hooks
	busyTime  clock.Time // total time spent serializing (utilization)
	sentBytes uint64
	overhead  int // cfg.Overhead and cfg.RateBps, here beside the rest
	rate      float64

	pool    *fifo.Pool[*pkt.Packet]
	clk     clock.Clock
	quantum int
	// onPause, if set, hears every change of a data queue's pause state (the deadlock monitor).
	onPause func(q int, on bool)
}

// New makes a port. link may be set later with SetLink (backends wire links after devices exist).
func New(cfg Config, clk clock.Clock, link Link, hooks Hooks) (*Port, error) {
	if cfg.RateBps <= 0 {
		return nil, fmt.Errorf("egress: rate must be positive, got %g bps", cfg.RateBps)
	}
	if cfg.Queues < 1 || cfg.Queues > 64 {
		return nil, fmt.Errorf("egress: queues must be 1..64, got %d", cfg.Queues)
	}
	p := &Port{pool: cfg.Pool, clk: clk, link: link, hooks: hooks, queues: make([]queue, cfg.Queues), quantum: cfg.Quantum,
		overhead: cfg.Overhead, rate: cfg.RateBps}
	if p.pool == nil {
		p.pool = &fifo.Pool[*pkt.Packet]{}
	}
	if p.quantum <= 0 {
		p.quantum = 1500
	}
	for _, s := range cfg.Strict {
		if s < 0 || s >= cfg.Queues {
			return nil, fmt.Errorf("egress: strict queue %d out of range 0..%d", s, cfg.Queues-1)
		}
		p.strict |= 1 << uint(s)
	}
	for q := range p.queues {
		w := 1
		if q < len(cfg.Weights) && cfg.Weights[q] > 1 {
			w = cfg.Weights[q]
		}
		p.queues[q].quantum = w * p.quantum
	}
	p.txDone = p.finish
	p.sched = clock.ScheduleFunc(clk)
	p.handlers, _ = clk.(clock.Handlers)
	return p, nil
}

// SetLink attaches the link the port transmits onto.
func (p *Port) SetLink(l Link) { p.link = l }

// Rate returns the port's line rate in bits per second.
func (p *Port) Rate() float64 { return p.rate }

// Enqueue appends a frame to queue q and starts the transmitter if it is idle. Admission (buffer
// limits, drops) is the owning engine's decision and happens before this call.
func (p *Port) Enqueue(q int, f *pkt.Packet) {
	f.Queue = int16(q)
	p.queues[q].push(p.pool, f)
	p.total += int(f.Size)
	p.filled |= 1 << uint(q)
	if !p.busy {
		p.start()
	}
}

// Pause stops (or resumes) service of queue q. Strict queues ignore pauses: control frames must always
// get through, or a pause could never be lifted.
func (p *Port) Pause(q int, on bool) {
	bit := uint64(1) << uint(q)
	if p.strict&bit != 0 {
		return
	}
	if on {
		if p.paused&bit == 0 {
			p.paused |= bit
			if p.onPause != nil {
				p.onPause(q, true)
			}
		}
		return
	}
	if p.paused&bit != 0 {
		p.paused &^= bit
		if p.onPause != nil {
			p.onPause(q, false)
		}
		if !p.busy {
			p.start()
		}
	}
}

// OnPause sets f to hear every change of a queue's pause state (nil: none). A watcher that only needs
// to look at paused queues uses it instead of polling every queue.
func (p *Port) OnPause(f func(q int, on bool)) { p.onPause = f }

// LastDequeue is when queue q's last frame left it (0 if none has).
func (p *Port) LastDequeue(q int) clock.Time { return p.queues[q].lastDeq }

// Paused reports whether queue q is paused.
func (p *Port) Paused(q int) bool { return p.paused&(1<<uint(q)) != 0 }

// Bytes is queue q's occupancy in bytes.
func (p *Port) Bytes(q int) int { return p.queues[q].bytes() }

// Frames is queue q's occupancy in frames.
func (p *Port) Frames(q int) int { return p.queues[q].len() }

// TotalBytes is the occupancy of all queues.
func (p *Port) TotalBytes() int { return p.total }

// NumQueues returns the number of queues.
func (p *Port) NumQueues() int { return len(p.queues) }

// Busy reports whether a frame is serializing now.
func (p *Port) Busy() bool { return p.busy }

// QueueStats are a queue's counters.
type QueueStats struct {
	Enqueued, Dequeued           uint64
	EnqueuedBytes, DequeuedBytes uint64
	MaxBytes, Bytes, Frames      int
	Paused                       bool
}

// Stats returns queue q's counters.
func (p *Port) Stats(q int) QueueStats {
	x := &p.queues[q]
	return QueueStats{Enqueued: x.enq, Dequeued: x.deq, EnqueuedBytes: x.enqBytes, DequeuedBytes: x.deqBytes,
		MaxBytes: x.maxBytes, Bytes: x.bytes(), Frames: x.len(), Paused: p.Paused(q)}
}

// BusyTime is the total time the port spent serializing, for utilization.
func (p *Port) BusyTime() clock.Time { return p.busyTime }

// SentBytes is the total bytes whose transmission completed.
func (p *Port) SentBytes() uint64 { return p.sentBytes }

// pick chooses the next queue to serve, or -1. Bitmasks of strict, paused and non-empty queues make it
// O(1) in the number of queues (a scan of every queue per frame was 8.5% of a fat-tree run); the DRR
// order is the scan's: the turn moves to the next eligible queue, skipping the rest as the scan did.
func (p *Port) pick() int {
	if s := p.strict & p.filled; s != 0 {
		return bits.TrailingZeros64(s)
	}
	// DRR: the queue holding the turn gets one quantum per turn and keeps the turn while its deficit
	// covers its head frame. Terminates: every eligible queue gains a quantum per round. Queues skipped
	// lose nothing: an empty queue's deficit is already 0 (start clears it), a paused one keeps its own.
	elig := p.filled &^ p.strict &^ p.paused
	if elig == 0 {
		return -1
	}
	for {
		q := p.rr
		if elig&(1<<uint(q)) != 0 {
			x := &p.queues[q]
			if !p.granted {
				x.deficit += x.quantum
				p.granted = true
			}
			if x.deficit >= int(x.frames.Front().Size) {
				return q
			}
		}
		above := elig >> uint(q+1) << uint(q+1) // eligible queues after q (q+1 = 64 shifts to 0)
		if above != 0 {
			p.rr = bits.TrailingZeros64(above)
		} else {
			p.rr = bits.TrailingZeros64(elig)
		}
		p.granted = false
	}
}

func (p *Port) start() {
	q := p.pick()
	if q < 0 {
		return
	}
	x := &p.queues[q]
	f := x.pop(p.pool)
	p.total -= int(f.Size)
	if x.len() == 0 {
		p.filled &^= 1 << uint(q)
	}
	x.lastDeq = p.clk.Now()
	if p.strict&(1<<uint(q)) == 0 {
		x.deficit -= int(f.Size)
		if x.len() == 0 {
			x.deficit = 0
		}
	}
	p.busy = true
	p.inTx = f
	if p.hooks.Dequeue != nil {
		p.hooks.Dequeue(q, f)
	}
	d := clock.TxTime(int(f.Size)+p.overhead, p.rate)
	p.busyTime += d
	if p.handlers != nil {
		p.handlers.ScheduleHandler(d, (*txEnd)(p))
		return
	}
	p.sched(d, p.txDone)
}

// txEnd is a Port as the clock's Handler of its serialization's end.
type txEnd Port

func (t *txEnd) Fire() { (*Port)(t).finish() }

func (p *Port) finish() {
	f := p.inTx
	p.inTx = nil
	p.busy = false
	p.sentBytes += uint64(f.Size)
	if p.hooks.Sent != nil {
		p.hooks.Sent(f)
	}
	p.link.Send(f)
	if !p.busy { // Send may have re-entered Enqueue on a loopback link
		p.start()
	}
}

// LinkFunc adapts a function to a Link (tests, loopbacks).
type LinkFunc func(p *pkt.Packet)

// Send calls f(p).
func (f LinkFunc) Send(p *pkt.Packet) { f(p) }
