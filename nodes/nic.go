package nodes

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
)

// RoCEv2 UDP destination port and IP protocol.
const (
	RoCEv2Port  = 4791
	ProtoUDP    = 17
	sportBase   = 49152 // RoCEv2 source ports are taken from the dynamic range, as NICs do
	sportRandom = 0x3FFF
)

// Flow is a message the backend asks a NIC to send, at the flow's start time.
type Flow struct {
	ID   uint32
	Dst  int32 // destination host index
	Size int64 // application bytes
	// Route is the source route from this NIC (Route[0] = egress port here); nil forwards by table and
	// picks this NIC's egress port from Config.FIB by a hash of the flow.
	Route []uint8
	// Then, when set, is the source route of the packets whose last payload byte lies beyond After bytes
	// of the message (HYBRID: ECMP first, VLB for the rest). Then[0] must be the port Route[0] (or the
	// table) picks: a flow keeps its NIC queue.
	Then  []uint8
	After int64
	// Paths, when set, are candidate source routes the NIC may move the flow between (Config.PathSelect);
	// Paths[0] must be Route. Under telemetry and ugal all must leave by the same port (a flow keeps its
	// NIC queue while it moves); ate picks one before the flow is queued, so its candidates may leave by
	// different ports (ate.go).
	Paths [][]uint8
	// Base is Route's (or the table path's) base delays, ThenBase Then's, PathBases each candidate's
	// (aligned with Paths). They size the per-path transport limits (Config.BDPCapPath) and the
	// reroute idle wait (telemetry.go); zero: unknown, and the NIC falls back to Config.BDPCapBytes.
	Base      PathBase
	ThenBase  PathBase
	PathBases []PathBase
	Ideal     clock.Time // standalone FCT the lab computed (IdealFCT), copied into the record
	Class     string
	Prio      uint8 // 0 = Config.DataPrio
}

// PathBase is a route's delays on an idle fabric: OneWay is propagation plus one full data frame's
// serialization per hop (when a packet sent now arrives); RTT is propagation both ways plus that
// serialization, IRN's "base RTT" of the path; RateBps is its slowest link (0: the NIC port's rate).
type PathBase struct {
	OneWay  clock.Time `json:"one_way_ps,omitempty"`
	RTT     clock.Time `json:"rtt_ps,omitempty"`
	RateBps float64    `json:"rate_bps,omitempty"`
}

// Stats are the NIC's counters beyond records.Counters.
type Stats struct {
	TxData, TxAck, TxNack, TxCNP uint64
	RxData, RxAck, RxNack, RxCNP uint64
	RxPFC, RxPortFC              uint64
	Retransmits, Timeouts        uint64
	GoBacks                      uint64 // go-back-N rewinds (NACK or timeout)
	Duplicates                   uint64 // data packets received below the expected PSN
	OutOfOrder                   uint64 // data packets received above the expected PSN
	LosslessGaps                 uint64 // lossless holes a retransmission filled: a packet was lost
	Reordered                    uint64 // data packets that arrived after one of their flow sent later
	ReorderHeld                  uint64 // packets the reorder buffer held (Config.ReorderBuffer)
	ReorderPeak                  uint64 // the most packets one flow's reorder buffer held at once
	ECNMarked                    uint64 // CE-marked data packets received
	Relayed                      uint64
	NoRoute                      uint64
	Unknown                      uint64 // ACK/NACK/CNP for a flow this NIC does not (any longer) send
	TxProbe, RxProbe             uint64 // path test messages and replies (telemetry.go)
	Reroutes                     uint64 // flows moved to another candidate path
}

// FlowState is a snapshot of a sending QP, for tests and monitors.
type FlowState struct {
	SndUna, SndNxt, SndHigh uint32 // cumulative ACK, next new PSN, one past the highest PSN sent
	Packets                 uint32
	MaxInFlight             uint32 // the largest SndHigh-SndUna seen
	RateBps, TargetBps      float64
	Alpha                   float64 // DCQCN's or DCTCP's
	Cwnd                    float64 // DCTCP's window in packets
	Timeouts                uint64
	Retransmits             int64
	Done                    bool
	// Path is the index of the candidate route (Flow.Paths) the flow sends on, Reroutes how often it
	// moved; 0 for flows without candidates.
	Path, Reroutes int
}

