package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/nslink"

	"golang.org/x/sys/unix"
)

// `lab capture` on a switch of a lab over several machines: the coordinator's lab capture asks the
// machine that hosts the switch, over a connection of its own (as lab exec does). The server has the
// lab's agent write the port's pcap to a file in the lab's state directory, as a one-machine capture
// writes the user's file, and sends that file's bytes back as the agent writes them (the agent flushes
// every CaptureFlush), so the coordinator ends with the very pcap a local capture writes. The agent
// belongs to the connection that made the lab (the supervisor's): the server asks it with live
// requests of its own, whose replies it keeps from that connection (liveCall). The file is removed
// when the capture ends, whichever way: a stop, the capture's connection lost, or the lab brought
// down; and what was sent is punched out of it meanwhile, so a long capture does not fill the
// machine's /run (tmpfs, in memory).

const (
	capturePoll  = 100 * time.Millisecond // how often a capture's file is read for new bytes
	captureChunk = 256 << 10              // the largest pcap message
	liveTimeout  = 10 * time.Second       // as the coordinator waits for its own live requests
)

// capture is the one capture a session streams.
type capture struct {
	stop     chan struct{} // closed by a stop message
	stopOnce sync.Once
	done     chan struct{} // closed once the agent stopped and the file is gone
}

// liveCall sends the server's own live request to the agent of ss's lab and waits for the reply.
func (ss *session) liveCall(req lockstep.LiveMsg) (*lockstep.LiveMsg, error) {
	req.ID = ss.s.liveID.Add(1)
	w := make(chan *lockstep.LiveMsg, 1)
	ss.amu.Lock()
	a, gone := ss.agent, ss.gone
	if a != nil {
		if ss.waiting == nil {
			ss.waiting = map[uint64]chan *lockstep.LiveMsg{}
		}
		ss.waiting[req.ID] = w
	}
	ss.amu.Unlock()
	if a == nil {
		// (Not ss.lab: this runs on the capture's goroutine, and the owner's teardown clears it.)
		return nil, errors.New("the lab has no agent running here")
	}
	defer func() {
		ss.amu.Lock()
		delete(ss.waiting, req.ID)
		ss.amu.Unlock()
	}()
	if err := a.Send(&lockstep.AgentMsg{Type: "live", Live: &req}); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	select {
	case m := <-w:
		if m.Err != "" {
			return m, errors.New(m.Err)
		}
		return m, nil
	case <-gone:
		return nil, errors.New("the lab's agent exited")
	case <-time.After(liveTimeout):
		return nil, fmt.Errorf("agent: no reply to %s within %v", req.Op, liveTimeout)
	}
}

// owner is the session that made lab and holds it, or nil.
func (s *Server) owner(lab string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owners[lab]
}

// startCapture has the agent of r's lab capture r's port to a file and streams it (server side); it
// answers capturing once the agent writes, or an error naming what is wrong.
func (ss *session) startCapture(ctx context.Context, r *CaptureReq) error {
	if r == nil {
		return errors.New("capture: no port")
	}
	if ss.execing.Load() || ss.capture != nil {
		return errors.New("capture: this connection already runs a command or a capture")
	}
	owner := ss.s.owner(r.Lab)
	if owner == nil {
		return fmt.Errorf("no lab %q made by this agent server is up here", r.Lab)
	}
	nl, err := nslink.Open(r.Lab)
	if err != nil {
		return err
	}
	if !slices.Contains(nl.Devices(), r.Device) {
		return fmt.Errorf("no device %q of lab %s here", r.Device, r.Lab)
	}
	port := fmt.Sprintf("%s:p%d", r.Device, r.Port)
	key := r.Lab + "/" + port
	ss.s.mu.Lock()
	busy := ss.s.captures[key]
	ss.s.captures[key] = true
	ss.s.capSeq++
	path := filepath.Join(nslink.StateDir(r.Lab), fmt.Sprintf("capture-%d-%s-p%d.pcap", ss.s.capSeq, r.Device, r.Port))
	ss.s.mu.Unlock()
	if busy {
		return fmt.Errorf("capture %s: another lab capture is capturing it", port)
	}
	release := func() {
		ss.s.mu.Lock()
		delete(ss.s.captures, key)
		ss.s.mu.Unlock()
	}
	if _, err := owner.liveCall(lockstep.LiveMsg{Op: "capture", Device: r.Device, Port: r.Port, Path: path}); err != nil {
		release()
		os.Remove(path)
		return fmt.Errorf("capture %s: %w", port, err)
	}
	cp := &capture{stop: make(chan struct{}), done: make(chan struct{})}
	ss.capture = cp
	ss.s.logf("lab %s: capturing %s", r.Lab, port)
	// Answered before the first pcap message; a connection that failed ends the capture at once.
	err = ss.c.Send(Msg{Type: "capturing"})
	go func() {
		defer close(cp.done)
		defer release()
		defer os.Remove(path)
		why := ss.streamCapture(ctx, owner, r, path, cp)
		ss.s.logf("lab %s: capture of %s ended%s", r.Lab, port, why)
	}()
	return err
}

// stopCapture ends the connection's capture: the rest of the file, then captured.
func (ss *session) stopCapture() error {
	if ss.capture == nil {
		return errors.New("stop: this connection captures nothing")
	}
	ss.capture.stopOnce.Do(func() { close(ss.capture.stop) })
	return nil
}

