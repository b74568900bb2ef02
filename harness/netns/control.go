package netns

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"sync"
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
// connection): each message is one JSON object on one line, so a frame ends at the newline and a
// reader can resynchronise on it; encoding/json never writes a raw newline inside an object.
type StreamControl struct {
	mu  sync.Mutex
	w   io.Writer
	enc *json.Encoder
	dec *json.Decoder
	c   io.Closer
}

var _ Control = (*StreamControl)(nil)

// NewStreamControl frames messages onto w and off r; c, if not nil, is closed by Close (a pipe's write
// end, a net.Conn).
func NewStreamControl(r io.Reader, w io.Writer, c io.Closer) *StreamControl {
	return &StreamControl{w: w, enc: json.NewEncoder(w), dec: json.NewDecoder(bufio.NewReaderSize(r, 64<<10)), c: c}
}

// Send implements Control.
func (s *StreamControl) Send(m *AgentMsg) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enc.Encode(m)
}

// Recv implements Control. A message that is not JSON, or not one the protocol knows (AgentMsg.Check),
// is an error: the stream cannot be trusted past it.
func (s *StreamControl) Recv(m *AgentMsg) error {
	*m = AgentMsg{}
	if err := s.dec.Decode(m); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return io.ErrUnexpectedEOF
		}
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