// NIC is one host's network interface: sender QPs, receiver state, egress ports, relay.
type NIC struct {
	cfg    Config
	clk    clock.Clock
	log    *records.Log
	layout Layout
	plug   Plugins
	pool   *pkt.Pool // nil: allocate every packet (see SetPool)
	// onComplete, if set, hears every flow this NIC completes, in the completing event (SetOnComplete).
	onComplete func(id uint32, finish clock.Time)

	ports    []*egress.Port
	lanes    [][]*lane // [port][queue], nil where no local flow has used the queue yet
	control  []int     // control queue per port
	maxQueue []int
	pfc      [][8]clock.HeldTimer

	qps       map[uint32]*qp // active sender QPs
	started   uint64         // flows started, numbering QPs in start order
	active    int
	rx        map[uint32]*rxQP
	ackRoutes map[uint32][]uint8
	// The QPs of the flow last looked up, by id (nil: none): a NIC mostly sends and receives one or a
	// few flows, and each map lookup per frame was two cache lines of a map of another of the fabric's
	// NICs, cold at a thousand hosts.
	lastQP   *qp
	lastRx   *rxQP
	lastQPID uint32
	lastRxID uint32

	stats    Stats
	counters records.Counters
	flushed  bool

	windowOpen bool // MeasureFrom has passed

	ingress *ingressPFC // relay_pfc "ingress": PFC on relayed bytes per (ingress port, priority)
	mem     *nicMem     // finite NIC memory and its guard (nicmem.go); nil: unbounded
	pass    *passThrough
	ate     *ateState // PathSelect "ate" (ate.go); made at the first flow with a choice
}

// New builds a NIC with the default queue layout and PFC handling. links[i] carries port i's frames
// to its peer (and adds the propagation delay); an entry may be nil and set later with SetLink.
func New(cfg Config, clk clock.Clock, links []egress.Link, log *records.Log) (*NIC, error) {
	return NewWith(cfg, clk, links, log, Plugins{})
}

// NewWith is New with a queue layout and flow-control hooks (PortFC).
func NewWith(cfg Config, clk clock.Clock, links []egress.Link, log *records.Log, plug Plugins) (*NIC, error) {
	c, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	if len(links) > len(c.Ports) {
		return nil, fmt.Errorf("nodes: %d links for %d ports", len(links), len(c.Ports))
	}
	if log == nil {
		log = &records.Log{}
	}
	n := &NIC{cfg: c, clk: clk, log: log, plug: plug, layout: plug.Layout,
		qps: map[uint32]*qp{}, rx: map[uint32]*rxQP{}, ackRoutes: map[uint32][]uint8{}}
	if plug.Layout == nil && plug.OnPFC == nil && plug.OnPortFC == nil {
		n.plug = configPlugins(c) // Config.FlowControl and RelayPFC, as plain data (portfc.go)
		n.layout = n.plug.Layout
		n.pass = n.plug.pass
	}
	if n.layout == nil {
		n.layout = PrioLayout{}
	}
	n.counters.Device = c.Device
	np := len(c.Ports)
	n.ports = make([]*egress.Port, np)
	n.lanes = make([][]*lane, np)
	n.control = make([]int, np)
	n.maxQueue = make([]int, np)
	n.pfc = make([][8]clock.HeldTimer, np)
	for i, pc := range c.Ports {
		nq := n.layout.Queues(i)
		ctl := n.layout.Control(i)
		if ctl < 0 || ctl >= nq {
			return nil, fmt.Errorf("nodes: layout: control queue %d of port %d out of range 0..%d", ctl, i, nq-1)
		}
		var link egress.Link
		if i < len(links) {
			link = links[i]
		}
		port := i
		p, err := egress.New(egress.Config{RateBps: pc.RateBps, Queues: nq, Strict: []int{ctl}, Overhead: pc.Overhead,
			Weights: relayWeights(n.layout, i, nq, c.RelayWeight)},
			clk, link, egress.Hooks{
				Dequeue: func(q int, p *pkt.Packet) { n.dequeued(port, q, p) },
				Sent:    n.sent,
			})
		if err != nil {
			return nil, fmt.Errorf("nodes: port %d: %w", i, err)
		}
		n.ports[i] = p
		n.lanes[i] = make([]*lane, nq)
		n.control[i] = ctl
	}
	n.ingress = newIngressPFC(n)
	if n.mem, err = newNICMem(n); err != nil {
		return nil, err
	}
	if c.MeasureFrom > 0 {
		clk.AfterFunc(c.MeasureFrom-clk.Now(), n.openWindow)
	}
	return n, nil
}

