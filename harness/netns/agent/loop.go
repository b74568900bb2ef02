package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/harness/monitor"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/switchsw"
	"github.com/fabriclab/fabriclab/wire"
	"golang.org/x/sys/unix"
)

type engine interface {
	Receive(port int, p *pkt.Packet)
	SetLink(port int, l egress.Link)
	Flush()
}

type device struct {
	name      string
	node      int
	eng       engine
	nic       *nodes.NIC
	ports     []*port
	malformed uint64
}

// port is one device port: its socket, the outgoing link model and the frames due to be written.
type port struct {
	dev   *device
	index int
	sock  netns.Port
	cfg   netns.AgentPort
	link  *link
	pcap  *wire.PcapWriter
	pfile *os.File
	// Live labs: frames read (Rx counters of lab inspect), the capture's file name, and the link fault
	// applied to frames arriving here from a kernel host (nil: none; see liveDo).
	rxFrames, rxBytes uint64
	malformed         uint64 // frames read that did not decode
	capPath           string
	inFault           *egress.Fault
	nicFault          *egress.FaultLink // a NIC port's spec fault, in front of link
	yard              clock.Time        // fidelity yardstick: one data frame's serialization time at this port's rate
	// take is what Recv hands each frame to, [0] while catching up and [1] in sync (receive): made
	// once, since a closure passed through the Port interface escapes, and the loop reads every port
	// after each wake-up.
	take [2]func([]byte)

	// Frames waiting to be written (flush): encoded once into bufs, which are reused, and written by
	// one sendmmsg per flush. due is each frame's arrival time at the far end of the cable.
	out   [][]byte
	due   []clock.Time
	bufs  [][]byte // reused encode buffers
	nbufs int
	// slots lends the socket's own send buffers (AF_XDP's UMEM): a frame encoded in one is sent where it
	// lies, saving the copy into the UMEM (2.3% of the agent's CPU on NDC(4,1)). nil: encode into bufs.
	slots netns.Slotter
	// rxStock is how many received frames the socket holds when only this agent's own ports write to
	// it (netns.OpenXDPPort's rxFrames, a receive ring's frames; 0: no such bound): a flush writes at
	// most half of it to this port before the port is read (flush).
	rxStock int
	// early: the peer port is this agent's too, so a frame is written when it departs (serialization
	// done) and the peer holds it until it is due, a link delay later (datapath.go); slack is how long
	// before its due time it must be written (a quarter of the link delay; a cut link's, lockstep, is
	// written at once: the other agent's grant counts it).
	early bool
	slack clock.Time

	// peer is the other end of this port's link when this agent hosts it too. expect holds, in order,
	// the frames the peer wrote toward this port and when each was due to arrive (see arrival).
	peer   *port
	expect []expected
	ehead  int

	// Lockstep, on a cut link (cfg.TxChan, cfg.RxChan): the sequence number of the last frame stamped
	// and of the last one written, and the frames read ahead of their due time.
	txSeq, txWritten uint32
	inbox            inbox
	// ord places this port's deliveries among the events due at the same instant, as on the virtual
	// backend (clock.ArrivalOrder; docs/architecture.md §Order of simultaneous events).
	ord clock.Order
}

// expected is a frame written by this agent that its own peer port will read: its length, its key and
// its arrival time on the emulated link.
type expected struct {
	due clock.Time
	n   int
	key frameKey
}

// expectWindow is how far arrival looks past the head of expect for a match: frames the kernel lost
// (a full socket buffer) are skipped, anything else is a frame this agent did not write.
const expectWindow = 64

// frameKey tells a frame from the others in flight on its link: the 24 bytes after the Ethernet
// addresses and type (IPv4: ToS with ECN, length, ID, TTL, protocol, header checksum, addresses, UDP
// ports; PFC: opcode, class vector and all eight quanta; PortFC: opcode, port, queue, pause) and the
// last 8 (RoCE: the ICRC, a CRC of the whole frame but the fields the IPv4 checksum covers). Where a
// 96-byte hash cost two multiplies per word, written and read (2% of the agent's CPU), this is four
// loads. Frames with equal keys (a PFC frame sent twice) are alike in every field an engine reads, and
// a link keeps its order, so taking the first match is right.
type frameKey [4]uint64