// streamCapture sends path's bytes as the agent writes them until a stop, the connection's end or the
// lab's, then stops the agent's capture and sends the rest and captured (not when the connection is
// gone). It says how the capture ended, for the log.
func (ss *session) streamCapture(ctx context.Context, owner *session, r *CaptureReq, path string, cp *capture) string {
	stopAgent := func() error {
		_, err := owner.liveCall(lockstep.LiveMsg{Op: "capture", Device: r.Device, Port: r.Port})
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0) // writable: sent bytes are punched out
	if err != nil {
		stopAgent()
		ss.c.Send(Msg{Type: "captured", Err: err.Error()})
		return ": " + err.Error()
	}
	defer f.Close()
	tl := &tail{f: f, buf: make([]byte, captureChunk), send: func(b []byte) error { return ss.c.Send(Msg{Type: "pcap", Data: b}) }}
	tick := time.NewTicker(capturePoll)
	defer tick.Stop()
	var why string
loop:
	for {
		if err := tl.drain(); err != nil {
			stopAgent()
			return ": " + err.Error() // the connection failed: nothing more can be sent
		}
		select {
		case <-cp.stop:
			break loop
		case <-ctx.Done():
			stopAgent()
			return " with its connection"
		case <-tick.C:
			if ss.s.owner(r.Lab) != owner {
				why = fmt.Sprintf("lab %s was brought down on this machine", r.Lab)
				break loop
			}
		}
	}
	if err := stopAgent(); err != nil && why == "" {
		why = fmt.Sprintf("stopping the agent's capture: %v", err)
	}
	// The agent has flushed and closed the file: what is left in it is the capture's end.
	if err := tl.drain(); err != nil {
		return ": " + err.Error()
	}
	ss.c.Send(Msg{Type: "captured", Err: why})
	if why != "" {
		return ": " + why
	}
	return fmt.Sprintf(" (%d bytes)", tl.off)
}

// tail reads a file another process appends to.
type tail struct {
	f       *os.File
	buf     []byte
	off     int64 // bytes read and sent
	punched int64
	send    func([]byte) error
}

// drain sends what has been written since the last call, and frees the whole pages of it sent.
func (t *tail) drain() error {
	for {
		n, err := t.f.Read(t.buf)
		if n > 0 {
			if err := t.send(t.buf[:n]); err != nil {
				return err
			}
			t.off += int64(n)
		}
		if err != nil && err != io.EOF {
			return err
		}
		if err == io.EOF || n == 0 {
			break
		}
	}
	// Best effort: a file system without hole punching keeps the bytes until the file is removed.
	if end := t.off &^ 4095; end > t.punched {
		if unix.Fallocate(int(t.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, t.punched, end-t.punched) == nil {
			t.punched = end
		}
	}
	return nil
}

// Capture is a capture streaming from a machine (client side): the pcap's bytes go to the writer
// given to StartCapture as they come.
type Capture struct {
	r    *Remote
	done chan struct{}
	err  error
	n    int64
}

// StartCapture asks the machine to capture port of device in lab and returns once the agent writes
// (or the machine refused, naming why). Until Stop or Done, the pcap's bytes go to w.
func (r *Remote) StartCapture(ctx context.Context, lab, device string, port int, w io.Writer) (*Capture, error) {
	if _, err := r.call(ctx, Msg{Type: "capture", Capture: &CaptureReq{Lab: lab, Device: device, Port: port}}, "capturing", 30*time.Second); err != nil {
		return nil, err
	}
	c := &Capture{r: r, done: make(chan struct{})}
	go c.read(w)
	return c, nil
}

func (c *Capture) read(w io.Writer) {
	defer close(c.done)
	name := c.r.Machine.Name
	for m := range c.r.in {
		switch m.Type {
		case "pcap":
			if _, err := w.Write(m.Data); err != nil {
				c.err = err
				c.r.Close() // the server stops the capture and removes its file
				return
			}
			c.n += int64(len(m.Data))
		case "captured":
			if m.Err != "" {
				c.err = fmt.Errorf("machine %s: %s", name, m.Err)
			}
			return
		case "error":
			c.err = fmt.Errorf("machine %s: %s", name, m.Err)
			return
		}
	}
	c.err = fmt.Errorf("machine %s: connection lost during the capture: %v", name, c.r.err)
}

// Done is closed when the capture has ended (Err says why, if not by Stop).
func (c *Capture) Done() <-chan struct{} { return c.done }

// Err is why the capture ended, once Done is closed; nil after a clean stop.
func (c *Capture) Err() error { return c.err }

// Bytes is how much of the pcap arrived, once Done is closed.
func (c *Capture) Bytes() int64 { return c.n }

// Stop ends the capture and waits until the rest of the pcap has arrived.
func (c *Capture) Stop() error {
	select {
	case <-c.done:
		return c.err
	default:
	}
	if err := c.r.c.Send(Msg{Type: "stop"}); err != nil {
		return fmt.Errorf("machine %s: %w", c.r.Machine.Name, err)
	}
	select {
	case <-c.done:
		return c.err
	case <-time.After(time.Minute):
		c.r.Close()
		return fmt.Errorf("machine %s: the capture did not end within a minute of stop", c.r.Machine.Name)
	}
}
