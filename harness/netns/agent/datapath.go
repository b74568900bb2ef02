package agent

import (
	"bytes"
	"math"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/wire"
	"golang.org/x/sys/unix"
)

// The data path: how frames get from an engine's link onto the veth and back into an engine.
//
// Batched (on AF_XDP sockets by default, xdp.go; FABRICLAB_DATAPATH=batched: AF_PACKET with receive
// rings): a frame whose cable ends at another port of this agent is encoded when it departs (its
// serialization is done) and written with every other frame waiting in the agent by one flush, at the
// latest a quarter link delay before it is due at the far end: a flush writes each port's waiting
// frames with one system call (sendmmsg; AF_XDP: one sendto kick), and reads what arrived from each
// port's ring, draining it. The receiving port holds a frame read before it is due and hands it to its
// engine at its due time (port.hold), so an engine takes it exactly when the virtual backend would.
// Frames are decoded into recycled packets (agent.pool) with one shared copy of each source route: no
// allocation per hop, where fresh packets (the collector is off) cost 12% of the agent's CPU in page faults.
//
// Legacy (FABRICLAB_DATAPATH=legacy): the data path of 26274ad, kept while `lab bench` compares the
// data paths side by side: every frame is written when it is due, each port flushed at every loop step (1.1
// frames per sendmmsg on NDC(4,1) under WebSearch: one system call per frame and hop), and decoded
// frames cloned.
type datapath uint8

const (
	batched datapath = iota
	legacy
	xdp // batched, through AF_XDP sockets (xdp.go)
)

func datapathFromEnv() datapath {
	switch netns.DatapathFromEnv() {
	case "legacy":
		return legacy
	case "xdp":
		return xdp
	}
	return batched
}

// never is a flush deadline that has not been set.
const never = clock.Time(math.MaxInt64)

// earlySlack: a frame written early is written at the latest a quarter link delay before it is due,
// so frames gather for up to three quarters of one (a catch-up step writes what departed in it, and a
// step of three quarters of the shortest delay never takes one late). Half a delay gave 5.3 frames per
// sendmmsg on NDC(4,1) under WebSearch at D=1000.
const earlySlack = 4

// setEarly marks the ports whose peer this agent hosts as writing early (batched data path only). A
// kernel host's port (IngressDelay) and a cable without delay keep writing frames when due.
func (a *agent) setEarly() {
	for _, p := range a.ports {
		if p.cfg.TxChan != 0 {
			p.slack = p.link.delay // a cut link's frame goes at once: the other agent's grant counts it
		}
	}
	if a.dp == legacy {
		return
	}
	all := len(a.ports) > 0
	for _, p := range a.ports {
		if p.cfg.TxChan == 0 && p.peer != nil && p.link.delay > 0 && p.cfg.IngressDelay == 0 && p.peer.cfg.IngressDelay == 0 {
			p.early, p.slack = true, p.link.delay/earlySlack
			if a.quantum == 0 || p.slack/2 < a.quantum {
				a.quantum = p.slack / 2
			}
		} else if p.cfg.TxChan == 0 {
			// (A cut link's frame is taken exactly when due too: by its stamp, and the other agent
			// waits for it by count.)
			all = false
		}
	}
	if !all {
		a.quantum = 0
	}
	a.scanRings = all
	for _, p := range a.ports {
		a.scanRings = a.scanRings && p.sock.Ring()
	}
}

// flushDue says whether frames wait that must be written by now.
func (a *agent) flushDue(wall clock.Time) bool { return a.flushAt <= wall }

// flushAll writes every port's waiting frames (one sendmmsg per port) and clears the deadline.
func (a *agent) flushAll() error {
	a.flushAt, a.dueMin = never, never
	for _, p := range a.ports {
		if err := p.flush(a); err != nil {
			return err
		}
	}
	return nil
}

