package live

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/harness/cluster"
	"github.com/fabriclab/fabriclab/harness/liveagent"
	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// A live lab over several machines (`lab up SPEC --cluster FILE`). The machine `lab up` runs on
// coordinates and makes nothing itself: a supervisor process there (detached, as a one-machine live
// lab's) connects to every machine's agent server, has each make its share (namespaces, veths inside
// the machine, VXLAN links to the others, its kernel hosts) and run an agent for its switches, and then
// holds those connections for as long as the lab is up. An agent server removes what a connection made
// when the connection ends, so the lab cannot outlive its supervisor on any machine: a supervisor
// killed, or the coordinator's network gone, leaves nothing behind. The supervisor answers the live
// commands on a Unix socket in ClusterDir, sending each request to the machine of the device it names;
// `lab exec` and `lab capture` go straight to the device's machine over their own authenticated
// connections (the supervisor only says where a port to capture is: locate).
//
// Time: the agents run free, as a one-machine live lab's agent does (no lockstep, no end). Each starts
// at one CLOCK_REALTIME epoch read on its own clock; a frame between machines crosses a VXLAN link and
// is taken when it is read, after the delay its sender applied, so a link between machines is the
// spec's dilated delay plus the underlay's transit. Clock offsets only shift the machines' engine time
// origins against each other (nothing compares them), so they are measured and recorded (lab status,
// lab inspect --json), refused only above the cluster file's clock_bound when it sets one.

// ClusterDir is the coordinator's record of a live lab over several machines: its config, supervisor
// and control socket. The name "_cluster" is no lab's, so lab status and lab down --all pass it by, and
// an agent server on the same machine keeps its share in the lab's own directory, apart.
func ClusterDir(name string) string { return filepath.Join(nslink.StateRoot, "_cluster", name) }

// IsCluster says whether name is a live lab over several machines coordinated from here.
func IsCluster(name string) bool {
	if nslink.ValidateName(name) != nil {
		return false
	}
	fi, err := os.Stat(ClusterDir(name))
	return err == nil && fi.IsDir()
}