func keyOf(b []byte) frameKey {
	if len(b) < 38 { // shorter than any frame the engines write; keep it distinguishable all the same
		var k frameKey
		for i, c := range b {
			k[i/8%4] ^= uint64(c) << (8 * (i % 8))
		}
		return k
	}
	return frameKey{binary.LittleEndian.Uint64(b[14:]), binary.LittleEndian.Uint64(b[22:]),
		binary.LittleEndian.Uint64(b[30:]), binary.LittleEndian.Uint64(b[len(b)-8:])}
}

// sent records frames written toward peer (which this agent also hosts) with their arrival times.
func (p *port) sent(frames [][]byte, due []clock.Time) {
	if p.peer == nil {
		return
	}
	q := p.peer
	if q.ehead == len(q.expect) {
		q.expect, q.ehead = q.expect[:0], 0
	}
	for i, f := range frames {
		q.expect = append(q.expect, expected{due: due[i], n: len(f), key: keyOf(f)})
	}
}

// arrival returns when frame, just read on p, was due to arrive: its peer's scheduled departure plus
// the link delay, if this agent wrote it. Emulated time then follows the schedule the frame left on,
// not how promptly the loop got to it; a loop that woke late would otherwise slip every later departure
// of the port the frame joins by that lateness, for good, on a path with no slack. ok is false for a
// frame from another agent or the kernel, which is taken at the wall time it was read at (external).
func (p *port) arrival(frame []byte) (clock.Time, bool) {
	if p.ehead == len(p.expect) {
		return 0, false
	}
	n, k := len(frame), keyOf(frame)
	for i := p.ehead; i < len(p.expect) && i < p.ehead+expectWindow; i++ {
		if e := &p.expect[i]; e.n == n && e.key == k {
			p.ehead = i + 1
			return e.due, true
		}
	}
	return 0, false
}

// link is one direction of a cable on the sending side: the egress port has serialized the frame (in
// the engine, at the dilated rate); the link holds it for the propagation delay and then hands it to
// the socket. Delay lives at the sender so a frame's departure is scheduled on the clock that also
// measures how late it really left. The kernel's own veth transit (tens of microseconds, measured by
// the fidelity spec) comes on top; at the documented dilations it is a few percent of one link delay.
type link struct {
	a      *agent
	p      *port
	delay  clock.Time
	flight []inFlight
	head   int
	armed  bool
	fire   func()
}

type inFlight struct {
	at clock.Time
	p  *pkt.Packet
}

func (l *link) Send(p *pkt.Packet) {
	at := l.a.clk.Now() + l.delay
	if l.p.cfg.TxChan != 0 || l.p.early {
		// A cut link (lockstep): the frame leaves now with its arrival time stamped on it, and the
		// receiving agent holds it until then; it has the whole link delay to get there. Between two
		// of this agent's ports (batched data path) the next flush writes it, at least slack before it
		// is due, and the peer holds it likewise.
		l.p.queue(p, at)
		return
	}
	l.flight = append(l.flight, inFlight{at: at, p: p})
	if !l.armed {
		l.armed = true
		l.a.clk.Schedule(l.delay, l.fire)
	}
}

func (l *link) release() {
	now := l.a.clk.Now()
	for l.head < len(l.flight) && l.flight[l.head].at <= now {
		f := l.flight[l.head]
		l.flight[l.head].p = nil
		l.head++
		l.p.queue(f.p, f.at)
	}
	if l.head == len(l.flight) {
		l.flight, l.head, l.armed = l.flight[:0], 0, false
		return
	}
	if l.head > 256 && l.head*2 > len(l.flight) {
		n := copy(l.flight, l.flight[l.head:])
		l.flight, l.head = l.flight[:n], 0
	}
	l.a.clk.Schedule(l.flight[l.head].at-now, l.fire)
}

