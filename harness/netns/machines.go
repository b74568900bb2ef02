package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/nslink"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// Machines carries a run over several machines, one agent each (package cluster implements it over
// the agent servers' control channels). The backend plans the run as for several local agents, then
// asks the machines to make their parts and start their agents; each agent's Control is then driven
// exactly as a local agent's pipes are.
type Machines interface {
	// Count is how many machines there are.
	Count() int
	// Name is machine i's name.
	Name(i int) string
	// Check refuses, before anything is made, a run the machines cannot carry: links of MTU mtu
	// inside VXLAN on each underlay, and every machine's clock within tolerance of the coordinator's.
	Check(mtu int, tolerance time.Duration) error
	// Up makes each machine's part of lab name: machine agentOf[node] hosts node; links between
	// machines become VXLAN.
	Up(ctx context.Context, name string, g *topo.Graph, mtu int, agentOf map[int]int) error
	// Agent starts machine i's agent with s; the Control carries its protocol, and a lost machine is an
	// error from Recv.
	Agent(ctx context.Context, i int, s *lockstep.AgentSetup) (lockstep.Control, error)
	// Recheck measures the clocks again (at the end of a run): an error says which drifted past tolerance.
	Recheck(ctx context.Context, tolerance time.Duration) error
	// Down removes every machine's part of lab name.
	Down(name string) error
	// Report is what run.json records of the machines (their clock offsets).
	Report() any
}

// ClockTolerance is how far a machine's clock may be from the coordinator's for a run. The agents
// start at one CLOCK_REALTIME epoch, each read on its own clock, so an offset t shifts that machine's
// whole schedule by t against the others'. In lockstep that distorts nothing by itself (every frame
// between machines carries its due time in engine time and is taken then), until a frame from the
// lagging machine arrives after it was due: when t plus the frame's transit exceeds the link's dilated
// delay. So the tolerance is half the smallest dilated delay of a link between machines (the lockstep
// lookahead), leaving the other half for transit; a frame late all the same is counted by lockstep and
// makes the run unfaithful. Links of no delay leave a tenth of a frame time (the largest data frame on
// the fastest such link): what an offset may cost where nothing absorbs it.
func ClockTolerance(frameBytes int, g *topo.Graph, delay []clock.Time, agentOf map[int]int, d float64) time.Duration {
	fastest, lookahead := 0.0, clock.Time(-1)
	for li, l := range g.Links {
		a, okA := agentOf[l.A.Node]
		b, okB := agentOf[l.B.Node]
		if !okA || !okB || a == b {
			continue
		}
		fastest = max(fastest, l.RateBps/d)
		if lookahead < 0 || delay[li] < lookahead {
			lookahead = delay[li]
		}
	}
	switch {
	case fastest == 0:
		return time.Hour // no link between machines: nothing to keep in step
	case lookahead > 0:
		return lookahead.Duration() / 2
	}
	return time.Duration(0.1 * float64(frameBytes*8) / fastest * 1e9)
}

// upMachines plans the split (the partition SplitAgents then uses, one part per machine), checks the
// machines can carry it and makes their parts. The returned Lab names the lab (its namespaces' paths
// are the same on every machine); it has no state here.
func (r *netnsRun) upMachines(ctx context.Context) (*nslink.Lab, error) {
	m := r.opts.Machines
	if len(r.dl.Kernel) > 0 {
		return nil, errors.New("host.transport: kernel-tcp hosts cannot run over several machines (their sockets are opened by the coordinator's process); use NIC hosts")
	}
	n := m.Count()
	agentOf, cut := TrafficParts(r.l, r.dl, n)
	r.parts = &plannedSplit{part: agentOf, cut: cut} // SplitAgents deals the devices to these parts
	used := map[int]bool{}
	for _, a := range agentOf {
		used[a] = true
	}
	if len(used) < n {
		return nil, fmt.Errorf("the fabric splits into %d connected parts, fewer than the cluster's %d machines: list fewer machines", len(used), n)
	}
	mtu := labMTU(r.l)
	r.clockTol = ClockTolerance(DataFrameBytes(r.l), r.l.Graph, r.dl.LinkDelay, agentOf, r.res.Dilation)
	if err := m.Check(mtu, r.clockTol); err != nil {
		return nil, err
	}
	if err := m.Up(ctx, r.res.Lab, r.l.Graph, mtu, agentOf); err != nil {
		return nil, err
	}
	return &nslink.Lab{Name: r.res.Lab, Graph: r.l.Graph, MTU: mtu}, nil
}

// plannedSplit is a split made before SplitAgents runs: device -> agent, and its report.
type plannedSplit struct {
	part map[int]int
	cut  CutReport
}

// startRemote starts machine i's agent and wraps its Control as an agent process without a PID.
func startRemote(ctx context.Context, m Machines, i int, s *lockstep.AgentSetup) (*agentProc, error) {
	ctl, err := m.Agent(ctx, i, s)
	if err != nil {
		return nil, err
	}
	p := &agentProc{ctl: ctl, machine: m.Name(i), msgs: make(chan lockstep.AgentMsg, 16), exited: make(chan error, 1), flows: len(s.Flows)}
	for _, d := range s.Devices {
		p.devices = append(p.devices, d.Name)
	}
	go func() {
		for {
			var m lockstep.AgentMsg
			if err := ctl.Recv(&m); err != nil {
				close(p.msgs)
				if errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "agent") {
					err = fmt.Errorf("connection closed")
				}
				p.exited <- err
				return
			}
			p.msgs <- m
		}
	}()
	return p, nil
}

