package netns

import (
	"context"
	"time"

	"github.com/fabriclab/fabriclab/harness/lockstep"
)

// LocalAgent is an agent process on this machine run for someone else: the cluster package's agent
// server starts one per lab part and relays its protocol to a coordinator on another machine.
type LocalAgent struct{ p *agentProc }

// StartLocalAgent starts an agent process for lab (recorded in the lab's state directory, so Down kills
// it) and sends it s.
func StartLocalAgent(lab string, s *lockstep.AgentSetup) (*LocalAgent, error) {
	p, err := startAgent(lab, s)
	if err != nil {
		if p != nil {
			p.kill()
		}
		return nil, err
	}
	return &LocalAgent{p}, nil
}

// Send writes one message to the agent.
func (a *LocalAgent) Send(m *lockstep.AgentMsg) error { return a.p.ctl.Send(m) }

// Msgs are the agent's messages; the channel closes when the agent's output ends.
func (a *LocalAgent) Msgs() <-chan lockstep.AgentMsg { return a.p.msgs }

// Wait returns how the process ended, once its output has ended.
func (a *LocalAgent) Wait() error { return <-a.p.exited }

// Kill ends the process (if still running).
func (a *LocalAgent) Kill() { a.p.kill() }

// Name names the process in messages.
func (a *LocalAgent) Name() string { return a.p.name() }

// Pid is the agent's process ID.
func (a *LocalAgent) Pid() int { return a.p.cmd.Process.Pid }

// Expect waits for a message of type typ from the agent (before anything else reads its messages).
func (a *LocalAgent) Expect(ctx context.Context, typ string, timeout time.Duration) (lockstep.AgentMsg, error) {
	return a.p.expect(ctx, typ, timeout)
}
