package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/nslink"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/records"
)

// agentProc is one agent process and its control channel.
type agentProc struct {
	cmd     *exec.Cmd // nil for a remote machine's agent
	machine string
	devices []string
	ctl     lockstep.Control
	msgs    chan lockstep.AgentMsg
	exited  chan error // receives Wait's result once
	flows   int
}

func (p *agentProc) name() string {
	if p.cmd == nil {
		return fmt.Sprintf("machine %s (devices %s)", p.machine, strings.Join(p.devices, ","))
	}
	return fmt.Sprintf("agent pid %d (devices %s)", p.cmd.Process.Pid, strings.Join(p.devices, ","))
}

func (p *agentProc) send(m lockstep.AgentMsg) error { return p.ctl.Send(&m) }

var runSeq int

// netnsRun is one run in progress: what Run's steps hand each other.
type netnsRun struct {
	l           *lab.Lab
	opts        RunOptions
	res         RunResult
	dl          *Dilated
	pcaps       map[lockstep.PcapPort]bool
	progress    func(string)
	kernelFlows []lab.FlowPlan
	kernelLead  time.Duration
	nl          *nslink.Lab
	setups      []*lockstep.AgentSetup
	procs       []*agentProc
	cases       chan agentEvent
	epoch       int64
	wall        time.Time
	// coord is the lockstep coordinator (several agents); nil with one.
	coord   *coordination
	kcancel context.CancelFunc
	// lost are the machines lost mid-run (a run over Machines), agreed the last window every agent had
	// reached when the first was lost (lockstep); clockTol bounds their clock offsets.
	lost     []int
	agreed   clock.Time
	clockTol time.Duration
	parts    *plannedSplit // the machines' parts (upMachines)
}

// Run brings l up as a namespace lab, runs its engines in agent processes on real frames, and always
// tears the lab down before returning (also on ctx cancellation; a crash of this process is cleaned by
// `lab down`, which kills the agents the state directory lists). The records are in dilated time.
func Run(ctx context.Context, l *lab.Lab, opts RunOptions) (*records.Log, RunResult, error) {
	why := ""
	if l.Spec.AutoDilation() { // the spec sets none: the smallest D this machine keeps pace at (calibrate.go)
		var err error
		if why, err = chooseDilation(ctx, l, opts); err != nil {
			return nil, RunResult{}, err
		}
	}
	r, err := prepareRun(l, opts)
	r.res.DilationWhy = why
	if err != nil {
		return nil, r.res, err
	}
	switch {
	case opts.Standing != nil && opts.Machines == nil:
		r.nl, r.res.Lab = opts.Standing.nl, opts.Standing.Name()
		if r.nl.MTU != labMTU(l) {
			return nil, r.res, fmt.Errorf("the standing lab %s has MTU %d, this run needs %d", r.res.Lab, r.nl.MTU, labMTU(l))
		}
	case opts.Machines != nil:
		r.nl, err = r.upMachines(ctx)
	default:
		r.nl, err = nslink.Up(ctx, r.res.Lab, l.Graph, nslink.Options{MTU: labMTU(l)})
	}
	if err != nil {
		return nil, r.res, err
	}
	if opts.Standing == nil || opts.Machines != nil {
		defer func() {
			down := nslink.Down
			if opts.Machines != nil {
				down = opts.Machines.Down
			}
			if derr := down(r.res.Lab); derr != nil {
				r.progress("teardown: " + derr.Error())
			}
		}()
	}
	defer func() {
		for _, p := range r.procs {
			p.kill()
		}
		// Wait for every agent to be gone, not only on a standing lab (whose next run binds the same
		// ports, and a dying agent's AF_XDP sockets would refuse that bind, EBUSY): an agent still
		// exiting when the teardown reads the agents file has dropped its environment but not yet its
		// executable, so it reads as a process that is not ours and is reported and left alone.
		for _, p := range r.procs {
			p.waitGone(10 * time.Second)
		}
	}()
	if err := r.startAgents(ctx); err != nil {
		return nil, r.res, err
	}
	kctx, kcancel := context.WithCancel(ctx)
	defer kcancel()
	r.kcancel = kcancel
	kernelDone := r.start(kctx)
	kernelRecs, err := r.wait(ctx, kernelDone)
	if err != nil {
		return nil, r.res, err
	}
	log, err := r.collect(kernelRecs)
	if err != nil {
		return nil, r.res, err
	}
	r.judge(ctx, log)
	if opts.Save != nil {
		if err := opts.Save(log, r.res); err != nil {
			return log, r.res, err
		}
	}
	return log, r.res, nil
}

