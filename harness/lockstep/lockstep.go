// Package lockstep is how the backend and its agents talk and keep time together: the agent protocol
// (msg.go: AgentMsg, AgentSetup and the live requests), the control channel that carries it
// (control.go: Control, StreamControl), the stamp a frame on a cut link carries and the coordinator that
// grants agents their windows (lockstep.go). The backend (package netns) drives it; the agent
// (harness/netns/agent) answers it.
package lockstep

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/fabriclab/fabriclab/clock"
)

// Lockstep: how several agents run one lab as one, exactly when each frame is due (docs/lockstep.md).
//
// A cut link is a cable whose two ends are hosted by different agents; each direction of it is a
// channel with a number (AgentPort.TxChan at the sender, RxChan at the receiver). A frame on a channel
// leaves as soon as the sending port has serialized it and carries its due arrival time in a stamp
// (AppendStamp), so the receiver holds it and hands it to its engine at that time, as it does a frame
// between two of its own devices. Agents advance in windows: an agent runs no event at or after its
// grant. It reports "reached T" (every event before T has run, and nothing it has not run yet can happen
// before T) with how many frames it has written on each of its outgoing channels; the coordinator grants
// each agent the smallest, over its incoming channels, of the sender's reached time plus the channel's
// delay (no frame sent at or after T arrives before T + delay), with the sender's counts. The receiver
// runs past its old grant only once it has read that many frames on each channel: the stamped frames and
// the control messages travel different paths, which a VXLAN hop between machines does not order.

// StampLen is the length of the lockstep stamp at the end of a frame on a cut link.
const StampLen = 16

// stampMagic opens a stamp: "FLTS" (fabriclab timestamp).
const stampMagic = 0x464c5453

// AppendStamp appends the stamp to an encoded frame: magic "FLTS", the due arrival time (engine
// picoseconds since the run's epoch, big-endian int64), and the frame's sequence number on its channel
// (big-endian uint32, from 1). It trails the frame's own bytes: an IPv4 frame's total length ends before
// it, so Wireshark shows it as the Ethernet trailer and decodes the rest as always.
func AppendStamp(frame []byte, due clock.Time, seq uint32) []byte {
	frame = binary.BigEndian.AppendUint32(frame, stampMagic)
	frame = binary.BigEndian.AppendUint64(frame, uint64(due))
	return binary.BigEndian.AppendUint32(frame, seq)
}

// ErrStamp is a frame on a cut link without a valid stamp (too short, another magic, a negative time
// or sequence 0): it is counted as malformed and dropped.
var ErrStamp = errors.New("lockstep stamp missing or malformed")

// ParseStamp splits a frame read on a cut link into the frame and its stamp.
func ParseStamp(b []byte) (frame []byte, due clock.Time, seq uint32, err error) {
	if len(b) < StampLen+14 {
		return nil, 0, 0, fmt.Errorf("%w: frame of %d bytes", ErrStamp, len(b))
	}
	s := b[len(b)-StampLen:]
	if binary.BigEndian.Uint32(s) != stampMagic {
		return nil, 0, 0, fmt.Errorf("%w: magic %#x", ErrStamp, binary.BigEndian.Uint32(s))
	}
	due = clock.Time(binary.BigEndian.Uint64(s[4:]))
	seq = binary.BigEndian.Uint32(s[12:])
	if due < 0 || seq == 0 {
		return nil, 0, 0, fmt.Errorf("%w: due %d, sequence %d", ErrStamp, due, seq)
	}
	return b[:len(b)-StampLen], due, seq, nil
}

// LockChan is one direction of a cut link: frames from agent From to agent To, Delay (dilated) after
// they leave.
type LockChan struct {
	ID       int        `json:"id"`
	From, To int        `json:"-"`
	Delay    clock.Time `json:"delay"`
}

// Grant lets agent Agent run every event before Until, once it has read Counts[c] frames on each of
// its incoming channels c.
type Grant struct {
	Agent  int
	Until  clock.Time
	Counts map[int]uint64
}

// Coordinator is the backend's side of lockstep: it turns the agents' reached reports into grants. It
// is not safe for concurrent use.
type Coordinator struct {
	chans   []LockChan
	in      [][]int // agent -> indices into chans of its incoming channels
	reached []clock.Time
	counts  map[int]uint64 // channel -> frames its sender had written when it reported reached
	granted []clock.Time
	cap     clock.Time
	hold    clock.Time // no agent runs an event at or past it until it is raised (Hold); 0: none
}

// NewCoordinator coordinates n agents joined by chans, up to (and including) engine time end.
func NewCoordinator(n int, chans []LockChan, end clock.Time) *Coordinator {
	c := &Coordinator{chans: chans, in: make([][]int, n), reached: make([]clock.Time, n),
		counts: map[int]uint64{}, granted: make([]clock.Time, n), cap: end + 1}
	for i, ch := range chans {
		c.in[ch.To] = append(c.in[ch.To], i)
	}
	return c
}

// Channels is how many cut-link channels the agents are joined by.
func (c *Coordinator) Channels() int { return len(c.chans) }

// Slowest is the earliest time an agent has reached.
func (c *Coordinator) Slowest() clock.Time { return slices.Min(c.reached) }

// Held is the time set by Hold or SetHold (0: none).
func (c *Coordinator) Held() clock.Time { return c.hold }

// SetHold sets the time no agent runs an event at or past, before the first grants (Start).
func (c *Coordinator) SetHold(t clock.Time) { c.hold = t }