// SetLink attaches port i's link (backends wire links after devices exist).
func (n *NIC) SetLink(i int, l egress.Link) { n.ports[i].SetLink(l) }

// Config returns the NIC's configuration with defaults resolved.
func (n *NIC) Config() Config { return n.cfg }

// Port returns egress port i (queue samples, PortFC hooks).
func (n *NIC) Port(i int) *egress.Port { return n.ports[i] }

// NumPorts is the number of ports.
func (n *NIC) NumPorts() int { return len(n.ports) }

// Stats returns the NIC's counters.
func (n *NIC) Stats() Stats { return n.stats }

// Active is the number of flows this NIC started that have not completed.
func (n *NIC) Active() int { return n.active }

// AckRoute pins the source route this NIC uses for ACK/NACK/CNP frames of flow id (it is the flow's
// receiver). Without it they are forwarded by table (Config.FIB here, FIBs downstream).
func (n *NIC) AckRoute(id uint32, route []uint8) { n.ackRoutes[id] = route }

// ackRoute is flow id's pinned ACK route, nil if none. Most labs pin none: the map's length, in its
// header, spares the lookup.
func (n *NIC) ackRoute(id uint32) []uint8 {
	if len(n.ackRoutes) == 0 {
		return nil
	}
	return n.ackRoutes[id]
}

// FlowState reports a sending flow's state; ok is false once the flow completed (or never existed).
func (n *NIC) FlowState(id uint32) (FlowState, bool) {
	q := n.qps[id]
	if q == nil {
		return FlowState{}, false
	}
	s := FlowState{SndUna: q.sndUna, SndNxt: q.sndNxt, SndHigh: q.sndHigh, Packets: q.npkts, MaxInFlight: q.maxInFlight,
		RateBps: q.rate, TargetBps: q.lineRate, Timeouts: q.timeouts, Retransmits: q.rec.Retransmits, Done: q.done}
	if q.sel != nil {
		s.Path, s.Reroutes = q.sel.cur, q.sel.reroutes
	}
	if q.cc != nil {
		q.cc.catchUp(n.clk.Now())
		s.TargetBps, s.Alpha = q.cc.target, q.cc.alpha
	}
	if q.dc != nil {
		s.Alpha, s.Cwnd = q.dc.alpha, q.dc.cwnd
	}
	return s, true
}

// PauseQueue pauses or resumes egress queue q of port (FC hooks). The control queue ignores it.
func (n *NIC) PauseQueue(port, q int, on bool) { n.ports[port].Pause(q, on) }

// SendControl sends a frame out of port in the strict control queue (FC hooks relaying pauses).
func (n *NIC) SendControl(port int, p *pkt.Packet) { n.enqueue(port, n.control[port], p) }

// openWindow starts the measurement window: what active flows acknowledged so far is not counted.
func (n *NIC) openWindow() {
	n.windowOpen = true
	for _, q := range n.qps {
		q.windowBase = q.ackedBytes()
	}
}

// closeWindow records what the flow delivered inside the measurement window.
func (q *qp) closeWindow() {
	if q.n.windowOpen {
		q.rec.WindowBytes = q.ackedBytes() - q.windowBase
	}
}

// SetPool makes the NIC take the packets it sends from pl and put back the ones addressed to it once
// handled. Every engine sharing pl must run on one goroutine (the virtual backend's, or a netns
// agent's loop).
func (n *NIC) SetPool(pl *pkt.Pool) { n.pool = pl }

// SetOnComplete makes the NIC call f with every flow it completes, inside the event that completes it:
// a backend that starts flows when others complete (ps, moe) then releases them at the completion's
// instant on every backend, not wherever its loop next looks at the records.
func (n *NIC) SetOnComplete(f func(id uint32, finish clock.Time)) { n.onComplete = f }

