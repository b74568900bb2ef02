package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/netns"
)

// Remote is the coordinator's connection to one machine's agent server. After Up and StartAgent it
// carries that machine's agent protocol: Send and Recv move netns.AgentMsgs, as a local agent's pipes
// do, so the backend drives a remote agent as it drives a local one.
type Remote struct {
	Machine Machine
	Hello   Hello
	c       *Conn
	in      chan Msg // everything but pongs, in order
	pongs   chan Stamps
	downs   chan Msg // downok, which may arrive while an agent's messages are being read
	done    chan struct{}
	err     error // why the reader stopped (after done closes)
	once    sync.Once
}

// Remote implements lockstep.Control over the authenticated TCP channel, as lockstep.StreamControl does over
// a local agent's pipes.
var _ lockstep.Control = (*Remote)(nil)

// ConnectMachine dials m's agent server, authenticates and reads its hello.
func ConnectMachine(ctx context.Context, m Machine, secret []byte) (*Remote, error) {
	c, err := Dial(ctx, m.Control, secret)
	if err != nil {
		return nil, fmt.Errorf("machine %s: %w", m.Name, err)
	}
	r := &Remote{Machine: m, c: c, in: make(chan Msg, 256), pongs: make(chan Stamps, 1), downs: make(chan Msg, 1), done: make(chan struct{})}
	var h Msg
	if err := c.Recv(&h); err == nil && h.Type == "error" {
		c.Close()
		return nil, fmt.Errorf("machine %s: %s", m.Name, h.Err)
	} else if err != nil || h.Type != "hello" || h.Hello == nil { // within LostAfter
		c.Close()
		return nil, fmt.Errorf("machine %s (%s): no hello: %v", m.Name, m.Control, err)
	}
	if h.Hello.Version != ProtocolVersion {
		c.Close()
		return nil, fmt.Errorf("machine %s: agent server speaks protocol %d, this coordinator %d: run the same lab version everywhere", m.Name, h.Hello.Version, ProtocolVersion)
	}
	if m.Underlay != "" && h.Hello.Underlay != m.Underlay {
		c.Close()
		return nil, fmt.Errorf("machine %s: the cluster file's underlay %s is not the server's --underlay %s", m.Name, m.Underlay, h.Hello.Underlay)
	}
	r.Hello = *h.Hello
	go r.read()
	return r, nil
}

func (r *Remote) read() {
	defer close(r.done)
	defer close(r.in)
	for {
		var m Msg
		if err := r.c.Recv(&m); err != nil {
			r.err = err
			// A silent server may only be frozen: closed now, it finds the connection gone (and removes
			// what it made) the moment it runs again.
			r.Close()
			return
		}
		t4 := realNow()
		if m.Type == "pong" && m.Clock != nil {
			m.Clock.T4 = t4
			select {
			case r.pongs <- *m.Clock:
			default:
			}
			continue
		}
		if m.Type == "downok" {
			r.downs <- m
			continue
		}
		r.in <- m
	}
}

// Done is closed once the connection has ended (Err says why).
func (r *Remote) Done() <-chan struct{} { return r.done }

// Err is why the connection ended, once Done is closed.
func (r *Remote) Err() error { return r.err }

// Close closes the connection: the server then removes what it made for it.
func (r *Remote) Close() error {
	r.once.Do(func() { r.c.Close() })
	return nil
}

// MeasureClock runs n probes one after another and estimates the machine's offset.
func (r *Remote) MeasureClock(ctx context.Context, n int) (Offset, error) {
	probes := make([]Stamps, 0, n)
	for i := 0; i < n; i++ {
		if err := r.c.Send(Msg{Type: "ping", Clock: &Stamps{T1: realNow()}}); err != nil {
			return Offset{}, fmt.Errorf("machine %s: clock probe: %w", r.Machine.Name, err)
		}
		select {
		case p := <-r.pongs:
			probes = append(probes, p)
		case <-r.done:
			return Offset{}, fmt.Errorf("machine %s: connection lost during clock probes: %v", r.Machine.Name, r.err)
		case <-time.After(5 * time.Second):
			return Offset{}, fmt.Errorf("machine %s: no answer to a clock probe within 5 s", r.Machine.Name)
		case <-ctx.Done():
			return Offset{}, ctx.Err()
		}
	}
	return estimate(r.Machine.Name, probes), nil
}