// prepareRun checks everything that can be refused before a namespace exists and plans the run.
func prepareRun(l *lab.Lab, opts RunOptions) (*netnsRun, error) {
	r := &netnsRun{l: l, opts: opts, res: RunResult{Dilation: l.Spec.EffectiveDilation()}, progress: opts.Progress}
	if r.progress == nil {
		r.progress = func(string) {}
	}
	if err := nslink.CheckRoot(); err != nil {
		return r, err
	}
	if !lockstep.AgentLinked {
		return r, errors.New("netns backend: this binary does not contain the agent; import _ \"github.com/fabriclab/fabriclab/harness/netns/agent\"")
	}
	if err := Preflight(l); err != nil {
		return r, err
	}
	var err error
	if r.dl, err = Dilate(l, r.res.Dilation); err != nil {
		return r, err
	}
	if r.pcaps, err = parsePcap(opts.Pcap, l); err != nil {
		return r, err
	}
	if len(r.pcaps) > 0 && opts.PcapDir == "" {
		return r, errors.New("pcap: a capture directory is needed (PcapDir)")
	}
	r.res.Lab = opts.Name
	if r.res.Lab == "" {
		runSeq++
		r.res.Lab = fmt.Sprintf("r%d-%d", os.Getpid()%100000, runSeq)
		if opts.Machines != nil {
			// The machines may serve other coordinators, whose PIDs may be ours (a container's is 1).
			tok, _ := nslink.NewToken()
			r.res.Lab = "c" + tok[:12]
		}
	}
	if len(r.dl.Kernel) == 0 {
		return r, nil
	}
	if opts.Kernel == nil {
		return r, errors.New("host.transport: kernel-tcp hosts need a kernel-host runner (RunOptions.Kernel, from package kernelhost)")
	}
	r.kernelLead = opts.KernelLead
	if r.kernelLead <= 0 {
		r.kernelLead = time.Second
	}
	// Every flow, NIC or kernel, starts kernelLead late on the agents' clock, so the handshakes happen
	// on a running fabric and a mixed lab keeps its schedule's relative timing.
	shift := clock.Time(r.kernelLead.Nanoseconds()) * clock.Nanosecond
	kernel := map[int]bool{}
	for _, h := range r.dl.Kernel {
		kernel[h.Node] = true
	}
	var nic []lab.FlowPlan
	for _, f := range r.dl.Flows {
		if kernel[f.SrcNode] {
			r.kernelFlows = append(r.kernelFlows, f)
		} else {
			f.At += shift
			nic = append(nic, f)
		}
	}
	r.dl.Flows = nic
	r.dl.End += shift
	return r, nil
}

// startAgents sets the kernel hosts up, splits the devices, starts the agent processes and waits until
// each is ready.
func (r *netnsRun) startAgents(ctx context.Context) error {
	if len(r.dl.Kernel) > 0 {
		if err := r.opts.Kernel.Setup(r.nl, r.dl.Kernel); err != nil {
			return err
		}
	}
	n := r.opts.Agents
	if r.opts.Machines != nil {
		n = r.opts.Machines.Count() // one agent per machine, on the parts upMachines made
	}
	r.setups, r.res.Cut = SplitAgents(r.l, r.dl, r.nl, n, r.pcaps, r.opts.PcapDir, r.parts)
	if len(r.dl.Kernel) > 0 && len(r.setups) > 1 {
		if err := stampRoom(r.nl, r.setups); err != nil {
			return err
		}
	}
	addFaults(r.setups, r.l, r.res.Dilation) // live.go
	rt := r.opts.Realtime
	if rt == 0 {
		rt = DefaultRealtime
	}
	for _, s := range r.setups {
		s.Realtime = max(rt, 0)
		s.MinCatchUpStep = r.opts.MinCatchUpStep
	}
	r.res.Agents = len(r.setups)
	if len(r.setups) > 1 {
		r.coord = newCoordination(r.l, r.dl, r.setups)
		r.coord.kernelPending = len(r.dl.Kernel) > 0
		if r.coord.lock.Lookahead() <= 0 {
			// Agents may run apart only by a link's delay: with none, neither could ever move.
			return fmt.Errorf("--agents %d: a link between two agents has no delay, and agents in lockstep run apart only by the delay of the links between them", r.opts.Agents)
		}
	}
	r.progress(fmt.Sprintf("lab %s up: %d devices in %d agents, dilation %g%s", r.res.Lab, len(r.l.Graph.Nodes),
		len(r.setups), r.res.Dilation, r.coord.describe()))
	if len(r.setups) > 1 {
		r.progress("split: " + r.res.Cut.String())
	}
	for i, s := range r.setups {
		var p *agentProc
		var err error
		if r.opts.Machines != nil {
			p, err = startRemote(ctx, r.opts.Machines, i, s)
		} else {
			p, err = startAgent(r.res.Lab, s)
		}
		if err != nil {
			return err
		}
		r.procs = append(r.procs, p)
	}
	for _, p := range r.procs {
		if _, err := p.expect(ctx, "ready", ReadyTimeout(r.setups...)); err != nil {
			return err
		}
	}
	return nil
}