// ClusterLabs lists the live labs over several machines coordinated from here.
func ClusterLabs() []string {
	ents, _ := os.ReadDir(filepath.Join(nslink.StateRoot, "_cluster"))
	var out []string
	for _, e := range ents {
		if e.IsDir() && nslink.ValidateName(e.Name()) == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// MachineState is one machine of a live lab over several machines.
type MachineState struct {
	Name     string `json:"name"`
	Control  string `json:"control"`
	Underlay string `json:"underlay"`
	// Devices are the lab's devices this machine hosts (switches and hosts).
	Devices []string `json:"devices"`
	// Clock is its offset from the coordinator's clock, measured at bring-up and every 2 s since
	// (the heartbeat that finds a lost machine).
	Clock     cluster.Offset `json:"clock"`
	ClockLast cluster.Offset `json:"clock_last"`
	Lost      string         `json:"lost,omitempty"`
}

// ClusterStatus is what `lab status` shows of a live lab over several machines.
type ClusterStatus struct {
	Lab      string         `json:"lab"`
	Family   string         `json:"family"`
	Cluster  string         `json:"cluster"` // the cluster file
	State    string         `json:"state"`
	Links    int            `json:"links"`
	VXLAN    int            `json:"vxlan_links"` // links between machines
	Uptime   float64        `json:"uptime_s"`
	Machines []MachineState `json:"machines"`
}

// upCluster checks everything it can before anything is made (the spec, the name, the cluster file and
// its secret, that the fabric splits over that many machines), then starts the supervisor, which
// connects, checks the machines (underlay MTU, clocks against clock_bound) and brings the lab up.
func upCluster(ctx context.Context, cfg Config, progress func(string)) (*Info, error) {
	l, notes, err := buildNamed(&cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Cluster, err = filepath.Abs(cfg.Cluster); err != nil {
		return nil, err
	}
	f, err := cluster.Load(cfg.Cluster)
	if err != nil {
		return nil, err
	}
	if _, err := cluster.ReadSecret(f.SecretPath()); err != nil {
		return nil, err
	}
	info := &Info{Name: cfg.Name, Lab: l, Notes: notes, Dilation: l.Spec.EffectiveDilation(), MTU: netns.LabMTU(l)}
	if _, _, err := liveagent.LiveParts(l, cfg.Name, info.MTU, len(f.Machines)); err != nil {
		return nil, fmt.Errorf("--cluster %s: %w", cfg.Cluster, err)
	}
	if IsCluster(cfg.Name) {
		return nil, fmt.Errorf("lab %s is already up over machines from here (lab status; lab down %s)", cfg.Name, cfg.Name)
	}
	dir := ClusterDir(cfg.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	progress(fmt.Sprintf("%d machines", len(f.Machines)))
	rec := func(pid int, token string) error {
		return os.WriteFile(filepath.Join(dir, "supervisor"), fmt.Appendf(nil, "%d\n%s\n", pid, token), 0o600)
	}
	if err := startSupervisor(ctx, cfg, dir, rec); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return info, nil
}

// superviseCluster is the supervisor of a live lab over several machines: it brings the lab up, answers
// the live commands, and removes the lab everywhere on SIGTERM, on a down request, or (from the other
// machines) when one is lost.
func superviseCluster(cfg Config, logf func(string, ...any), fail func(error) int) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	l, _, err := Build(cfg)
	if err != nil {
		return fail(err)
	}
	ma, err := upMachines(ctx, cfg, l, logf)
	if err != nil {
		return fail(err)
	}
	s := &supervisor{name: cfg.Name, l: l, lv: ma, dil: l.Spec.EffectiveDilation(), ma: ma, start: time.Now(),
		faults: map[int]egress.Fault{}, bye: make(chan struct{})}
	ln, err := listen(filepath.Join(ClusterDir(cfg.Name), "ctl.sock"), s)
	if err != nil {
		ma.c.Down(cfg.Name)
		return fail(err)
	}
	defer ln.Close()
	logf("lab %s live over %d machines, dilation %g", cfg.Name, ma.c.Count(), s.dil)
	fmt.Fprintln(os.Stdout, "ready")
	os.Stdout.Close()
	go ma.heartbeat(ctx)
	for {
		select {
		case i := <-ma.lostCh:
			logf("machine %s lost: %s", ma.c.Name(i), ma.state[i].Lost)
			s.mu.Lock()
			ma.removeRest(cfg.Name, i, logf)
			s.mu.Unlock()
		case <-s.bye:
			logf("down: removed from every machine")
			return 0
		case <-ctx.Done():
			logf("stopped by signal: removing the lab from every machine")
			s.mu.Lock()
			if err := ma.c.Down(cfg.Name); err != nil {
				logf("down: %v", err)
			}
			s.mu.Unlock()
			return 0
		}
	}
}

// machineAgents are the agents of a live lab over several machines; it implements liveAgents.
type machineAgents struct {
	c       *cluster.Cluster
	cfg     Config
	g       *topo.Graph
	part    map[int]int    // node -> machine
	node    map[string]int // device name -> node
	replies []chan lockstep.AgentMsg
	mu      sync.Mutex // state
	state   []MachineState
	lostCh  chan int
	failed  string // set once a machine was lost and the others' shares removed
}

// upMachines connects to the machines, checks them, makes each one's share and starts its agent; on
// any error nothing is left on any machine (the connections close, and each server removes its share).
func upMachines(ctx context.Context, cfg Config, l *lab.Lab, logf func(string, ...any)) (*machineAgents, error) {
	f, err := cluster.Load(cfg.Cluster)
	if err != nil {
		return nil, err
	}
	c, err := cluster.Connect(ctx, f)
	if err != nil {
		return nil, err
	}
	mtu := netns.LabMTU(l)
	// Nothing to keep in step: the clocks are recorded, refused only past clock_bound (Check uses it).
	if err := c.Check(mtu, time.Hour); err != nil {
		c.Close()
		return nil, err
	}
	setups, part, err := liveagent.LiveParts(l, cfg.Name, mtu, c.Count())
	if err != nil {
		c.Close()
		return nil, err
	}
	c.Live = &cluster.LiveHosts{Transit: l.Tables.HostTransit, CC: l.Spec.Host.CC, ECN: l.Spec.Switch.ECN.ECNEnabled()}
	ma := &machineAgents{c: c, cfg: cfg, g: l.Graph, part: part, node: map[string]int{}, lostCh: make(chan int, c.Count())}
	for n, nd := range l.Graph.Nodes {
		ma.node[nd.Name] = n
	}
	ma.state = make([]MachineState, c.Count())
	for i := range ma.state {
		r := c.Remote(i)
		ma.state[i] = MachineState{Name: r.Machine.Name, Control: r.Machine.Control, Underlay: r.Hello.Underlay,
			Clock: c.Offsets()[i], ClockLast: c.Offsets()[i]}
		ma.replies = append(ma.replies, make(chan lockstep.AgentMsg, 4))
	}
	for n, nd := range l.Graph.Nodes {
		ma.state[part[n]].Devices = append(ma.state[part[n]].Devices, nd.Name)
	}
	if err := c.Up(ctx, cfg.Name, l.Graph, mtu, part); err != nil {
		c.Close()
		return nil, err
	}
	agents, err := startAgents(ctx, c, setups, netns.MachineReadyTimeout)
	if err != nil {
		downAfter(c, cfg.Name, err)
		return nil, err
	}
	for i, st := range ma.state {
		logf("machine %s: %d devices, clock %v ± %v", st.Name, len(st.Devices), time.Duration(st.Clock.Offset), time.Duration(st.Clock.Uncertainty))
		go ma.read(i, agents[i])
	}
	return ma, nil
}

// startAgents sets every machine's agent up, waits until all are ready (at most timeout), and starts
// them at one epoch.
func startAgents(ctx context.Context, m netns.Machines, setups []*lockstep.AgentSetup, timeout time.Duration) ([]*netns.MachineAgent, error) {
	agents, err := netns.StartMachineAgents(ctx, m, setups, timeout)
	if err != nil {
		return nil, err
	}
	// Far enough ahead for every start message to arrive; each server reads it on its own clock.
	epoch := clock.MonotonicNanos() + (200 * time.Millisecond).Nanoseconds()
	for i, a := range agents {
		if err := a.Send(&lockstep.AgentMsg{Type: "start", Epoch: epoch, End: liveagent.LiveEnd}); err != nil {
			return nil, fmt.Errorf("machine %s: start: %w", m.Name(i), err)
		}
	}
	return agents, nil
}

// downAfter removes lab name from every machine after err: the connections of machines whose agents
// never got ready close first (their servers remove their parts when they end; one that does not
// answer would hold Down for its minute), then the others are asked.
func downAfter(c *cluster.Cluster, name string, err error) {
	var late *netns.NotReadyError
	if errors.As(err, &late) {
		for _, i := range late.Machines {
			r := c.Remote(i)
			r.Close()
			<-r.Done()
		}
	}
	c.Down(name)
}

// read passes machine i's live replies on; the connection's end is the machine lost.
func (ma *machineAgents) read(i int, a *netns.MachineAgent) {
	for m := range a.Msgs() {
		if m.Type == "live" || m.Type == "error" {
			select {
			case ma.replies[i] <- m:
			default: // a reply nobody waits for any more (its request timed out)
			}
		}
	}
	ma.lose(i, a.Wait())
}

// heartbeat probes every machine's clock every 2 s: the probe that gets no answer within 5 s finds a
// machine lost whose connection has not (yet) failed, and the answers keep the clock record current.
func (ma *machineAgents) heartbeat(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i := range ma.state {
			if ma.isLost(i) {
				continue
			}
			o, err := ma.c.Remote(i).MeasureClock(ctx, 1)
			if err != nil {
				if ctx.Err() == nil {
					ma.lose(i, err)
				}
				continue
			}
			ma.mu.Lock()
			ma.state[i].ClockLast = o
			ma.mu.Unlock()
		}
	}
}

func (ma *machineAgents) isLost(i int) bool {
	ma.mu.Lock()
	defer ma.mu.Unlock()
	return ma.state[i].Lost != "" || ma.failed != ""
}

func (ma *machineAgents) lose(i int, err error) {
	ma.mu.Lock()
	defer ma.mu.Unlock()
	if ma.state[i].Lost != "" || ma.failed != "" {
		return
	}
	ma.state[i].Lost = fmt.Sprintf("%s: %v", time.Now().UTC().Format(time.RFC3339), err)
	ma.lostCh <- i
}

// removeRest removes the lab from every machine but lost one i: a fabric with a part missing is not
// the lab that was asked for, and its shares would be orphans. The supervisor stays, so that lab status
// tells what happened until lab down.
func (ma *machineAgents) removeRest(name string, lost int, logf func(string, ...any)) {
	ma.mu.Lock()
	if ma.failed != "" {
		ma.mu.Unlock()
		return
	}
	// From here the other machines' connections end by our doing: no more machines lost.
	ma.failed = fmt.Sprintf("machine %s lost (%s); removing the lab from the others", ma.c.Name(lost), ma.state[lost].Lost)
	ma.mu.Unlock()
	r := ma.c.Remote(lost)
	r.Close()
	<-r.Done()
	var others []string
	for i := range ma.state {
		if i != lost {
			others = append(others, ma.c.Name(i))
		}
	}
	err := ma.c.Down(name)
	ma.mu.Lock()
	defer ma.mu.Unlock()
	ma.failed = fmt.Sprintf("machine %s lost (%s); %s; %s removes its own part once it finds the coordinator gone (%v without a heartbeat)",
		ma.c.Name(lost), ma.state[lost].Lost, removedFrom(others, err), ma.c.Name(lost), cluster.LostAfter)
	logf("%s", ma.failed)
}

// removedFrom says what removing the lab from the machines that were not lost did.
func removedFrom(others []string, err error) string {
	switch {
	case len(others) == 0:
		return "no other machine held a part of it"
	case err != nil:
		return fmt.Sprintf("removing it from %s failed: %v", strings.Join(others, ", "), err)
	}
	return "the lab was removed from " + strings.Join(others, ", ")
}

// Request implements liveAgents: inspect asks every machine and merges their devices; anything else
// goes to the machine of the device it names.
func (ma *machineAgents) Request(req lockstep.LiveMsg) (*lockstep.LiveMsg, error) {
	if err := ma.failure(); err != nil {
		return nil, err
	}
	if req.Op != "inspect" {
		n, ok := ma.node[req.Device]
		if !ok {
			return nil, fmt.Errorf("no device %q", req.Device)
		}
		return ma.ask(ma.part[n], req)
	}
	var all *lockstep.LiveMsg
	for i := range ma.state {
		m, err := ma.ask(i, req)
		if err != nil {
			return nil, err
		}
		if all == nil {
			all = m
		} else {
			all.Devices = append(all.Devices, m.Devices...)
		}
	}
	return all, nil
}

func (ma *machineAgents) failure() error {
	ma.mu.Lock()
	defer ma.mu.Unlock()
	if ma.failed != "" {
		return fmt.Errorf("lab %s is down: %s; lab down %s removes the record", ma.cfg.Name, ma.failed, ma.cfg.Name)
	}
	return nil
}

// ask sends one live request to machine i's agent and waits for its reply.
func (ma *machineAgents) ask(i int, req lockstep.LiveMsg) (*lockstep.LiveMsg, error) {
	name := ma.c.Name(i)
	for len(ma.replies[i]) > 0 { // a late reply to a request that timed out
		<-ma.replies[i]
	}
	if err := ma.c.Remote(i).Send(&lockstep.AgentMsg{Type: "live", Live: &req}); err != nil {
		return nil, fmt.Errorf("machine %s: %w", name, err)
	}
	select {
	case m := <-ma.replies[i]:
		if m.Type == "error" {
			return nil, fmt.Errorf("machine %s: %s", name, m.Err)
		}
		if m.Live == nil {
			return nil, fmt.Errorf("machine %s: live reply without a body", name)
		}
		if m.Live.Err != "" {
			return m.Live, fmt.Errorf("machine %s: %s", name, m.Live.Err)
		}
		return m.Live, nil
	case <-time.After(10 * time.Second):
		return nil, fmt.Errorf("machine %s: no reply to %s within 10 s", name, req.Op)
	}
}

// status is the lab's ClusterStatus now.
func (s *supervisor) status() *ClusterStatus {
	ma := s.ma
	ma.mu.Lock()
	defer ma.mu.Unlock()
	st := &ClusterStatus{Lab: s.name, Family: s.l.Graph.Family, Cluster: ma.cfg.Cluster, State: "up (live)",
		Links: len(s.l.Graph.Links), Uptime: time.Since(s.start).Seconds()}
	if ma.failed != "" {
		st.State = "down: " + ma.failed
	}
	for _, lk := range s.l.Graph.Links {
		if ma.part[lk.A.Node] != ma.part[lk.B.Node] {
			st.VXLAN++
		}
	}
	st.Machines = append(st.Machines, ma.state...)
	return st
}

// doCluster answers the requests that differ for a lab over several machines; done is false for those
// the one-machine code answers (through machineAgents).
func (s *supervisor) doCluster(req Request) (rep Reply, err error, done bool) {
	switch req.Op {
	case "status":
		return Reply{Status: s.status()}, nil, true
	case "down":
		var notes []string
		ma := s.ma
		ma.mu.Lock()
		up := ma.failed == ""
		if up {
			ma.failed = "brought down" // from here a lost connection is no machine lost
		}
		ma.mu.Unlock()
		if up {
			err = ma.c.Down(s.name)
			for _, m := range ma.state {
				notes = append(notes, fmt.Sprintf("lab %s down on %s", s.name, m.Name))
			}
		} else {
			// Already down where the supervisor could take it down: say what became of each machine,
			// not "down" for a part a lost machine may still hold.
			ma.mu.Lock()
			notes = append(notes, fmt.Sprintf("lab %s was already down: %s", s.name, ma.failed))
			ma.mu.Unlock()
		}
		return Reply{Notes: notes}, err, true
	case "locate":
		dev, port, err := s.capturePort(req.Port)
		if err == nil {
			err = s.ma.failure()
		}
		if err != nil {
			return Reply{}, err, true
		}
		name := s.l.Graph.Nodes[dev].Name
		return Reply{At: &PortAt{Machine: s.ma.c.Name(s.ma.part[dev]), Cluster: s.ma.cfg.Cluster, Device: name, Port: port}}, nil, true
	case "capture":
		// lab capture streams from the port's machine itself (locate, then cluster.Remote.StartCapture).
		return Reply{}, errors.New("capture: on a lab over several machines lab capture asks the port's machine; the supervisor does not"), true
	}
	return Reply{}, nil, false
}

// StopCluster ends lab name's supervisor on this machine if it still runs (SIGTERM, then SIGKILL after
// 30 s), verified as ours by the token in its environment, and removes the coordinator's record. The
// supervisor removes the lab from every machine as it exits; those it could not reach removed theirs
// when its connection ended.
func StopCluster(name string) error {
	dir := ClusterDir(name)
	b, err := os.ReadFile(filepath.Join(dir, "supervisor"))
	if err == nil {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		pid, _ := strconv.Atoi(lines[0])
		// The record holds the token, the environment TokenEnv=token (nslink.ProcessToken).
		if len(lines) == 2 && pid > 0 && nslink.HasToken(pid, lines[1]) {
			syscall.Kill(pid, syscall.SIGTERM)
			for t := 0; t < 300 && nslink.HasToken(pid, lines[1]); t++ {
				time.Sleep(100 * time.Millisecond)
			}
			if nslink.HasToken(pid, lines[1]) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	return os.RemoveAll(dir)
}