func (p *port) queue(pk *pkt.Packet, at clock.Time) {
	var slot []byte
	if p.slots != nil {
		slot = p.slots.Slot()
	}
	buf := slot
	if slot == nil {
		if p.nbufs == len(p.bufs) {
			p.bufs = append(p.bufs, make([]byte, 0, 2048))
		}
		buf = p.bufs[p.nbufs][:0]
	}
	b, err := wire.Encode(pk, buf)
	if err == nil && p.cfg.TxChan != 0 {
		p.txSeq++
		b = netns.AppendStamp(b, at, p.txSeq)
	}
	if slot != nil && (err != nil || len(b) > cap(slot) || &b[0] != &slot[:1][0]) {
		p.slots.Unslot(slot) // not in the slot after all: Send copies b
	}
	if err != nil {
		// An engine made a descriptor the wire cannot carry: a bug, reported rather than hidden.
		p.link.a.violation(fmt.Sprintf("%s p%d: cannot encode %v frame: %v", p.dev.name, p.index, pk.Kind, err))
		return
	}
	if slot == nil {
		p.bufs[p.nbufs] = b
		p.nbufs++
	}
	// The frame is on its way; nothing of this agent holds the packet any more (engines let go of a
	// packet when they hand it to the link, as the virtual backend's pool also relies on).
	p.link.a.pool.Put(pk)
	p.out = append(p.out, b)
	p.due = append(p.due, at)
	a := p.link.a
	a.flushAt = min(a.flushAt, at-p.slack)
	a.dueMin = min(a.dueMin, at)
}

// flush writes the released frames and measures how late each left against its scheduled departure.
func (p *port) flush(a *agent) error {
	if len(p.out) == 0 {
		return nil
	}
	out, due := p.out, p.due
	if p.peer != nil && p.peer.rxStock > 0 && len(out) > p.peer.rxStock/2 {
		// The peer's socket holds rxStock frames and is read after every flush: write half of that
		// now and the rest at the next flush, right after the peer has been read (writeLater).
		out, due = out[:p.peer.rxStock/2], due[:p.peer.rxStock/2]
	}
	n, err := p.sock.Send(out)
	p.sent(out[:n], due[:n])
	left := a.clk.Wall()
	if p.cfg.TxChan != 0 {
		p.txWritten = p.txSeq - uint32(len(out)-n)
	}
	for i := 0; i < n; i++ {
		late := left - due[i]
		if p.cfg.TxChan != 0 {
			late += p.link.delay // it was due to leave, not to arrive, at due-delay
		}
		if late < 0 {
			late = 0
		}
		f := &a.fid
		f.Frames++
		f.SumLateness += float64(late)
		if late > f.MaxLateness {
			f.MaxLateness = late
		}
		if late > p.yard {
			f.LateFrames++
		}
		if p.pcap != nil {
			p.pcap.WriteAt(due[i], out[i])
		}
	}
	if err != nil {
		if !errors.Is(err, netns.ErrPortFull) {
			return err
		}
		// The peer's agent is not reading; the frames are lost like on a wire with a dead receiver.
		a.fid.KernelFull += uint64(len(out) - n)
	}
	if len(out) < len(p.out) {
		p.writeLater(a, len(out))
		return nil
	}
	p.out, p.due, p.nbufs = p.out[:0], p.due[:0], 0
	return nil
}

// writeLater keeps the frames from index sent on for the next flush, which the loop makes as soon as it
// has read the rings (their deadline is passed or near: they were due in this flush). Their encode
// buffers stay taken until the port's queue is empty.
func (p *port) writeLater(a *agent, sent int) {
	n := copy(p.out, p.out[sent:])
	copy(p.due, p.due[sent:])
	p.out, p.due = p.out[:n], p.due[:n]
	for _, at := range p.due {
		a.flushAt = min(a.flushAt, at-p.slack)
		a.dueMin = min(a.dueMin, at)
	}
}

