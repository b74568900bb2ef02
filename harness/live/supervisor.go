package live

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
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
	"github.com/fabriclab/fabriclab/fib"
	"github.com/fabriclab/fabriclab/harness/liveagent"
	"github.com/fabriclab/fabriclab/harness/lockstep"
	_ "github.com/fabriclab/fabriclab/harness/netns/agent" // the supervisor starts this binary as the agent: its init must run first
	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/wire"
)

func init() {
	if os.Getenv(SupervisorEnv) != "1" {
		return
	}
	os.Unsetenv(SupervisorEnv) // the agent it starts is not a supervisor
	os.Exit(supervise())
}

// SocketPath is the supervisor's control socket: a lab over several machines' on the coordinator
// (ClusterDir) when there is one, else the lab's on this machine.
func SocketPath(name string) string {
	if IsCluster(name) {
		return filepath.Join(ClusterDir(name), "ctl.sock")
	}
	return LocalSocketPath(name)
}

// LocalSocketPath is the control socket of a live lab on this machine.
func LocalSocketPath(name string) string { return filepath.Join(nslink.StateDir(name), "ctl.sock") }

// EventsPath is the lab's fault log: one JSON Event per line.
func EventsPath(name string) string { return filepath.Join(nslink.StateDir(name), "events.jsonl") }

// Request is one control request: inspect; status and down (a lab over several machines); link (A, B, State down|up|set, Fault for set); capture
// (Port "s0:p1", Path; an empty Path stops); locate (Port to capture, on a lab over several machines:
// the machine lab capture streams it from).
type Request struct {
	Op    string        `json:"op"`
	A     string        `json:"a,omitempty"`
	B     string        `json:"b,omitempty"`
	State string        `json:"state,omitempty"`
	Fault *egress.Fault `json:"fault,omitempty"`
	Port  string        `json:"port,omitempty"`
	Path  string        `json:"path,omitempty"`
}

