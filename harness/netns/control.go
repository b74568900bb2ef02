package netns

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"

	"github.com/fabriclab/fabriclab/clock"
)

// Control is one end of the channel between the backend (the coordinator) and an agent: AgentMsgs,
// whole and in order, in both directions. Nothing else passes between them (no shared memory, files or
// clock beyond the epoch the start message names), so an agent on another machine needs only a
// transport that implements Control; StreamControl over a TCP connection is one.
type Control interface {
	// Send writes one message; it is safe for concurrent use.
	Send(m *AgentMsg) error
	// Recv reads the next message into m (io.EOF once the other side has closed); one reader at a time.
	Recv(m *AgentMsg) error
	// Close ends the sending direction (and the connection, where the transport has one).
	Close() error
}

// StreamControl implements Control over a byte stream (the agent's stdin and stdout pipes, a TCP
// connection): each message is one line, so a frame ends at the newline and a reader can resynchronise
// on it. A line is a JSON object (encoding/json never writes a raw newline inside one), except the
// lockstep messages an agent and its coordinator trade every window (reached, grant): those are a
// short text line starting with '@' (compactLockstep), since encoding/json's reflection and maps cost
// two agents 12% of their CPU.
type StreamControl struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte // Send's line, reused
	r   *bufio.Reader
	c   io.Closer
}

var _ Control = (*StreamControl)(nil)

// NewStreamControl frames messages onto w and off r; c, if not nil, is closed by Close (a pipe's write
// end, a net.Conn).
func NewStreamControl(r io.Reader, w io.Writer, c io.Closer) *StreamControl {
	return &StreamControl{w: w, r: bufio.NewReaderSize(r, 64<<10), c: c}
}

// Send implements Control.
func (s *StreamControl) Send(m *AgentMsg) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := appendLockstep(s.buf[:0], m); ok {
		s.buf = b
	} else {
		j, err := json.Marshal(m)
		if err != nil {
			return err
		}
		s.buf = append(append(s.buf[:0], j...), '\n')
	}
	_, err := s.w.Write(s.buf)
	return err
}

// Recv implements Control. A line that is not a message, or not one the protocol knows
// (AgentMsg.Check), is an error: the stream cannot be trusted past it.
func (s *StreamControl) Recv(m *AgentMsg) error {
	*m = AgentMsg{}
	line, err := s.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) { // a setup or records message longer than the buffer
		long := bytes.Clone(line)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = s.r.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) > 0 {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if len(line) > 0 && line[0] == '@' {
		err = parseLockstep(line[:len(line)-1], m)
	} else {
		err = json.Unmarshal(line, m)
	}
	if err != nil {
		return err
	}
	return m.Check()
}

// Close implements Control.
func (s *StreamControl) Close() error {
	if s.c == nil {
		return nil
	}
	return s.c.Close()
}

// compactLockstep: "@reached NOW LATE [CHAN:COUNT ...]" and "@grant UNTIL [CHAN:COUNT ...]", times in
// picoseconds, channels in ascending order. A reached or grant message with any other field set goes
// as JSON.

// appendLockstep appends m's compact line to b if m is a plain reached or grant message.
func appendLockstep(b []byte, m *AgentMsg) ([]byte, bool) {
	var t int64
	switch {
	case m.Type == "reached" && m.Until == 0:
		t = int64(m.Now)
	case m.Type == "grant" && m.Now == 0 && m.Late == 0:
		t = int64(m.Until)
	default:
		return b, false
	}
	rest := *m
	rest.Type, rest.Now, rest.Until, rest.Late, rest.Counts = "", 0, 0, 0, nil
	if !rest.isZero() {
		return b, false
	}
	b = append(append(append(b, '@'), m.Type...), ' ')
	b = strconv.AppendInt(b, t, 10)
	if m.Type == "reached" {
		b = strconv.AppendUint(append(b, ' '), m.Late, 10)
	}
	chans := make([]int, 0, 8)
	for c := range m.Counts {
		chans = append(chans, c)
	}
	sort.Ints(chans)
	for _, c := range chans {
		b = strconv.AppendInt(append(b, ' '), int64(c), 10)
		b = strconv.AppendUint(append(b, ':'), m.Counts[c], 10)
	}
	return append(b, '\n'), true
}

// isZero says whether no field of m is set (AgentMsg holds a map and slices, so == does not compile).
func (m *AgentMsg) isZero() bool {
	return m.Type == "" && m.Setup == nil && m.Epoch == 0 && m.End == 0 && m.Log == nil && m.Fidelity == nil &&
		m.Now == 0 && m.Done == 0 && m.Flows == nil && m.Finish == nil && m.Deadlock == nil && m.Err == "" &&
		m.Live == nil && m.Until == 0 && m.Counts == nil && m.Late == 0 && m.Snapshot == nil
}

// parseLockstep reads a compact line (without its newline) into m, naming what is malformed.
func parseLockstep(line []byte, m *AgentMsg) error {
	f := bytes.Fields(line[1:])
	bad := func(what string) error { return fmt.Errorf("lockstep line %.60q: %s", line, what) }
	if len(f) < 2 {
		return bad("too short")
	}
	m.Type = string(f[0])
	t, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return bad("time: " + err.Error())
	}
	f = f[2:]
	switch m.Type {
	case "reached":
		if len(f) == 0 {
			return bad("no late count")
		}
		if m.Late, err = strconv.ParseUint(string(f[0]), 10, 64); err != nil {
			return bad("late count: " + err.Error())
		}
		m.Now, f = clock.Time(t), f[1:]
	case "grant":
		m.Until = clock.Time(t)
	default:
		return bad("not a reached or grant message")
	}
	if len(f) > 0 {
		m.Counts = make(map[int]uint64, len(f))
	}
	for _, kv := range f {
		k, v, ok := bytes.Cut(kv, []byte{':'})
		c, err1 := strconv.Atoi(string(k))
		n, err2 := strconv.ParseUint(string(v), 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return bad(fmt.Sprintf("channel count %q", kv))
		}
		m.Counts[c] = n
	}
	return nil
}
