package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/nslink"

	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// Server is one machine's agent server (`lab agent serve`): it accepts coordinators that prove they
// hold the secret, makes the parts of labs they ask for and runs their agents. It touches only what it
// made (netns state files, as `lab up` does) and removes a lab when the connection that made it ends.
type Server struct {
	Secret []byte
	Name   string // this machine's name in hello (default: the host name)
	// Underlay is the underlay's IPv4 address (the VXLAN links' local end), or "auto": the namespace's
	// one non-loopback address at the time a coordinator connects. Either way the interface holding it
	// is looked up again for each coordinator and each lab, not once at the start: a network
	// disconnected and connected again (docker network disconnect/connect) comes back as another
	// interface (eth1 for eth0), and with auto possibly another address.
	Underlay string
	// ClockOffset is added to every CLOCK_REALTIME reading the server makes (clock probes and the start
	// epoch): a test's way to give one machine a clock that is off. Zero outside tests.
	ClockOffset time.Duration
	// Log receives one line per connection event (default: standard error).
	Log func(string)
	// HostSetup sets up a live lab's kernel hosts among nodes, and Cleanup removes what a live lab keeps
	// outside its namespaces (hosts files): harness/live's, given by the command (live imports this
	// package). Without HostSetup the server refuses live labs.
	HostSetup func(nl *nslink.Lab, g *topo.Graph, nodes []int, h LiveHosts) error
	Cleanup   func(lab string)

	mu       sync.Mutex
	labs     map[string]uint64 // labs a live connection made, each with its generation (gen when made)
	gen      uint64
	execs    map[string]map[*execProc]bool // the commands lab exec runs in each lab, ended with it
	owners   map[string]*session           // labs a connection made -> that connection (capture.go)
	captures map[string]bool               // ports being captured, "lab/device:pN" (capture.go)
	capSeq   int
	liveID   atomic.Uint64 // the server's own live requests (capture.go)
}

func (s *Server) logf(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if s.Log != nil {
		s.Log(msg)
		return
	}
	fmt.Fprintln(os.Stderr, "lab agent:", msg)
}

func (s *Server) now() int64 { return realNow() + int64(s.ClockOffset) }

// underlay is the underlay as it is now: its address, the interface holding it and that interface's MTU.
type underlay struct {
	addr, ifName string
	mtu          int
}

func (s *Server) underlay() (underlay, error) {
	addr := s.Underlay
	if addr == "auto" {
		var err error
		if addr, err = nslink.AutoUnderlay(); err != nil {
			return underlay{}, err
		}
	}
	name, mtu, err := nslink.Underlay(addr)
	if err != nil {
		return underlay{}, fmt.Errorf("--underlay %s: %w", s.Underlay, err)
	}
	return underlay{addr, name, mtu}, nil
}

// Check reads the underlay's interface and MTU (as they are at the start: each connection reads them
// again); Serve calls it.
func (s *Server) Check() error {
	if len(s.Secret) < MinSecret {
		return fmt.Errorf("secret: need at least %d bytes", MinSecret)
	}
	if _, err := s.underlay(); err != nil {
		return err
	}
	if err := writableProcSys(); err != nil {
		return err
	}
	if s.Name == "" {
		s.Name, _ = os.Hostname()
	}
	s.labs = map[string]uint64{}
	s.execs = map[string]map[*execProc]bool{}
	s.owners = map[string]*session{}
	s.captures = map[string]bool{}
	return nil
}

// Serve accepts connections on ln until ctx ends; each runs in its own goroutine. When ctx ends, the
// connections close and their labs come down before Serve returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := s.Check(); err != nil {
		return err
	}
	u, _ := s.underlay()
	s.logf("%s listening on %s, underlay %s on %s (MTU %d)", s.Name, ln.Addr(), u.addr, u.ifName, u.mtu)
	var wg sync.WaitGroup
	conns := map[*Conn]bool{}
	var cmu sync.Mutex
	go func() {
		<-ctx.Done()
		ln.Close()
		cmu.Lock()
		for c := range conns {
			c.Close()
		}
		cmu.Unlock()
	}()
	for {
		raw, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				wg.Wait()
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := Accept(raw, s.Secret)
			if err != nil {
				s.logf("refused %v", err)
				return
			}
			cmu.Lock()
			conns[c] = true
			cmu.Unlock()
			s.handle(ctx, c)
			cmu.Lock()
			delete(conns, c)
			cmu.Unlock()
		}()
	}
}