// Reply answers a Request.
type Reply struct {
	Err     string   `json:"err,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	Inspect *Inspect `json:"inspect,omitempty"`
	// Status is a lab over several machines' (status).
	Status *ClusterStatus `json:"status,omitempty"`
	// At is where a port of a lab over several machines is (locate).
	At *PortAt `json:"at,omitempty"`
}

// PortAt is a device's port and the machine that hosts the device, named in Cluster (the file).
type PortAt struct {
	Machine string `json:"machine"`
	Cluster string `json:"cluster"`
	Device  string `json:"device"`
	Port    int    `json:"port"`
}

// Inspect is a live lab's counters now.
type Inspect struct {
	Lab      string  `json:"lab"`
	Dilation float64 `json:"dilation"`
	// Now is the engine time the lab has run (the agent clock divided by the dilation); Uptime the wall
	// time since it started.
	Now     clock.Time            `json:"engine_time_ps"`
	Uptime  float64               `json:"uptime_s"`
	Devices []lockstep.LiveDevice `json:"devices"`
	Events  []Event               `json:"events,omitempty"`
	Hosts   []HostAddr            `json:"hosts"`
	// Machines are a lab over several machines' (which devices each hosts, its clock).
	Machines []MachineState `json:"machines,omitempty"`
}

// HostAddr is a kernel host of the lab: its name (which resolves inside the lab), its IPv4 address and
// the interface that has it.
type HostAddr struct {
	Name      string `json:"name"`
	Address   string `json:"address"`
	Interface string `json:"interface"`
}

// hostAddrs lists the lab's kernel hosts, as kernelHosts set them up.
func hostAddrs(l *lab.Lab) []HostAddr {
	var out []HostAddr
	for _, n := range l.Graph.Hosts {
		ifname := "p0"
		if l.Tables.HostTransit {
			ifname = nslink.KernelIf
		}
		out = append(out, HostAddr{Name: l.Graph.Nodes[n].Name, Address: wire.HostIP(l.Graph.Nodes[n].Index).String(), Interface: ifname})
	}
	return out
}

// Event is a fault applied while the lab ran, with when (wall time, and the lab's engine time).
type Event struct {
	Wall   time.Time  `json:"wall"`
	Engine clock.Time `json:"engine_time_ps"`
	Link   [2]string  `json:"link"`
	State  string     `json:"state"` // down, up, or the impairment set
	Routes string     `json:"routes,omitempty"`
}

// liveAgents answers live requests: the one agent of a lab on this machine (*liveagent.Live), or the
// agents of a lab over several machines (machineAgents), each request going to the device's machine.
type liveAgents interface {
	Request(req lockstep.LiveMsg) (*lockstep.LiveMsg, error)
}

type supervisor struct {
	mu   sync.Mutex
	name string
	l    *lab.Lab
	lv   liveAgents
	dil  float64
	// ma is set for a lab over several machines (cluster.go).
	ma *machineAgents
	// bye is closed after a down request has been answered: the supervisor then exits. Two downs at
	// once may both succeed (the second finds the lab already gone), so it is closed once (byeOnce).
	bye     chan struct{}
	byeOnce sync.Once
	start   time.Time
	faults  map[int]egress.Fault // graph link -> its fault
	fibs    map[int]fib.Table    // engine node -> the table it has now
	events  []Event
}

func supervise() int {
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "%s live: %s\n", time.Now().UTC().Format(time.RFC3339Nano), fmt.Sprintf(format, a...))
	}
	fail := func(err error) int {
		logf("%v", err)
		fmt.Fprintln(os.Stdout, strings.ReplaceAll(err.Error(), "\n", "; ")) // `lab up` reads one line
		return 1
	}
	var cfg Config
	if err := json.NewDecoder(os.Stdin).Decode(&cfg); err != nil {
		return fail(fmt.Errorf("config: %w", err))
	}
	if cfg.Cluster != "" {
		return superviseCluster(cfg, logf, fail)
	}
	l, _, err := Build(cfg)
	if err != nil {
		return fail(err)
	}
	nl, err := nslink.Open(cfg.Name)
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	lv, err := liveagent.StartLive(ctx, l, nl)
	if err != nil {
		return fail(err)
	}
	defer lv.Stop()
	s := &supervisor{name: cfg.Name, l: l, lv: lv, dil: lv.Dilation, start: time.Now(), faults: map[int]egress.Fault{}}
	ln, err := listen(LocalSocketPath(cfg.Name), s)
	if err != nil {
		return fail(err)
	}
	defer ln.Close()
	logf("lab %s live: agent pid %d, dilation %g", cfg.Name, lv.Pid(), lv.Dilation)
	fmt.Fprintln(os.Stdout, "ready")
	os.Stdout.Close()
	select {
	case err := <-lv.Exited():
		logf("agent exited: %v", err)
		return 1
	case <-ctx.Done():
		logf("stopped by signal")
		return 0
	}
}

// listen opens the control socket at path and serves it until it is closed.
func listen(path string, s *supervisor) (net.Listener, error) {
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return ln, nil
}

func (s *supervisor) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	var req Request
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&req); err != nil {
		json.NewEncoder(c).Encode(Reply{Err: "bad request: " + err.Error()})
		return
	}
	var rep Reply
	var err error
	if req.Op == "status" && s.ma != nil {
		// Answered at once, even while a request or a removal holds the lock (machineAgents has its own).
		rep.Status = s.status()
	} else {
		s.mu.Lock()
		rep, err = s.do(req)
		s.mu.Unlock()
	}
	if err != nil {
		rep.Err = err.Error()
	}
	json.NewEncoder(c).Encode(rep)
	if req.Op == "down" && err == nil && s.bye != nil {
		s.byeOnce.Do(func() { close(s.bye) })
	}
}

func (s *supervisor) do(req Request) (Reply, error) {
	if s.ma != nil {
		if rep, err, done := s.doCluster(req); done {
			return rep, err
		}
	}
	switch req.Op {
	case "inspect":
		m, err := s.lv.Request(lockstep.LiveMsg{Op: "inspect"})
		if err != nil {
			return Reply{}, err
		}
		g := s.l.Graph
		idx := map[string]int{}
		for i, n := range g.Nodes {
			idx[n.Name] = i
		}
		for i := range m.Devices {
			d := &m.Devices[i]
			for j := range d.Ports {
				d.Ports[j].Peer = peerName(g, idx[d.Name], d.Ports[j].Port)
			}
		}
		in := &Inspect{Lab: s.name, Dilation: s.dil, Now: clock.Time(float64(m.Now) / s.dil),
			Uptime: time.Since(s.start).Seconds(), Devices: m.Devices, Events: s.events, Hosts: hostAddrs(s.l)}
		if s.ma != nil {
			in.Machines = s.status().Machines
		}
		return Reply{Inspect: in}, nil
	case "link":
		return s.link(req)
	case "capture":
		dev, port, err := s.capturePort(req.Port)
		if err != nil {
			return Reply{}, err
		}
		_, err = s.lv.Request(lockstep.LiveMsg{Op: "capture", Device: s.l.Graph.Nodes[dev].Name, Port: port, Path: req.Path})
		return Reply{}, err
	}
	return Reply{}, fmt.Errorf("unknown op %q", req.Op)
}

// capturePort parses a port to capture: a switch's (an engine's).
func (s *supervisor) capturePort(spec string) (int, int, error) {
	dev, port, err := s.port(spec)
	if err != nil {
		return 0, 0, err
	}
	if !s.engine(dev) {
		return 0, 0, fmt.Errorf("capture %s: capture a switch port (the host's kernel owns its own; run tcpdump there with lab exec)", spec)
	}
	return dev, port, nil
}

// port parses "s0:p1".
func (s *supervisor) port(spec string) (int, int, error) {
	dev, p, ok := strings.Cut(spec, ":")
	if !ok || !strings.HasPrefix(p, "p") {
		return 0, 0, fmt.Errorf("port %q: want DEVICE:pN, e.g. s0:p1", spec)
	}
	n := s.node(dev)
	if n < 0 {
		return 0, 0, fmt.Errorf("port %q: lab %s has no device %q", spec, s.name, dev)
	}
	i, err := strconv.Atoi(p[1:])
	if err != nil || i < 0 || i >= len(s.l.Graph.Nodes[n].Ports) {
		return 0, 0, fmt.Errorf("port %q: %s has ports p0..p%d", spec, dev, len(s.l.Graph.Nodes[n].Ports)-1)
	}
	return n, i, nil
}

func (s *supervisor) node(name string) int {
	for i, n := range s.l.Graph.Nodes {
		if n.Name == name {
			return i
		}
	}
	return -1
}

func (s *supervisor) link(req Request) (Reply, error) {
	g := s.l.Graph
	a, b := s.node(req.A), s.node(req.B)
	if a < 0 || b < 0 {
		return Reply{}, fmt.Errorf("link %s %s: no such device", req.A, req.B)
	}
	var links []int
	for i, lk := range g.Links {
		if lk.A.Node == a && lk.B.Node == b || lk.A.Node == b && lk.B.Node == a {
			links = append(links, i)
		}
	}
	if len(links) == 0 {
		return Reply{}, fmt.Errorf("link %s %s: no cable joins them", req.A, req.B)
	}
	var f egress.Fault
	switch req.State {
	case "down":
		f.Down = true
	case "up":
	case "set":
		if req.Fault == nil {
			return Reply{}, errors.New("link set: give loss=P% and/or delay=T")
		}
		f = *req.Fault
	default:
		return Reply{}, fmt.Errorf("link state %q: want down, up or set", req.State)
	}
	if err := f.Check(); err != nil {
		return Reply{}, err
	}
	for _, li := range links {
		lk := g.Links[li]
		for _, e := range []topo.End{lk.A, lk.B} {
			if !s.engine(e.Node) {
				continue // a kernel host: its switch fails the frames where they arrive
			}
			ff := f
			// The delay is given in the fabric's time, as the spec's link delays: the agent's engines run
			// dilated, so 5us at D=1000 is 5 ms of their time (undilated it added a thousandth of that).
			ff.Delay = clock.Time(float64(f.Delay) * max(s.dil, 1))
			if _, err := s.lv.Request(lockstep.LiveMsg{Op: "fault", Device: g.Nodes[e.Node].Name, Port: e.Port, Fault: &ff}); err != nil {
				return Reply{}, err
			}
		}
		if f.None() {
			delete(s.faults, li)
		} else {
			s.faults[li] = f
		}
	}
	ev := Event{Wall: time.Now(), Link: [2]string{req.A, req.B}, State: f.String()}
	if m, err := s.lv.Request(lockstep.LiveMsg{Op: "inspect"}); err == nil {
		ev.Engine = clock.Time(float64(m.Now) / s.dil)
	}
	var notes []string
	if req.State != "set" {
		switches, relays, err := s.reroute()
		if err != nil {
			return Reply{}, err
		}
		ev.Routes = fmt.Sprintf("ECMP recomputed: %d of %d switches changed tables", switches, len(s.l.Switches))
		if relays > 0 {
			ev.Routes += fmt.Sprintf(" (and %d relay hosts)", relays)
		}
		notes = append(notes, ev.Routes)
	}
	s.events = append(s.events, ev)
	if b, err := json.Marshal(ev); err == nil {
		if f, err := os.OpenFile(EventsPath(s.name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			f.Write(append(b, '\n'))
			f.Close()
		}
	}
	return Reply{Notes: notes}, nil
}

// reroute recomputes the switches' shortest-path ECMP tables without the links that are down and
// installs those that changed. It returns how many switches, and how many relay hosts (server-centric
// fabrics), got a new table.
func (s *supervisor) reroute() (switches, relays int, err error) {
	down := map[int]bool{}
	for li, f := range s.faults {
		if f.Down {
			down[li] = true
		}
	}
	t, err := route.ShortestWith(route.WithoutLinks(s.l.Graph, down), s.l.Tables.HostTransit)
	if err != nil {
		return 0, 0, err
	}
	g := s.l.Graph
	if s.fibs == nil {
		s.fibs = map[int]fib.Table{}
		for _, sd := range s.l.Switches {
			s.fibs[sd.Node] = sd.Config.FIB
		}
		if s.l.Tables.HostTransit {
			for _, n := range g.Hosts {
				if s.fibs[n], err = liveagent.RelayFIB(s.l.Tables.FIB[n], g.Nodes[n].Index, len(g.Nodes[n].Ports)); err != nil {
					return 0, 0, err
				}
			}
		}
	}
	for n := range g.Nodes {
		old, ok := s.fibs[n]
		if !ok {
			continue
		}
		table := t.FIB[n]
		if g.Nodes[n].Kind != topo.Switch {
			if table, err = liveagent.RelayFIB(table, g.Nodes[n].Index, len(g.Nodes[n].Ports)); err != nil {
				return switches, relays, err
			}
		}
		if table.Equal(old) {
			continue
		}
		// A copy of this node's index, so that the supervisor does not keep every node's.
		table = table.Clone()
		if _, err := s.lv.Request(lockstep.LiveMsg{Op: "fib", Device: g.Nodes[n].Name, FIB: table}); err != nil {
			return switches, relays, err
		}
		s.fibs[n] = table
		if g.Nodes[n].Kind == topo.Switch {
			switches++
		} else {
			relays++
		}
	}
	return switches, relays, nil
}

// engine says whether node n runs in the agent: a switch, or a relay host of a server-centric fabric.
func (s *supervisor) engine(n int) bool {
	return s.l.Graph.Nodes[n].Kind == topo.Switch || s.l.Tables.HostTransit
}

// Do sends one request to lab name's supervisor.
func Do(name string, req Request) (*Reply, error) {
	c, err := net.DialTimeout("unix", SocketPath(name), 5*time.Second)
	if err != nil {
		if _, serr := os.Stat(SocketPath(name)); serr != nil {
			return nil, fmt.Errorf("lab %s is not a live lab (no %s): bring it up with `lab up`", name, SocketPath(name))
		}
		return nil, fmt.Errorf("lab %s: supervisor not answering: %w", name, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return nil, err
	}
	var rep Reply
	if err := json.NewDecoder(c).Decode(&rep); err != nil {
		return nil, fmt.Errorf("lab %s: supervisor reply: %w", name, err)
	}
	if rep.Err != "" {
		return &rep, errors.New(rep.Err)
	}
	return &rep, nil
}