type kernelOut struct {
	flows []records.Flow
	err   error
}

// start sets the common epoch a little in the future, starts every agent (and, in lockstep, sends the
// first grants) and the kernel hosts' flows; the channel it returns has their records (nil: none).
func (r *netnsRun) start(kctx context.Context) chan kernelOut {
	lead := r.opts.StartLead
	if lead <= 0 {
		lead = 100 * time.Millisecond
	}
	r.epoch = clock.MonotonicNanos() + lead.Nanoseconds()
	for _, p := range r.procs {
		if err := p.send(lockstep.AgentMsg{Type: "start", Epoch: r.epoch, End: r.dl.End}); err != nil {
			r.progress(fmt.Sprintf("%s: start: %v", p.name(), err)) // its exit ends the wait
		}
	}
	if r.coord != nil {
		r.coord.send(r.procs, r.coord.lock.Start())
	}
	r.wall = time.Now()
	r.progress("running")
	if r.opts.OnAgents != nil {
		m := map[int][]string{}
		for _, p := range r.procs {
			if p.cmd != nil {
				m[p.cmd.Process.Pid] = p.devices
			}
		}
		r.opts.OnAgents(m)
	}
	r.cases = mergeMsgs(r.procs)
	if len(r.dl.Kernel) == 0 {
		return nil
	}
	done := make(chan kernelOut, 1)
	go func() {
		fl, err := r.opts.Kernel.Run(kctx, r.nl, r.kernelFlows, r.epoch+r.kernelLead.Nanoseconds(), clock.Time(r.kernelLead.Nanoseconds())*clock.Nanosecond)
		done <- kernelOut{fl, err}
	}()
	return done
}

// collect stops the agents, gathers their records and merges them (with the kernel hosts') into one log.
func (r *netnsRun) collect(kernelRecs []records.Flow) (*records.Log, error) {
	for _, p := range r.procs {
		p.send(lockstep.AgentMsg{Type: "stop"})
	}
	var lost func(int, error) bool
	if r.opts.Machines != nil {
		lost = func(i int, err error) bool { r.machineLost(i, err); return true }
	}
	got, err := collectRecords(r.cases, r.procs, 30*time.Second, r.lost, lost)
	if err != nil {
		return nil, err
	}
	res := &r.res
	log := &records.Log{}
	var fids []lockstep.AgentFidelity
	for _, m := range got {
		if m.Deadlock != nil {
			res.DeadlockWatched = true
			if m.Deadlock.Detected && !res.Deadlock.Detected {
				res.Deadlock = *m.Deadlock
			}
		}
		if m.Log != nil { // nil: a lost machine's
			log.Merge(m.Log)
		}
		if m.Fidelity != nil {
			fids = append(fids, *m.Fidelity)
		}
		res.End = max(res.End, m.Now)
	}
	if c := r.coord; c != nil && c.mon != nil {
		res.DeadlockWatched = true
		res.Deadlock = c.mon.Verdict()
	}
	log.Flows = append(log.Flows, kernelRecs...)
	if len(r.lost) > 0 && r.coord != nil {
		// What was measured up to the last agreed window (records.Log.Until).
		log.Until(r.agreed)
		res.End, res.Agreed = r.agreed, r.agreed
	}
	res.Wall = time.Since(r.wall)
	completed := 0
	for _, f := range log.Flows {
		if f.Completed {
			completed++
		}
	}
	res.AllDone = completed == len(r.l.Flows)
	if res.End >= r.dl.End && !res.AllDone {
		res.TimedOut = true
	}
	res.Monitor = sumFidelity(fids)
	sort.SliceStable(log.Flows, func(i, j int) bool { return log.Flows[i].ID < log.Flows[j].ID })
	return log, nil
}

