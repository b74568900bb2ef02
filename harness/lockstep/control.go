package lockstep

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
	"syscall"

	"golang.org/x/sys/unix"

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
	rs  io.Reader // what r reads (PollFd takes its descriptor)
	c   io.Closer
	// Polled reading (PollFd, Poll): the descriptor, set non-blocking, and what has been read of it,
	// whole lines from pstart on.
	pfd    int
	pbuf   []byte
	pstart int
}

var _ Control = (*StreamControl)(nil)

// NewStreamControl frames messages onto w and off r; c, if not nil, is closed by Close (a pipe's write
// end, a net.Conn).
func NewStreamControl(r io.Reader, w io.Writer, c io.Closer) *StreamControl {
	return &StreamControl{w: w, r: bufio.NewReaderSize(r, 64<<10), rs: r, c: c, pfd: -1}
}

// A PolledControl is a Control whose incoming messages a single-threaded event loop reads itself,
// waiting for its descriptor with the rest of what it waits for, instead of a goroutine blocked in
// Recv handing each message over. Two agents in lockstep trade a message each way per window: the
// handing over (the reading goroutine's wake-ups, the Go scheduler passing it between threads) was a
// third of their CPU.
type PolledControl interface {
	Control
	// PollFd switches reading to Poll and returns the descriptor to wait on (false: the transport has
	// none; use Recv). Recv must not be called after it.
	PollFd() (int, bool)
	// Poll decodes the next whole message into m without blocking; false when none has arrived whole.
	// io.EOF once the other side has closed.
	Poll(m *AgentMsg) (bool, error)
}

var _ PolledControl = (*StreamControl)(nil)

// PollFd implements PolledControl for a stream over a file or a socket (a pipe, a TCP connection).
func (s *StreamControl) PollFd() (int, bool) {
	if s.pfd >= 0 {
		return s.pfd, true
	}
	sc, ok := s.rs.(syscall.Conn)
	if !ok {
		return -1, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, false
	}
	fd := -1
	if rc.Control(func(f uintptr) { fd = int(f) }) != nil || fd < 0 || unix.SetNonblock(fd, true) != nil {
		return -1, false
	}
	// What Recv read ahead (a grant right behind the start message) is read first.
	n := s.r.Buffered()
	ahead, _ := s.r.Peek(n)
	s.pfd, s.pbuf = fd, append(make([]byte, 0, 64<<10), ahead...)
	s.r.Discard(n)
	return fd, true
}

// Poll implements PolledControl.
func (s *StreamControl) Poll(m *AgentMsg) (bool, error) {
	for {
		if i := bytes.IndexByte(s.pbuf[s.pstart:], '\n'); i >= 0 {
			line := s.pbuf[s.pstart : s.pstart+i+1]
			s.pstart += i + 1
			*m = AgentMsg{}
			return true, decodeLine(line, m)
		}
		// Keep the partial line at the front, with room behind it.
		s.pbuf = s.pbuf[:copy(s.pbuf, s.pbuf[s.pstart:])]
		s.pstart = 0
		if len(s.pbuf) == cap(s.pbuf) {
			s.pbuf = append(s.pbuf, make([]byte, cap(s.pbuf))...)[:len(s.pbuf)]
		}
		n, err := unix.Read(s.pfd, s.pbuf[len(s.pbuf):cap(s.pbuf)])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return false, nil
		case err != nil:
			return false, err
		case n == 0 && len(s.pbuf) > 0:
			return false, io.ErrUnexpectedEOF
		case n == 0:
			return false, io.EOF
		}
		s.pbuf = s.pbuf[:len(s.pbuf)+n]
	}
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
	return decodeLine(line, m)
}

// decodeLine decodes one message line (its newline included) into m, which must be zero.
func decodeLine(line []byte, m *AgentMsg) error {
	var err error
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