// machineLost ends a run over several machines when one is lost mid-run: the others stop and hand over
// what they recorded, and the result is marked partial.
func (r *netnsRun) machineLost(i int, err error) {
	if r.coord != nil && len(r.lost) == 0 {
		// The last window every agent agreed on: the slowest clock any had reported reaching. Past it
		// the others may have run on without the lost machine's frames (collect keeps only this much).
		r.agreed = r.coord.lock.Slowest()
	}
	if !slices.Contains(r.lost, i) {
		r.lost = append(r.lost, i)
		r.res.Partial = true
		r.res.Lost = append(r.res.Lost, fmt.Sprintf("%s: %v", r.procs[i].name(), err))
		r.progress(fmt.Sprintf("machine lost: %s: %v; stopping the others for partial results", r.procs[i].name(), err))
	}
}

// clusterVerdict makes a run over machines unfaithful when one was lost or a clock drifted.
func (r *netnsRun) clusterVerdict(ctx context.Context) {
	if r.opts.Machines == nil {
		return
	}
	res := &r.res
	defer func() { res.Machines = r.opts.Machines.Report() }()
	if len(res.Lost) > 0 {
		res.Fidelity.Faithful = false
		res.Fidelity.Reason = fmt.Sprintf("partial: lost %s; the other machines' records end where they were stopped; %s",
			strings.Join(res.Lost, "; "), res.Fidelity.Reason)
		return
	}
	if err := r.opts.Machines.Recheck(ctx, r.clockTol); err != nil {
		res.Fidelity.Faithful = false
		res.Fidelity.Reason = fmt.Sprintf("clocks: %v; %s", err, res.Fidelity.Reason)
	}
}

// MachineReadyTimeout bounds the wait for every machine's agent to be ready: twice the 30 s a run
// gives each of its agents in turn, since here every machine's agent sets up at once, and on a loaded
// machine (containers sharing cores) a share's sockets and engines take a while.
const MachineReadyTimeout = 60 * time.Second

// MachineAgent is one machine's agent started by StartMachineAgents, driven as the backend drives a
// remote agent of a run (startRemote): its messages in order, then why its connection ended.
type MachineAgent struct{ p *agentProc }

// Send writes one message to the agent.
func (a *MachineAgent) Send(m *lockstep.AgentMsg) error { return a.p.ctl.Send(m) }

// Msgs are the agent's messages; the channel closes when the machine's connection has ended.
func (a *MachineAgent) Msgs() <-chan lockstep.AgentMsg { return a.p.msgs }

// Wait returns why the connection ended, once Msgs has closed.
func (a *MachineAgent) Wait() error { return <-a.p.exited }

// NotReadyError names the machines whose agents were not ready in time.
type NotReadyError struct {
	Machines []int    // their indices
	Names    []string // and names
	Timeout  time.Duration
}

func (e *NotReadyError) Error() string {
	if len(e.Names) == 1 {
		return fmt.Sprintf("machine %s: its agent was not ready within %v", e.Names[0], e.Timeout)
	}
	return fmt.Sprintf("machines %s: their agents were not ready within %v", strings.Join(e.Names, ", "), e.Timeout)
}

// StartMachineAgents sets machine i's agent up with setups[i], for every machine at once, and waits
// until every one is ready, for at most timeout: the machines whose agents are not ready by then are
// named in a *NotReadyError. An agent's error, or a machine's connection ending, is an error at once.
// On an error the caller removes what the machines made (Machines.Down; a machine that does not answer
// removes its part when its connection is closed).
func StartMachineAgents(ctx context.Context, m Machines, setups []*lockstep.AgentSetup, timeout time.Duration) ([]*MachineAgent, error) {
	procs := make([]*agentProc, len(setups))
	for i, s := range setups {
		p, err := startRemote(ctx, m, i, s)
		if err != nil {
			return nil, err
		}
		procs[i] = p
	}
	// One deadline for all; a machine that failed cancels the wait for the others.
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = p.expect(wctx, "ready", 2*timeout) // wctx's deadline comes first
			if errs[i] != nil && !errors.Is(errs[i], context.DeadlineExceeded) {
				cancel()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	late := &NotReadyError{Timeout: timeout}
	for i, err := range errs {
		switch {
		case err == nil, errors.Is(err, context.Canceled):
		case errors.Is(err, context.DeadlineExceeded):
			late.Machines = append(late.Machines, i)
			late.Names = append(late.Names, m.Name(i))
		default:
			return nil, err
		}
	}
	if len(late.Machines) > 0 {
		return nil, late
	}
	agents := make([]*MachineAgent, len(procs))
	for i, p := range procs {
		agents[i] = &MachineAgent{p}
	}
	return agents, nil
}