type agent struct {
	setup   *netns.AgentSetup
	clk     *clock.Real
	log     records.Log
	devs    []*device
	ports   []*port // flat, index = poll slot
	fds     []unix.PollFd
	waiter  *waiter
	wake    *wake
	stop    atomic.Bool
	fid     netns.AgentFidelity
	flows   int // flows this agent starts
	rx      pkt.Packet
	stopped bool
	// mon is the run-time deadlock monitor when this agent hosts the whole lab (setup.Monitor).
	mon *monitor.Monitor
	// end is the run's end (engine time): no timer fires and no frame is taken after it.
	end clock.Time
	// Flow starts and dependencies (schedule, collect): starts[i] starts setup.Flows[i]; waiting[i]
	// counts the flows it still waits for; deps maps a flow to the flows waiting for it. seen is how
	// much of log.Flows collect has read, done how many of those completed.
	starts  []func()
	waiting []int
	after   []clock.Time // latest completion time among the flows each waits for
	deps    map[uint32][]int
	seen    int
	done    int
	// ctl is the control channel when the loop reads it itself (readControl); ctlReady: its descriptor
	// was found readable and not read since. ctlMsg is the message Poll decodes into.
	ctl       netns.PolledControl
	ctlFd     int
	ctlPolled clock.Time // wall time of the last unprompted poll
	ctlReady  bool
	ctlMsg    netns.AgentMsg
	// remote holds completions of flows in other agents, as the backend relays them (reader goroutine).
	remoteMu      sync.Mutex
	remote        []uint32
	remoteAt      []clock.Time
	remotePending atomic.Bool
	// completedFn tells the backend of completions other agents wait for; progressFn how far the clock
	// has got (every progressEvery of wall time).
	completedFn  func([]uint32, []clock.Time)
	progressFn   func(now clock.Time, done int)
	nextProgress clock.Time
	// step is how far one catch-up step advances (catchUp): a frame this agent sends itself is taken at
	// most that long after its scheduled arrival.
	step clock.Time
	live liveQueue
	// lock is the agent's part in lockstep (lockstep.go); sendFn sends the coordinator a message.
	lock   lockState
	sendFn func(netns.AgentMsg) error
	// lastFinish is the latest completion among this agent's flows (engine time), sent with done.
	lastFinish clock.Time
	// flushAt is when the frames waiting in the ports must be written at the latest (the earliest
	// due-minus-slack among them; never when none wait), dueMin the earliest due time among them, and
	// dp the data path in use (datapath.go).
	flushAt clock.Time
	dueMin  clock.Time
	dp      datapath
	xdp     xdpState // the AF_XDP data path's ports (xdp.go)
	// pool recycles packets (datapath.go): decoded frames and the engines' own come from it, and a
	// packet goes back once encoded or consumed. nil on the legacy data path, which allocates each.
	pool   *pkt.Pool
	routes map[string][]uint8 // source routes read off frames, one shared copy of each (decode)
	// quantum is the shortest sleep of the loop when every port writes early (else 0): then no frame
	// leaves the agent, each is taken exactly when due whenever the loop gets to it, and waking for
	// every timer (21 k wake-ups per second on NDC(4,1) at D=2000) only costs CPU. Half the smallest
	// slack, so a flush is still written a quarter of that before its frames are due.
	quantum clock.Time
	// scanRings: every port writes early and reads through a ring, so a flush is followed by a look at
	// every ring instead of an epoll call.
	scanRings bool
	unwatched bool // the waiter does not watch the ports (unwatchRings)
	// hosted are the nodes this agent hosts; ringBytes the receive-ring memory its ports have taken.
	hosted    map[int]bool
	ringBytes int
	cpu0      clock.Time // the process's CPU when the run started (processCPU)
}