// session is one coordinator's connection: at most one lab part and its agent.
type session struct {
	s   *Server
	c   *Conn
	lab string
	// under is the underlay as the hello reported it: the coordinator plans the lab's VXLAN links
	// between machines with its address.
	under underlay
	// amu guards agent, gone and waiting: a capture's connection asks this one's agent (capture.go).
	amu   sync.Mutex
	agent *netns.LocalAgent
	// gone is closed when the agent's output has ended; waiting are the server's own live requests
	// awaiting their replies, by ID.
	gone    chan struct{}
	waiting map[uint64]chan *lockstep.LiveMsg
	// execing: the connection runs a command (exec.go); one at a time, so out messages need no tag.
	execing atomic.Bool
	proc    *execProc // the command this connection runs or ran last, ended when it ends
	// capture: the connection streams a capture (capture.go), one per connection.
	capture *capture
}

func (s *Server) handle(ctx context.Context, c *Conn) {
	s.logf("coordinator %s authenticated", c.Remote)
	ss := &session{s: s, c: c}
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		c.Close()
		ss.stopExecs() // an exec's command runs as long as its connection
		if ss.capture != nil {
			<-ss.capture.done // the agent told to stop, the file removed
		}
		ss.teardown()
	}()
	u, err := s.underlay()
	if err != nil {
		s.logf("coordinator %s: %v", c.Remote, err)
		c.Send(Msg{Type: "error", Err: err.Error()})
		return
	}
	ss.under = u
	if err := c.Send(Msg{Type: "hello", Hello: &Hello{Name: s.Name, Underlay: u.addr, UnderlayIf: u.ifName,
		UnderlayMTU: u.mtu, Version: ProtocolVersion}}); err != nil {
		return
	}
	for {
		var m Msg
		if err := c.Recv(&m); err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				s.logf("coordinator %s: %v", c.Remote, err)
			}
			return
		}
		t2 := s.now()
		if err := ss.dispatch(ctx, &m, t2); err != nil {
			c.Send(Msg{Type: "error", Err: err.Error()})
		}
	}
}

func (ss *session) dispatch(ctx context.Context, m *Msg, t2 int64) error {
	switch m.Type {
	case "ping":
		if m.Clock == nil {
			return errors.New("ping without stamps")
		}
		return ss.c.Send(Msg{Type: "pong", Clock: &Stamps{T1: m.Clock.T1, T2: t2, T3: ss.s.now()}})
	case "up":
		return ss.up(ctx, m.Up)
	case "agent":
		return ss.toAgent(m.Agent)
	case "down":
		return ss.down(m.Lab)
	case "exec":
		return ss.exec(m.Exec)
	case "capture":
		return ss.startCapture(ctx, m.Capture)
	case "stop":
		return ss.stopCapture()
	case "calibrate":
		ss.calibrate(ctx)
		return nil
	}
	return fmt.Errorf("unknown message type %q", m.Type)
}

// calibrate answers with this machine's agent calibration: the cached one, or measured now (about
// 25 s natively, longer on a slow machine), in its own goroutine so that the connection's other
// messages (pings) are still answered meanwhile.
func (ss *session) calibrate(ctx context.Context) {
	go func() {
		t0 := time.Now()
		c, err := netns.MachineCalibration(ctx, fmt.Sprintf("k%d", os.Getpid()%100000), func(s string) { ss.s.logf("%s", s) })
		if err != nil {
			ss.c.Send(Msg{Type: "error", Err: "calibration: " + err.Error()})
			return
		}
		ss.s.logf("calibration: %.0f frame-hops per CPU-second on the small fabric (%s; answered in %v)",
			c.FramesPerCPUSecond, c.Key, time.Since(t0).Round(time.Millisecond))
		ss.c.Send(Msg{Type: "calibration", Calibration: &c})
	}()
}