// Flush writes the NIC's counters and a record for every flow it started that has not completed. Call it
// once at the end of a run; later calls do nothing.
func (n *NIC) Flush() {
	if n.flushed {
		return
	}
	n.flushed = true
	open := make([]*qp, 0, len(n.qps))
	for _, q := range n.qps {
		open = append(open, q)
	}
	sort.Slice(open, func(i, j int) bool { return open[i].seq < open[j].seq }) // start order
	for _, q := range open {
		q.rec.Delivered = q.ackedBytes()
		q.closeWindow()
		n.log.Flows = append(n.log.Flows, q.rec)
	}
	c := n.counters
	c.ECNMarked = n.stats.ECNMarked
	c.Retransmits = n.stats.Retransmits
	c.CNPsSent = n.stats.TxCNP
	c.Reordered = n.stats.Reordered
	c.ReorderHeld, c.ReorderPeak = n.stats.ReorderHeld, n.stats.ReorderPeak
	c.MaxQueue = append([]int(nil), n.maxQueue...)
	if n.mem != nil {
		c.NICMemBytes, c.NICMemPeak, c.NICMemPauses, c.NICMemDrops = n.mem.cfg.Bytes, n.mem.peak, n.mem.pauses, n.mem.drops
	}
	n.log.Counters = append(n.log.Counters, c)
}

// Receive handles a frame that arrived on port.
func (n *NIC) Receive(port int, p *pkt.Packet) {
	n.counters.RxFrames++
	p.InPort = int16(port)
	switch p.Kind {
	case pkt.PFC:
		n.stats.RxPFC++
		if n.plug.OnPFC != nil {
			n.plug.OnPFC(n, port, p)
		} else {
			n.handlePFC(port, p)
		}
		n.pool.Put(p)
		return
	case pkt.PortFC:
		n.stats.RxPortFC++
		if n.plug.OnPortFC != nil {
			n.plug.OnPortFC(n, port, p)
		}
		return
	}
	if p.Dst != n.cfg.Host {
		n.relay(port, p)
		return
	}
	switch p.Kind {
	case pkt.Data:
		n.onData(port, p)
	case pkt.Ack:
		n.stats.RxAck++
		n.onAck(p, false)
	case pkt.Nack:
		n.stats.RxNack++
		n.onAck(p, true)
	case pkt.CNP:
		n.stats.RxCNP++
		if q := n.qps[p.Flow]; q != nil && q.cc != nil {
			q.cc.onCNP(n.clk.Now())
		} else if q == nil {
			n.stats.Unknown++
		}
	case pkt.Probe:
		n.onProbe(p) // telemetry.go
	default:
		// Kernel frames have no NIC-side meaning here.
		return
	}
	// The frame's journey ends here, and nothing above keeps it (the reorder buffer keeps PSNs).
	n.pool.Put(p)
}

// handlePFC applies an 802.1Qbb frame: each enabled priority is paused for its quanta (512 bit times
// each at this port's rate), or resumed when the quanta are 0. A new frame replaces the running timer,
// as on real hardware.
func (n *NIC) handlePFC(port int, p *pkt.Packet) {
	now := n.clk.Now()
	rate := n.cfg.Ports[port].RateBps
	for prio := 0; prio < 8; prio++ {
		if p.PauseMask&(1<<uint(prio)) == 0 {
			continue
		}
		quanta := p.PauseQuanta[prio]
		on := quanta > 0
		n.log.AddPause(records.Pause{At: now, Device: n.cfg.Device, Kind: records.Host,
			Port: int16(port), Queue: int16(prio), On: on})
		t := &n.pfc[port][prio]
		n.setPrioPaused(port, prio, on)
		if !on {
			t.Stop()
			continue
		}
		if !t.HasFunc() {
			pr := prio
			t.SetFunc(func() { n.setPrioPaused(port, pr, false) })
		}
		t.Arm(n.clk, clock.TxTime(int(quanta)*512/8, rate)) // replaces the running one
	}
}

func (n *NIC) setPrioPaused(port, prio int, on bool) {
	for _, q := range n.layout.PFC(port, prio) {
		n.ports[port].Pause(q, on)
	}
}

// enqueue puts a frame on an egress queue and keeps the per-port occupancy maximum.
func (n *NIC) enqueue(port, q int, p *pkt.Packet) {
	e := n.ports[port]
	e.Enqueue(q, p)
	if b := e.TotalBytes(); b > n.maxQueue[port] {
		n.maxQueue[port] = b
	}
}