// decode turns frame into a packet the engine may keep, or reports why it is malformed.
func (a *agent) decode(frame []byte) (*pkt.Packet, error) {
	if a.dp == legacy {
		pk := new(pkt.Packet)
		if err := wire.Decode(frame, pk); err != nil {
			return nil, err
		}
		if pk.Raw != nil {
			pk.Raw = bytes.Clone(pk.Raw)
		}
		if pk.Route != nil {
			pk.Route = bytes.Clone(pk.Route)
		}
		return pk, nil
	}
	pk := a.pool.New(pkt.Packet{})
	if err := wire.Decode(frame, pk); err != nil {
		a.pool.Put(pk)
		return nil, err
	}
	if pk.Route != nil {
		pk.Route = a.route(pk.Route)
	}
	if pk.Raw != nil {
		pk.Raw = bytes.Clone(pk.Raw)
	}
	return pk, nil
}

// route is the shared copy of a source route read off a frame: wire.Decode aliases it into the receive
// buffer, which the next read overwrites, and engines never modify a route (pkt.Packet.Route), so one
// copy serves every packet of a path. A fabric has few paths; the map's lookup by string(r) does not
// allocate.
func (a *agent) route(r []uint8) []uint8 {
	if c, ok := a.routes[string(r)]; ok {
		return c
	}
	if a.routes == nil {
		a.routes = map[string][]uint8{}
	}
	c := bytes.Clone(r)
	c = c[:len(c):len(c)] // an append must not write into the next route's storage
	a.routes[string(c)] = c
	return c
}

// hold keeps pk, read on p before its due time at, until then: the port's inbox (lockstep.go), one
// timer for its head, hands it to the engine exactly when due. Frames between an agent's own devices
// and cut-link frames (deliverAt) wait the same way.
func (p *port) hold(a *agent, pk *pkt.Packet, at clock.Time) {
	in := &p.inbox
	in.q = append(in.q, inFlight{at: at, p: pk})
	if in.fire == nil {
		in.fire = func() { p.releaseInbox(a) }
	}
	if !in.armed {
		in.armed = true
		a.clk.ScheduleOrdered(at-a.clk.Now(), p.ord, in.fire)
	}
}

// ownStock is how many received frames the socket of port pc holds when only this agent's own ports
// write to it (the peer is hosted here, its frames written early; 0: otherwise). The agent reads every
// such port after each flush, and a flush writes at most half the stock to one port (port.flush), so
// the stock need not grow with the link's delay x rate. Kept small on purpose: each port's frames
// cycle through its whole stock (a ring is FIFO), so a stock sized by the link (512 frames, 1 MB of
// UMEM a port at 100 Gb/s and 1 us) made every received frame land in memory the cache no longer
// held: on NDC(4,1) (64 ports) the agent took 8-14% more CPU per frame-hop than with 64 (alternated
// `lab bench` runs), most of it in the kernel's copy into the UMEM and its socket wake-up check.
func (a *agent) ownStock(pc netns.AgentPort) int {
	if a.dp == legacy || !a.hosted[pc.PeerNode] || pc.TxChan != 0 || pc.RxChan != 0 || pc.IngressDelay != 0 || pc.Delay <= 0 {
		return 0
	}
	return ownStockFrames
}

// ownStockFrames: 64 frames, 32 written per flush. A flush averages 5-8 frames a port on NDC(4,1).
const ownStockFrames = 64

// Receive rings (netns.OpenPacketPortRing) are ownStock frames; past ringAgentMax for the agent a port
// reads with recvmmsg from its socket buffer instead.
const ringAgentMax = 256 << 20

// ringFor is how many frames port pc's receive ring holds (0: no ring).
func (a *agent) ringFor(pc netns.AgentPort) int {
	frames := a.ownStock(pc)
	if frames == 0 {
		return 0
	}
	bytes := frames * (a.setup.MTU + 14 + 96)
	if a.ringBytes+bytes > ringAgentMax {
		return 0
	}
	a.ringBytes += bytes
	return frames
}

// processCPU is the agent process's CPU so far (user + system). The fidelity record's CPUTime is what
// the run took, start-up (engines, sockets, rings) left out: 1.1 of a 3 ms NDC(2,1) calibration's
// CPU-seconds were 0.2-0.3 of start-up, which made the machine look 20% slower than it is.
func processCPU() clock.Time {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return clock.Time(ru.Utime.Nano()+ru.Stime.Nano()) * clock.Nanosecond
}