func (ss *session) up(ctx context.Context, r *UpReq) error {
	if r == nil || r.Graph == nil {
		return errors.New("up without a lab")
	}
	if ss.lab != "" {
		return fmt.Errorf("this connection already made lab %s", ss.lab)
	}
	// The interface holding the hello's address now (the hello's may be gone since: a network
	// reconnected as another interface).
	ifName, mtu, err := nslink.Underlay(ss.under.addr)
	if err != nil {
		return fmt.Errorf("underlay %s, reported at the hello, is gone: %w", ss.under.addr, err)
	}
	if err := nslink.CheckUnderlayMTU(ss.s.Name, mtu, r.MTU); err != nil {
		return err
	}
	if r.Live != nil && ss.s.HostSetup == nil {
		return errors.New("this agent server cannot set up a live lab's kernel hosts")
	}
	vx := make([]nslink.VXLANLink, len(r.VXLAN))
	for i, v := range r.VXLAN {
		if v.Local != ss.under.addr {
			return fmt.Errorf("vxlan link %d: local end %s is not this machine's underlay %s", v.Link, v.Local, ss.under.addr)
		}
		v.Underlay = ifName
		vx[i] = v
	}
	t0 := time.Now()
	nl, err := nslink.Up(ctx, r.Lab, r.Graph, nslink.Options{MTU: r.MTU, Nodes: r.Nodes, VXLAN: vx})
	if err != nil {
		return err
	}
	ss.lab = nl.Name
	ss.s.mu.Lock()
	ss.s.gen++
	ss.s.labs[nl.Name] = ss.s.gen
	ss.s.owners[nl.Name] = ss
	ss.s.mu.Unlock()
	if r.Live != nil {
		if err := ss.s.HostSetup(nl, r.Graph, r.Nodes, *r.Live); err != nil {
			ss.teardown()
			return fmt.Errorf("kernel hosts: %w", err)
		}
	}
	ss.s.logf("lab %s: %d devices, %d links to other machines up in %v", nl.Name, len(r.Nodes), len(vx), time.Since(t0).Round(time.Millisecond))
	return ss.c.Send(Msg{Type: "upok", Lab: nl.Name})
}

// toAgent starts the agent at setup and relays everything else to it; a start's epoch arrives as
// CLOCK_REALTIME and goes on as this machine's CLOCK_MONOTONIC, which the agent's clock runs on.
func (ss *session) toAgent(m *lockstep.AgentMsg) error {
	if m == nil {
		return errors.New("agent message without a body")
	}
	if err := m.Check(); err != nil {
		return err
	}
	if m.Type == "setup" {
		if ss.lab == "" || m.Setup.Lab != ss.lab {
			return errors.New("setup names no lab this connection made")
		}
		if ss.agent != nil {
			return errors.New("this connection's agent is already set up")
		}
		a, err := netns.StartLocalAgent(ss.lab, m.Setup)
		if err != nil {
			return err
		}
		gone := make(chan struct{})
		ss.amu.Lock()
		ss.agent, ss.gone = a, gone
		ss.amu.Unlock()
		go ss.relay(a, gone)
		return nil
	}
	if ss.agent == nil {
		return fmt.Errorf("agent message %s before setup", m.Type)
	}
	if m.Type == "start" {
		m.Epoch -= ss.s.now() - clock.MonotonicNanos()
	}
	if m.Live != nil {
		m.Live.ID = 0 // IDs are the server's own requests' (liveCall)
	}
	return ss.agent.Send(m)
}

// relay passes the agent's messages to the coordinator, but for the replies to the server's own live
// requests (liveCall).
func (ss *session) relay(a *netns.LocalAgent, gone chan struct{}) {
	defer close(gone)
	for m := range a.Msgs() {
		if m.Type == "live" && m.Live != nil && m.Live.ID != 0 {
			ss.amu.Lock()
			w := ss.waiting[m.Live.ID]
			ss.amu.Unlock()
			if w != nil {
				w <- m.Live
			}
			continue // or a reply too late for its request: the coordinator's never carry an ID
		}
		if err := ss.c.Send(Msg{Type: "agent", Agent: &m}); err != nil {
			a.Kill()
		}
	}
	err := a.Wait()
	msg := "exited"
	if err != nil {
		msg = err.Error()
	}
	ss.c.Send(Msg{Type: "exited", Err: msg})
}