// Lookahead is the smallest channel delay: how far one agent may run ahead of the slowest (0: none).
func (c *Coordinator) Lookahead() clock.Time {
	var l clock.Time
	for i, ch := range c.chans {
		if i == 0 || ch.Delay < l {
			l = ch.Delay
		}
	}
	return l
}

// Start returns the first grants: before anyone has run, every agent may run to its smallest incoming
// channel delay (and an agent no channel reaches, to the end).
func (c *Coordinator) Start() []Grant { return c.grants() }

// Reached records that agent a has run every event before t, having written counts[ch] frames on its
// outgoing channels, and returns the grants that moves forward. A report older than one already
// recorded changes nothing.
func (c *Coordinator) Reached(a int, t clock.Time, counts map[int]uint64) ([]Grant, error) {
	if a < 0 || a >= len(c.reached) {
		return nil, fmt.Errorf("lockstep: reached from agent %d of %d", a, len(c.reached))
	}
	if t <= c.reached[a] {
		return nil, nil
	}
	for _, ch := range c.chans {
		if ch.From != a {
			continue
		}
		n, ok := counts[ch.ID]
		if !ok && t > 0 {
			return nil, fmt.Errorf("lockstep: agent %d reached %v without a count for its channel %d", a, t, ch.ID)
		}
		if n < c.counts[ch.ID] {
			return nil, fmt.Errorf("lockstep: agent %d's count on channel %d went back from %d to %d", a, ch.ID, c.counts[ch.ID], n)
		}
		c.counts[ch.ID] = n
	}
	c.reached[a] = t
	return c.grants(), nil
}

// End lowers the last time agents run to (stop when done: the last completion); it never rises.
func (c *Coordinator) End(end clock.Time) []Grant {
	c.cap = min(c.cap, end+1)
	return c.grants()
}

// Hold keeps every agent before t until it is raised (0: no hold): a barrier the backend sets at the
// deadlock monitor's next tick, so no agent runs past a tick before the merged snapshot of it has been
// judged. It returns the grants that moved.
func (c *Coordinator) Hold(t clock.Time) []Grant {
	c.hold = t
	return c.grants()
}

// Limit is what agent a has been granted so far.
func (c *Coordinator) Limit(a int) clock.Time { return c.granted[a] }

// grants computes every agent's grant and returns those that moved.
func (c *Coordinator) grants() []Grant {
	var out []Grant
	for a := range c.granted {
		g := c.cap
		if c.hold > 0 {
			g = min(g, c.hold)
		}
		for _, i := range c.in[a] {
			ch := c.chans[i]
			g = min(g, c.reached[ch.From]+ch.Delay)
		}
		if g <= c.granted[a] {
			continue
		}
		c.granted[a] = g
		counts := make(map[int]uint64, len(c.in[a]))
		for _, i := range c.in[a] {
			counts[c.chans[i].ID] = c.counts[c.chans[i].ID]
		}
		out = append(out, Grant{Agent: a, Until: g, Counts: counts})
	}
	return out
}

// Window is an agent's side of lockstep: the grants it has been sent, the frames it has read on each
// incoming channel, and from those the time before which it may run events. It is not safe for
// concurrent use.
type Window struct {
	limit   clock.Time
	pending []Grant
	read    map[int]uint32 // channel -> highest sequence number read
	// Lost counts frames a channel skipped (a sequence gap, or given up on by GiveUp); Stale frames
	// read with a sequence number not above one already read (duplicates, or frames given up on).
	Lost, Stale uint64
}

// NewWindow starts a window at time 0: nothing may run until the first grant.
func NewWindow() *Window { return &Window{read: map[int]uint32{}} }

// Limit is the time before which events may run.
func (w *Window) Limit() clock.Time { return w.limit }

// Grant queues a grant; it applies once its counts are read (Advance).
func (w *Window) Grant(until clock.Time, counts map[int]uint64) {
	w.pending = append(w.pending, Grant{Until: until, Counts: counts})
}

// Read records a frame with sequence number seq read on channel ch. It returns false for a stale
// frame (the caller drops it); a gap before seq counts the frames in it as lost.
func (w *Window) Read(ch int, seq uint32) bool {
	last := w.read[ch]
	if seq <= last {
		w.Stale++
		return false
	}
	w.Lost += uint64(seq - last - 1)
	w.read[ch] = seq
	return true
}

// Advance applies the queued grants whose counts have all been read, in order, and reports whether the
// limit moved.
func (w *Window) Advance() bool {
	moved := false
	for len(w.pending) > 0 && w.satisfied(w.pending[0]) {
		w.limit = max(w.limit, w.pending[0].Until)
		w.pending = w.pending[1:]
		moved = true
	}
	return moved
}

// Waiting reports whether a grant is queued that cannot apply yet for frames not read.
func (w *Window) Waiting() bool { return len(w.pending) > 0 && !w.satisfied(w.pending[0]) }

// GiveUp applies the first queued grant whatever is missing, counting the frames not read as lost: the
// agent waited longer than any veth or VXLAN hop takes, so they were dropped on the way (a receive
// buffer overflowed). A frame that turns up later is stale.
func (w *Window) GiveUp() {
	if len(w.pending) == 0 {
		return
	}
	g := w.pending[0]
	for ch, n := range g.Counts {
		if have := uint64(w.read[ch]); have < n {
			w.Lost += n - have
			w.read[ch] = uint32(n)
		}
	}
	w.Advance()
}

func (w *Window) satisfied(g Grant) bool {
	for ch, n := range g.Counts {
		if uint64(w.read[ch]) < n {
			return false
		}
	}
	return true
}