// newAgent makes an agent's engines and ports from its setup: the steps below, in order. On an error
// everything made so far is closed.
func newAgent(s *netns.AgentSetup) (*agent, error) {
	if err := clock.PreciseThread(); err != nil {
		return nil, fmt.Errorf("timer slack: %w", err)
	}
	w, err := newWake()
	if err != nil {
		return nil, err
	}
	// The epoch is set at start; engines only read the clock once the loop runs.
	a := &agent{setup: s, clk: clock.NewReal(0), wake: w, flows: len(s.Flows), flushAt: never, dueMin: never, dp: datapathFromEnv()}
	if a.dp != legacy {
		a.pool = new(pkt.Pool)
	}
	if s.Realtime > 0 {
		// Not fatal: without it the run still happens, and the fidelity monitor judges the result.
		if err := clock.RealtimeThread(s.Realtime); err != nil {
			a.fid.RealtimeErr = err.Error()
		} else {
			a.fid.Realtime = true
		}
	}
	if err := a.makeDevices(); err != nil {
		a.close()
		return nil, err
	}
	a.fds = append(a.fds, unix.PollFd{Fd: int32(w.fd), Events: unix.POLLIN})
	if a.waiter, err = newWaiter(a.fds); err != nil {
		a.close()
		return nil, err
	}
	a.fid.Datapath = a.datapathName()
	a.pairPeers()
	a.setEarly()
	if err := a.unwatchRings(); err != nil {
		a.close()
		return nil, err
	}
	a.step = a.catchUpStep()
	a.initLock()
	if err := a.checkFlows(); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

// makeDevices makes each device's engine (a switch or a NIC) and opens its ports.
func (a *agent) makeDevices() error {
	s := a.setup
	pcap := map[[2]any]bool{}
	for _, pc := range s.Pcap {
		pcap[[2]any{pc.Device, pc.Port}] = true
	}
	a.hosted = map[int]bool{}
	for _, d := range s.Devices {
		a.hosted[d.Node] = true
	}
	for _, d := range s.Devices {
		dev := &device{name: d.Name, node: d.Node}
		links := make([]egress.Link, len(d.Ports))
		switch {
		case d.Switch != nil:
			sw, err := switchsw.New(*d.Switch, clock.For(a.clk, clock.DeviceOrder(d.Node)), links, &a.log)
			if err != nil {
				return fmt.Errorf("switch %s: %w", d.Name, err)
			}
			sw.SetPool(a.pool)
			dev.eng = sw
		case d.Host != nil:
			nic, err := nodes.New(*d.Host, clock.For(a.clk, clock.DeviceOrder(d.Node)), links, &a.log)
			if err != nil {
				return fmt.Errorf("host %s: %w", d.Name, err)
			}
			nic.SetPool(a.pool)
			dev.eng, dev.nic = nic, nic
		default:
			return fmt.Errorf("device %s: neither a switch nor a host config", d.Name)
		}
		a.devs = append(a.devs, dev)
		for i, pc := range d.Ports {
			if err := a.openPort(d, dev, i, pc, pcap[[2]any{d.Name, i}]); err != nil {
				return err
			}
		}
	}
	return nil
}

// openPort opens port i of dev (its socket, its link, and its pcap file when one is asked for).
func (a *agent) openPort(d netns.AgentDevice, dev *device, i int, pc netns.AgentPort, withPcap bool) error {
	s := a.setup
	sock, stock, err := a.openSock(d, pc)
	if err != nil {
		return fmt.Errorf("device %s: %w", d.Name, err)
	}
	p := &port{dev: dev, index: i, sock: sock, cfg: pc, rxStock: stock, yard: clock.TxTime(max(s.FrameBytes, 64), pc.RateBps),
		ord: clock.ArrivalOrder(d.Node, i)}
	p.slots, _ = sock.(netns.Slotter)
	// In the agent's lists before anything below can fail, so close() closes its socket.
	dev.ports = append(dev.ports, p)
	a.ports = append(a.ports, p)
	a.fds = append(a.fds, unix.PollFd{Fd: int32(sock.Fd()), Events: unix.POLLIN})
	p.link = &link{a: a, p: p, delay: pc.Delay}
	p.link.fire = p.link.release
	p.inbox.fire = func() { p.releaseInbox(a) }
	dev.eng.SetLink(i, p.link)
	if withPcap {
		f, err := os.Create(filepath.Join(s.PcapDir, fmt.Sprintf("%s-p%d.pcap", d.Name, i)))
		if err == nil {
			p.pcap, err = wire.NewPcapWriter(f, 0)
		}
		if err != nil {
			return fmt.Errorf("pcap for %s p%d: %w", d.Name, i, err)
		}
		p.pfile = f
	}
	return nil
}

// pairPeers links each port to the other end of its cable when this agent hosts that end too.
func (a *agent) pairPeers() {
	for _, p := range a.ports {
		for _, q := range a.ports {
			if q.dev.node == p.cfg.PeerNode && q.index == p.cfg.PeerPort {
				p.peer = q
			}
		}
	}
}

// catchUpStep is how far one catch-up step may run the clock.
//
// A frame written early is due a link delay after it departs and a step writes what departed in
// it, so a step shorter than the link delay (delay - slack) never takes one late. On the other ports
// a step no longer than one data frame's serialization (the fidelity yardstick) keeps every frame
// written at its due time within that of its schedule, however late the loop runs; a quarter link
// delay bounds it where frames are long.
// A cut link's frame leaves at once and the other agent takes it by its stamp: it bounds no step.
// (Bounding steps by it made two agents take 65 times the catch-up steps of one on NDC(4,1).)
func (a *agent) catchUpStep() clock.Time {
	step := clock.Time(-1)
	for _, p := range a.ports {
		d := min(p.link.delay, p.yard) / 4
		if p.early {
			d = p.link.delay - p.slack
		}
		if p.cfg.TxChan == 0 && (step < 0 || d < step) {
			step = d
		}
	}
	if step < 0 { // every port is cut: steps as long as the shortest link delay allows
		for _, p := range a.ports {
			if step < 0 || p.link.delay*3/4 < step {
				step = p.link.delay * 3 / 4
			}
		}
	}
	floor := minCatchUpStep
	if a.setup.MinCatchUpStep > 0 {
		floor = a.setup.MinCatchUpStep
	}
	return max(step, floor)
}

// checkFlows refuses a flow that starts at a node this agent does not host as a NIC.
func (a *agent) checkFlows() error {
	byNode := map[int]*device{}
	for _, d := range a.devs {
		byNode[d.node] = d
	}
	for _, f := range a.setup.Flows {
		if d := byNode[f.Node]; d == nil || d.nic == nil {
			return fmt.Errorf("flow %d starts at node %d, which this agent does not host as a NIC", f.Flow.ID, f.Node)
		}
	}
	return nil
}

// watch starts the deadlock monitor on the agent clock: the same package and rule the virtual backend
// uses, fed snapshots of this agent's engines (which are all of the lab's, see AgentSetup.Monitor).
func (a *agent) watch() {
	m := a.setup.Monitor
	if m == nil || m.Graph == nil {
		return
	}
	a.mon = monitor.New(m.Graph, m.Config)
	devs := map[int]monitor.Device{}
	for _, d := range a.devs {
		if md, ok := d.eng.(monitor.Device); ok {
			devs[d.node] = md
		}
	}
	g := m.Graph
	prio := monitor.LabPrio(m.FlowControl, func(dev int) bool { return g.Nodes[dev].Kind == topo.Host })
	// A deadlock never resolves: the run ends at the tick that found it, nothing after it runs, as on
	// the virtual backend (the end had waited for the backend's stop, wherever the loop had got by
	// then: flows still open delivered a few frames more or less from one run to the next).
	a.mon.Every(a.clk, func() monitor.Snapshot { return monitor.Sample(a.clk.Now(), devs, prio) }, func() {
		a.end = min(a.end, a.clk.Now())
		a.clk.Halt()
	}, nil)
}

// minCatchUpStep bounds catch-up steps from below (each costs a flush and an epoll pass). It was 10 us,
// above a quarter frame time at D < ~300: a frame read in a step is taken at the step's end, and at
// D=150 those errors (each under a frame time, so lateness passed the run) added up where the drop
// threshold and the retransmission timers decide: a 15->1 lossy go-back-N incast dropped 9537-11371
// packets against 6554 on the virtual backend. At 1 us it drops 6562 (2.7 s of wall time, was 0.9 s).
const minCatchUpStep = 1 * clock.Microsecond

// completedElsewhere records flows another agent completed (called from the control reader).
func (a *agent) completedElsewhere(ids []uint32, at []clock.Time) {
	if len(at) != len(ids) {
		at = make([]clock.Time, len(ids))
	}
	a.remoteMu.Lock()
	a.remote = append(a.remote, ids...)
	a.remoteAt = append(a.remoteAt, at...)
	a.remotePending.Store(true)
	a.remoteMu.Unlock()
	a.notify()
}

func (a *agent) requestStop() {
	a.stop.Store(true)
	a.notify()
}

// notify wakes the loop for what the control reader posted, unless the loop is the reader
// (readControl): then it acts on it before it waits again, and the eventfd would only cost it a wake-up.
func (a *agent) notify() {
	if a.ctl == nil {
		a.wake.signal()
	}
}

func (a *agent) violation(s string) { a.log.Violations = append(a.log.Violations, s) }

// run is the event loop. It returns when stop is requested or the clock passes end.
func (a *agent) run(epoch int64, end clock.Time, done, reachedEnd func()) error {
	a.cpu0 = processCPU()
	a.clk.SetEpoch(epoch) // the engines hold this clock already; nothing has read it yet
	// Captures are stamped with the wall time of the run's start plus the engine time of each frame.
	start := time.Now().Add(-a.clk.Wall().Duration())
	for _, p := range a.ports {
		if p.pcap != nil {
			p.pcap.Base = start
		}
	}
	a.watch()
	if a.lock.on {
		a.sampleStalls()
	}
	a.scheduleFaults() // live.go
	return a.loop(end, done, reachedEnd)
}