// down removes lab; the answer is downok either way, with Err set when it failed.
func (ss *session) down(lab string) error {
	var err error
	if lab == ss.lab {
		ss.teardown()
	} else {
		// Going: exec no longer takes the name for a lab this server holds, and its commands end.
		ss.s.retire(lab)
		ss.s.cleanup(lab)
		err = nslink.Down(lab)
	}
	reply := Msg{Type: "downok", Lab: lab}
	if err != nil {
		reply.Err = err.Error()
	}
	return ss.c.Send(reply)
}

// teardown kills the session's agent and removes its lab.
func (ss *session) teardown() {
	ss.amu.Lock()
	a := ss.agent
	ss.agent = nil
	ss.amu.Unlock()
	if a != nil {
		a.Kill()
	}
	if ss.lab == "" {
		return
	}
	ss.s.retire(ss.lab)
	ss.s.cleanup(ss.lab)
	if err := nslink.Down(ss.lab); err != nil {
		ss.s.logf("lab %s: teardown: %v", ss.lab, err)
	} else {
		ss.s.logf("lab %s: down", ss.lab)
	}
	ss.lab = ""
}

// stopExecs ends the command this connection runs, if any (its process group).
func (ss *session) stopExecs() {
	if p := ss.proc; p != nil {
		p.stop()
		ss.s.mu.Lock()
		for _, held := range ss.s.execs {
			delete(held, p)
		}
		ss.s.mu.Unlock()
		ss.proc = nil
	}
}

func stopAll(ps []*execProc) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop() }()
	}
	wg.Wait()
}

// labGen says whether lab is one a connection of this server made and holds, and which generation
// of it (a lab removed and made again under its name is another).
func (s *Server) labGen(lab string) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.labs[lab]
	return g, ok
}

// holdExec records p as a command of lab, if the lab is still generation gen; false if it was removed
// (or replaced) since, and then p is the caller's to end.
func (s *Server) holdExec(lab string, gen uint64, p *execProc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.labs[lab]; !ok || g != gen {
		return false
	}
	if s.execs[lab] == nil {
		s.execs[lab] = map[*execProc]bool{}
	}
	s.execs[lab][p] = true
	return true
}

// releaseExec forgets p, a command that is over, as one that lab holds.
func (s *Server) releaseExec(lab string, p *execProc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.execs[lab], p)
}

// retire forgets lab as one this server holds, so exec refuses it, and ends the commands running in it.
func (s *Server) retire(lab string) {
	s.mu.Lock()
	delete(s.labs, lab)
	delete(s.owners, lab) // its captures end (capture.go)
	var ps []*execProc
	for p := range s.execs[lab] {
		ps = append(ps, p)
	}
	delete(s.execs, lab)
	s.mu.Unlock()
	if len(ps) > 0 {
		s.logf("lab %s: ending %d command(s) lab exec runs in it", lab, len(ps))
	}
	stopAll(ps)
}

func (s *Server) cleanup(lab string) {
	if s.Cleanup != nil {
		s.Cleanup(lab)
	}
}

// writableProcSys makes /proc/sys writable where it is not: a container's is a read-only bind mount
// (unless the engine is told otherwise, which Compose v1 cannot), and the agent sets each namespace's
// sysctls through it. The remount changes only this mount namespace's view (the container's); on a
// host /proc/sys is already writable and nothing happens.
func writableProcSys() error {
	const probe = "/proc/sys/net/ipv4/ip_forward"
	if unix.Access(probe, unix.W_OK) == nil {
		return nil
	}
	if err := unix.Mount("/proc/sys", "/proc/sys", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("/proc/sys is read-only and could not be remounted writable (%v): give the container CAP_SYS_ADMIN and no AppArmor profile", err)
	}
	return nil
}
