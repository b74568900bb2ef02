package agent

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/portio"
)

// xdpState is what the AF_XDP data path (FABRICLAB_DATAPATH=xdp) knows of its ports: how many took an
// AF_XDP socket and why the others were refused. A refused port reads and writes through AF_PACKET
// (the batched data path) instead: the run goes on, and its fidelity record says so.
type xdpState struct {
	ports   []*portio.XDPPort
	refused int
	// why is the first refusal of each kind (portio.XDPError's step), in the order they came.
	why   []string
	kinds map[string]bool
	// everyPort: a refusal that would be every port's answer (portio.XDPError.EveryPort: no program
	// loads, no permission, no AF_XDP in this kernel) came, so the ports after it do not ask again.
	everyPort bool
	bytes     int // UMEM the ports hold
	// open is portio.OpenXDPPort (a test's stand-in when set).
	open func(nsPath, ifname string, mtu, rxFrames int) (*portio.XDPPort, error)
}

// xdpAgentMax bounds the UMEM of one agent's ports (the kernel locks it in RAM): (64 + 128) x 2 KB = 384
// KB a port whose peer the agent hosts, (4096 + 128) x 2 KB = 8.4 MB one whose peer is elsewhere, so
// 1,300 of the first kind or 60 of the second; the ports past it use AF_PACKET.
const xdpAgentMax = 512 << 20

// openSock opens port pc's socket for the data path in use, and says how many received frames it holds
// when only this agent writes to it (port.rxStock; 0: not bounded that way).
func (a *agent) openSock(d lockstep.AgentDevice, pc lockstep.AgentPort) (portio.Port, int, error) {
	if a.dp == xdp {
		if x := a.openXDP(d, pc); x != nil {
			return x, a.ownStock(pc), nil
		}
	}
	ring := a.ringFor(pc)
	p, err := portio.OpenPacketPortRing(d.NSPath, pc.Ifname, a.setup.MTU, ring)
	return p, ring, err
}

// openXDP is port pc's AF_XDP socket, or nil when the port is to use AF_PACKET: the agent's AF_XDP
// memory is spent, an earlier refusal applies to every port, or the kernel refuses this one.
func (a *agent) openXDP(d lockstep.AgentDevice, pc lockstep.AgentPort) *portio.XDPPort {
	if a.xdp.everyPort {
		a.xdp.refused++
		return nil
	}
	if a.xdp.bytes >= xdpAgentMax {
		a.refuseXDP("memory", fmt.Sprintf("device %s: the agent's AF_XDP memory (%d MB) is spent", d.Name, xdpAgentMax>>20), false)
		return nil
	}
	open := a.xdp.open
	if open == nil {
		open = portio.OpenXDPPort
	}
	x, err := open(d.NSPath, pc.Ifname, a.setup.MTU, a.xdpRxFrames(pc))
	if err == nil {
		a.xdp.ports = append(a.xdp.ports, x)
		a.xdp.bytes += x.MemBytes()
		return x
	}
	kind, every := err.Error(), false
	var xe *portio.XDPError
	if errors.As(err, &xe) {
		kind, every = xe.Step, xe.EveryPort()
	}
	a.xdp.everyPort = every
	// Jumbo frames (kernel-TCP hosts at MTU 9000) are a known limit, not news: the fidelity record says
	// it. A kernel refusing is said on the terminal too.
	a.refuseXDP(kind, fmt.Sprintf("device %s: %v", d.Name, err), a.setup.MTU+14 <= portio.XDPMaxFrame)
	return nil
}

// refuseXDP counts a port refused AF_XDP and keeps why, the first time a refusal of its kind comes
// (saying it on stderr too when loud).
func (a *agent) refuseXDP(kind, why string, loud bool) {
	a.xdp.refused++
	if a.xdp.kinds[kind] {
		return
	}
	if a.xdp.kinds == nil {
		a.xdp.kinds = map[string]bool{}
	}
	a.xdp.kinds[kind] = true
	a.xdp.why = append(a.xdp.why, why)
	if loud {
		which := "such ports use"
		if a.xdp.everyPort {
			which = "this and every later port uses"
		}
		fmt.Fprintf(os.Stderr, "agent %d: %s; %s AF_PACKET\n", os.Getpid(), why, which)
	}
}

// xdpRxFrames is how many received frames port pc's socket holds: ownStock when only this agent writes
// to it; a port whose peer is elsewhere (another agent, a kernel host) is read when the loop gets to
// it, so it holds 4096.
func (a *agent) xdpRxFrames(pc lockstep.AgentPort) int {
	if n := a.ownStock(pc); n > 0 {
		return n
	}
	return 4096
}

// datapathName is the fidelity record's name for the data path the ports use.
func (a *agent) datapathName() string {
	switch a.dp {
	case legacy:
		return "legacy"
	case xdp:
		if a.xdp.refused == 0 {
			mode := ""
			if len(a.xdp.ports) > 0 {
				mode = " " + a.xdp.ports[0].Mode
			}
			return "xdp" + mode
		}
		return fmt.Sprintf("xdp on %d of %d ports (%s; the others AF_PACKET)", len(a.xdp.ports), len(a.ports), strings.Join(a.xdp.why, "; "))
	}
	return "batched"
}

// xdpFinish counts the frames AF_XDP sockets dropped for want of room (a full receive ring: the agent
// did not read in time) with the frames the kernel refused. A frame dropped because the fill ring was
// empty counts in both rx_dropped and fill_ring_empty_descs (the kernel's copy path bumps each), so the
// latter is left out.
func (a *agent) xdpFinish() {
	for _, x := range a.xdp.ports {
		if s, err := x.Stats(); err == nil {
			a.fid.KernelFull += s.Rx_dropped + s.Rx_ring_full
		}
	}
}

// unwatchRings takes the ports out of the waiter when the agent scans every ring after each flush
// (scanRings, both batched data paths): every frame they receive is one this agent wrote, and a
// watched socket costs the kernel an epoll wake-up for every frame it queues. Unwatched, the batched
// data path moved 6-8% more frame-hops per CPU-second (NDC(4,1), alternated runs). The loop then looks
// at the rings after every wake-up too (scanUnwatched), and sleeps no longer than its quantum (half
// the slack a frame is written with before it is due) while frames it wrote have not arrived (the
// kernel deferred their delivery to its softirq thread). FABRICLAB_WATCH_RINGS=1 keeps them watched,
// for comparison.
func (a *agent) unwatchRings() error {
	if !a.scanRings || os.Getenv(watchEnv) == "1" {
		return nil
	}
	for i := range a.ports {
		if err := a.waiter.unwatch(i); err != nil {
			return fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	a.unwatched = true
	return nil
}

// scanUnwatched reads every ring after a wake-up when the waiter does not watch them.
func (a *agent) scanUnwatched() error {
	if !a.unwatched {
		return nil
	}
	for _, p := range a.ports {
		if err := a.receive(p, true); err != nil {
			return err
		}
	}
	return nil
}

// watchEnv set to "1" keeps the ports in the waiter (unwatchRings).
const watchEnv = "FABRICLAB_WATCH_RINGS"

// inFlight says whether a frame this agent wrote has not been read yet. One a link delay past its due
// time counts as lost (the kernel dropped it; a later frame of its port skips it), so a loss does not
// keep the loop polling.
func (a *agent) inFlight() bool {
	now := a.clk.Now()
	for _, p := range a.ports {
		if p.ehead < len(p.expect) && p.expect[len(p.expect)-1].due+p.link.delay > now {
			return true
		}
	}
	return false
}
