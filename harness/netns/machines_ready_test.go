package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// fakeMachines are machines whose agents answer a setup with what answer says: ready, an error, or
// nothing at all (a machine that never answers).
type fakeMachines struct{ answer []string }

func (f *fakeMachines) Count() int                                                      { return len(f.answer) }
func (f *fakeMachines) Name(i int) string                                               { return fmt.Sprintf("m%d", i) }
func (f *fakeMachines) Check(int, time.Duration) error                                  { return nil }
func (f *fakeMachines) Up(context.Context, string, *topo.Graph, int, map[int]int) error { return nil }
func (f *fakeMachines) Recheck(context.Context, time.Duration) error                    { return nil }
func (f *fakeMachines) Down(string) error                                               { return nil }
func (f *fakeMachines) Report() any                                                     { return nil }
func (f *fakeMachines) Agent(_ context.Context, i int, _ *lockstep.AgentSetup) (lockstep.Control, error) {
	c := &fakeControl{in: make(chan lockstep.AgentMsg, 1), closed: make(chan struct{})}
	switch f.answer[i] {
	case "ready":
		c.in <- lockstep.AgentMsg{Type: "ready"}
	case "error":
		c.in <- lockstep.AgentMsg{Type: "error", Err: "no such port"}
	}
	return c, nil
}

type fakeControl struct {
	in     chan lockstep.AgentMsg
	closed chan struct{}
}

func (c *fakeControl) Send(*lockstep.AgentMsg) error { return nil }
func (c *fakeControl) Close() error                  { close(c.closed); return nil }
func (c *fakeControl) Recv(m *lockstep.AgentMsg) error {
	select {
	case *m = <-c.in:
		return nil
	case <-c.closed:
		return io.EOF
	}
}

func setupsFor(n int) []*lockstep.AgentSetup {
	s := make([]*lockstep.AgentSetup, n)
	for i := range s {
		s[i] = &lockstep.AgentSetup{}
	}
	return s
}

// A machine whose agent never answers fails the wait at the timeout, named (all of them), instead of
// holding `lab up --cluster` forever.
func TestStartMachineAgentsTimesOut(t *testing.T) {
	m := &fakeMachines{answer: []string{"ready", "silent", "ready", "silent"}}
	t0 := time.Now()
	_, err := StartMachineAgents(context.Background(), m, setupsFor(4), 200*time.Millisecond)
	var late *NotReadyError
	if !errors.As(err, &late) || fmt.Sprint(late.Machines) != "[1 3]" || !strings.Contains(err.Error(), "machines m1, m3:") {
		t.Fatalf("got %v, want machines m1 and m3 not ready", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("took %v for a 200ms timeout", d)
	}
}

// An agent's error ends the wait at once, naming its machine.
func TestStartMachineAgentsError(t *testing.T) {
	m := &fakeMachines{answer: []string{"silent", "error"}}
	t0 := time.Now()
	_, err := StartMachineAgents(context.Background(), m, setupsFor(2), time.Minute)
	if err == nil || !strings.Contains(err.Error(), "machine m1") || !strings.Contains(err.Error(), "no such port") {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("an agent's error took %v to end the wait", d)
	}
}

func TestStartMachineAgentsReady(t *testing.T) {
	m := &fakeMachines{answer: []string{"ready", "ready"}}
	agents, err := StartMachineAgents(context.Background(), m, setupsFor(2), time.Minute)
	if err != nil || len(agents) != 2 {
		t.Fatalf("%d agents, %v", len(agents), err)
	}
}