func (n *NIC) sent(p *pkt.Packet) {
	n.counters.TxFrames++
}

func (n *NIC) dequeued(port, q int, p *pkt.Packet) {
	if n.mem != nil && q != n.control[port] && p.Kind == pkt.Data {
		n.mem.release(p)
	}
	if n.ingress != nil && q != n.control[port] && p.Dst != n.cfg.Host && p.Src != n.cfg.Host {
		n.ingress.released(p)
	}
	if l := n.lanes[port][q]; l != nil {
		if p.Kind == pkt.Data && p.Src == n.cfg.Host {
			l.queued--
			l.queuedBytes -= int(p.Size)
		}
		l.refill()
	}
}

// relayWeights are port's DRR weights: Config.RelayWeight on the queues relayed data takes (none
// under FIFOLayout, where relayed and local data share a queue), 1 elsewhere.
func relayWeights(l Layout, port, queues, w int) []int {
	if w <= 1 {
		return nil
	}
	if _, ok := l.(FIFOLayout); ok {
		return nil
	}
	ws := make([]int, queues)
	for prio := 0; prio < 8; prio++ {
		if q := l.Relay(port, &pkt.Packet{Prio: uint8(prio)}); q >= 0 && q < queues {
			ws[q] = w
		}
	}
	return ws
}

// relay forwards a frame addressed to another host: by its source route when it has one left, else by
// FIB. Data goes to the layout's relay queue, so relayed traffic shares the port by DRR with local flows
// and still honours pauses of its priority; control frames take the strict queue.
func (n *NIC) relay(inPort int, p *pkt.Packet) {
	if !n.cfg.Relay {
		n.drop(p, "not-for-host")
		return
	}
	port := p.NextPort()
	routed := port >= 0
	if !routed {
		port = n.fibPort(p.Dst, p.FlowHash(uint32(n.cfg.Seed)))
	}
	if port < 0 || port >= len(n.ports) {
		n.drop(p, "no-route")
		return
	}
	if n.mem != nil && p.Kind == pkt.Data && !n.mem.admit(p, true) {
		n.drop(p, fmt.Sprintf("nic-buffer: NIC memory of %d B full", n.mem.cfg.Bytes))
		return
	}
	if n.ingress != nil && !p.Kind.Control() {
		n.ingress.admitted(p) // at the arrival priority (Relay may raise a PFC* tag); before Enqueue: an idle port dequeues at once
	}
	q := n.control[port]
	if !p.Kind.Control() {
		q = n.layout.Relay(port, p)
	}
	if routed {
		p.Hop++
	}
	n.stats.Relayed++
	n.enqueue(port, q, p)
}

// drop records a frame the NIC could not deliver or forward. Like a switch's, a lossless drop is also a
// violation line: lossless modes are lossless wherever the frame was lost.
func (n *NIC) drop(p *pkt.Packet, reason string) {
	n.stats.NoRoute++
	lossless := n.cfg.Transport == Lossless && p.Kind == pkt.Data
	kind, _, _ := strings.Cut(reason, ":")
	n.log.Drops = append(n.log.Drops, records.Drop{At: n.clk.Now(), Device: n.cfg.Device, Port: -1, Queue: -1,
		Flow: p.Flow, Lossless: lossless, Reason: kind})
	if lossless {
		n.log.Violations = append(n.log.Violations, fmt.Sprintf("h%d: lossless drop (%s) of flow %d psn %d at %v",
			n.cfg.Host, reason, p.Flow, p.PSN, n.clk.Now()))
	}
}

// fibPort picks an egress port toward host dst from the FIB by hash; a one-port NIC needs no FIB.
func (n *NIC) fibPort(dst int32, hash uint32) int {
	if c := n.cfg.FIB.Ports(int(dst)); len(c) > 0 {
		return int(c[hash%uint32(len(c))])
	}
	if len(n.ports) == 1 {
		return 0
	}
	return -1
}

// mix32 is a small integer hash (splitmix-style finaliser) for deriving SPorts and ECMP choices from
// flow ids deterministically.
func mix32(x uint64) uint32 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return uint32(x)
}