// call sends m and waits for the reply of type want (or an error).
func (r *Remote) call(ctx context.Context, m Msg, want string, timeout time.Duration) (Msg, error) {
	if err := r.c.Send(m); err != nil {
		return Msg{}, fmt.Errorf("machine %s: %w", r.Machine.Name, err)
	}
	select {
	case got, ok := <-r.in:
		if !ok {
			return Msg{}, fmt.Errorf("machine %s: connection lost: %v", r.Machine.Name, r.err)
		}
		if got.Type == "error" {
			return got, fmt.Errorf("machine %s: %s", r.Machine.Name, got.Err)
		}
		if got.Type != want {
			return got, fmt.Errorf("machine %s: answered %q to %q", r.Machine.Name, got.Type, m.Type)
		}
		return got, nil
	case <-time.After(timeout):
		return Msg{}, fmt.Errorf("machine %s: no %s within %v", r.Machine.Name, want, timeout)
	case <-ctx.Done():
		return Msg{}, ctx.Err()
	}
}

// Calibration is the machine's agent calibration (measured there first if it has none cached: the
// timeout allows for a slow machine).
func (r *Remote) Calibration(ctx context.Context) (netns.Calibration, error) {
	got, err := r.call(ctx, Msg{Type: "calibrate"}, "calibration", 15*time.Minute)
	if err != nil {
		return netns.Calibration{}, err
	}
	if got.Calibration == nil {
		return netns.Calibration{}, fmt.Errorf("machine %s: a calibration without a body", r.Machine.Name)
	}
	return *got.Calibration, nil
}

// Up makes the machine's part of a lab.
func (r *Remote) Up(ctx context.Context, req *UpReq) error {
	_, err := r.call(ctx, Msg{Type: "up", Up: req}, "upok", 5*time.Minute)
	return err
}

// Down asks the server to remove lab (one this or another connection made) and waits until it has.
// An error the server sends instead goes where the agent's messages go (Recv); a server that does not
// answer within a minute is an error here.
func (r *Remote) Down(ctx context.Context, lab string) error {
	if err := r.c.Send(Msg{Type: "down", Lab: lab}); err != nil {
		return fmt.Errorf("machine %s: %w", r.Machine.Name, err)
	}
	select {
	case m := <-r.downs:
		if m.Err != "" {
			return fmt.Errorf("machine %s: %s", r.Machine.Name, m.Err)
		}
		return nil
	case <-r.done:
		return fmt.Errorf("machine %s: connection lost before the lab was down: %v", r.Machine.Name, r.err)
	case <-time.After(time.Minute):
		return fmt.Errorf("machine %s: lab %s not down within a minute", r.Machine.Name, lab)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Send implements lockstep.Control: one agent message to the machine's agent. A start's epoch, a
// CLOCK_MONOTONIC reading of this process, goes out as CLOCK_REALTIME (the only clock machines share).
func (r *Remote) Send(m *lockstep.AgentMsg) error {
	if m.Type == "start" {
		c := *m
		c.Epoch += realNow() - clock.MonotonicNanos()
		m = &c
	}
	return r.c.Send(Msg{Type: "agent", Agent: m})
}

// Recv implements lockstep.Control: the next message from the machine's agent. A lost connection or the
// agent process's exit is an error naming the machine.
func (r *Remote) Recv(m *lockstep.AgentMsg) error {
	for {
		got, ok := <-r.in
		if !ok {
			if r.err == nil || errors.Is(r.err, io.EOF) {
				return fmt.Errorf("machine %s: connection closed: %w", r.Machine.Name, io.ErrUnexpectedEOF)
			}
			return fmt.Errorf("machine %s: connection lost: %v: %w", r.Machine.Name, r.err, io.ErrUnexpectedEOF)
		}
		switch got.Type {
		case "agent":
			if got.Agent == nil {
				continue
			}
			*m = *got.Agent
			return m.Check()
		case "error":
			*m = lockstep.AgentMsg{Type: "error", Err: fmt.Sprintf("machine %s: %s", r.Machine.Name, got.Err)}
			return nil
		case "exited":
			return fmt.Errorf("machine %s: agent %s: %w", r.Machine.Name, got.Err, io.EOF)
		}
	}
}