// judge sets the fidelity verdict: frame timing, stalls, the cross-agent protocol, and the cross-check
// against a schedule-keeping run.
func (r *netnsRun) judge(ctx context.Context, log *records.Log) {
	res := &r.res
	bound := r.opts.FidelityBound
	if bound <= 0 {
		bound = DefaultFidelityBound
	}
	res.Fidelity = Verdict(res.Monitor, bound)
	res.Fidelity = stallVerdict(res.Fidelity, res.Monitor, log, stallBudget(r.dl))
	if len(r.dl.Kernel) == 0 && r.opts.CrossCheck >= 0 && !res.Partial {
		res.Fidelity, res.Twin = crossCheck(ctx, r.l, log, *res, r.opts.CrossCheck)
	}
	r.clusterVerdict(ctx)
	if res.Monitor.KernelFull > 0 {
		log.Violations = append(log.Violations, fmt.Sprintf("netns: the kernel refused %d frames (an agent fell behind reading)", res.Monitor.KernelFull))
	}
	for i, v := range log.Violations {
		log.Violations[i] = paperTimes(v, res.Dilation)
	}
}

// ReadyTimeout is how long agents with setups ss may take to be ready: 30 s, plus 20 ms for every port
// they open (a socket, its rings and, for AF_XDP, its UMEM and program). `lab up` fat-tree k=16 started
// its agent on 5,120 switch ports in 10 s on this 2-core machine under other work (2 ms a port); a
// fixed 30 s failed fat-tree k=12 there.
func ReadyTimeout(ss ...*lockstep.AgentSetup) time.Duration {
	ports := 0
	for _, s := range ss {
		for _, d := range s.Devices {
			ports += len(d.Ports)
		}
	}
	return ReadyTimeoutPorts(ports)
}

// ReadyTimeoutPorts is ReadyTimeout for agents that open ports ports in all.
func ReadyTimeoutPorts(ports int) time.Duration {
	return 30*time.Second + time.Duration(ports)*20*time.Millisecond
}

func startAgent(labName string, s *lockstep.AgentSetup) (*agentProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("agent: cannot find this binary to re-execute: %w", err)
	}
	cmd := exec.Command(exe)
	token, tokenEnv := nslink.ProcessToken(labName)
	cmd.Env = append(os.Environ(), nslink.AgentEnv+"=1", tokenEnv, fmt.Sprintf("%s=%d", nslink.AgentParentEnv, os.Getpid()))
	cmd.Stderr = os.Stderr
	// The agent dies with us even if we are SIGKILLed (no deferred cleanup runs then).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &agentProc{cmd: cmd, ctl: lockstep.NewStreamControl(out, in, in), msgs: make(chan lockstep.AgentMsg, 16), exited: make(chan error, 1), flows: len(s.Flows)}
	for _, d := range s.Devices {
		p.devices = append(p.devices, d.Name)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if err := nslink.RecordProcess(labName, cmd.Process.Pid, token); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	go func() {
		if s.Lockstep && s.Realtime > 0 {
			defer realtimeThread(s.Realtime)()
		}
		for {
			var m lockstep.AgentMsg
			if err := p.ctl.Recv(&m); err != nil {
				if !errors.Is(err, io.EOF) {
					fmt.Fprintf(os.Stderr, "netns: %s: unreadable message: %v\n", p.name(), err)
				}
				close(p.msgs)
				p.exited <- cmd.Wait()
				return
			}
			p.msgs <- m
		}
	}()
	if err := p.send(lockstep.AgentMsg{Type: "setup", Setup: s}); err != nil {
		return p, fmt.Errorf("%s: setup: %w", p.name(), err)
	}
	return p, nil
}

// waitGone waits, up to limit, until the agent process has exited (gone or a zombie: its files,
// sockets among them, closed).
func (p *agentProc) waitGone(limit time.Duration) {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	stat := fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid)
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(stat)
		if err != nil {
			return
		}
		// pid (comm) state ...: the state follows the last ')'.
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return
		}
	}
}

func (p *agentProc) kill() {
	if p.cmd == nil {
		// A machine's agent stops; its server removes the agent with the lab part (Machines.Down, or
		// the connection closing).
		p.send(lockstep.AgentMsg{Type: "stop"})
		return
	}
	if p.cmd.ProcessState == nil {
		p.ctl.Close()
		p.cmd.Process.Kill()
	}
}

// addFaults gives every agent the lab's planned faults, dilated.
func addFaults(setups []*lockstep.AgentSetup, l *lab.Lab, d float64) {
	for _, p := range l.Faults {
		ends := l.FaultEnds(p)
		f := p.Fault
		f.Delay = clock.Time(float64(f.Delay) * d)
		for i, s := range setups {
			s.Faults = append(s.Faults, lockstep.AgentFault{At: clock.Time(float64(p.At) * d), Name: p.Name,
				Ends: [2][2]int{{ends[0].Node, ends[0].Port}, {ends[1].Node, ends[1].Port}}, Fault: f, FIB: p.FIB, Log: i == 0})
		}
	}
}
