package nodes

import (
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
)

// qp is a sending queue pair: one flow's transmit state.
type qp struct {
	n     *NIC
	id    uint32
	seq   uint64 // start order on this NIC
	dst   int32
	route []uint8
	then  []uint8 // route past `after` payload bytes (Flow.Then)
	after int64
	prio  uint8
	sport uint16
	port  int
	lane  *lane

	npkts       uint32
	mtu         int32
	lastPayload int32

	// PSN state. sndUna: cumulative ACK (next PSN the receiver expects); sndNxt: next PSN to send as new
	// data (go-back-N rewinds it); sndHigh: one past the highest PSN ever sent, so a PSN below it is a
	// retransmission.
	sndUna, sndNxt, sndHigh uint32
	maxInFlight             uint32
	capPkts                 uint32   // BDP-FC: max sndNxt-sndUna on route; 0 = none
	capThen                 uint32   // the same on then (Flow.Then)
	base                    PathBase // route's base delays (Flow.Base; the path it moved to since)
	windowBase              int64    // bytes acknowledged when the measurement window opened

	// IRN selective repeat: PSNs the receiver SACKed, and the loss frontier. Every unSACKed PSN in
	// [rtxNext, lossBound) is lost and is resent once per detection; lossBound is the highest SACK
	// (a later packet arrived, so earlier holes are lost) or, after a timeout, everything sent.
	sacked    map[uint32]struct{}
	rtxNext   uint32
	lossBound uint32

	// Pacing: the QP may hand its next packet to the egress queue one packet time at the current rate
	// after the last one (readyAt).
	rate, lineRate float64
	sentAt         clock.Time
	lastSize       int32

	// Retransmission timer, lazily re-armed: rtoBase is the last progress (or first send), the deadline is
	// rtoBase + rto(); the clock timer fires at or before the deadline and re-arms itself if early.
	rtoOn      bool
	rtoBase    clock.Time
	rtoTimer   clock.Timer
	rtoArmedAt clock.Time
	rtoFire    func()
	timeouts   uint64

	cc     *dcqcn
	dc     *dctcp    // CC dctcp: the window (dctcp.go)
	sel    *pathSel  // choice among Flow.Paths by measured delay (telemetry.go); nil without candidates
	spread *spreader // choice among Flow.Paths by hash or round robin (spread.go); nil without candidates

	rec  records.Flow
	done bool
}

// StartFlow starts sending f now; the flow's record has Start = Now(). It fails (and starts nothing)
// for a flow it cannot send: a duplicate id, this host as destination, no route.
func (n *NIC) StartFlow(f Flow) error {
	now := n.clk.Now()
	if _, dup := n.qps[f.ID]; dup {
		return fmt.Errorf("nodes: h%d: flow %d already active", n.cfg.Host, f.ID)
	}
	if f.Dst == n.cfg.Host {
		return fmt.Errorf("nodes: h%d: flow %d is addressed to its own host", n.cfg.Host, f.ID)
	}
	if f.Size < 0 {
		return fmt.Errorf("nodes: flow %d: negative size %d", f.ID, f.Size)
	}
	if n.cfg.PathSelect == SelectATE {
		n.ateChoose(&f) // ate.go: the route is chosen once, before the flow's port is known
	}
	port := -1
	if len(f.Route) > 0 {
		port = int(f.Route[0])
	} else {
		f.Route = nil
		port = n.fibPort(f.Dst, mix32(uint64(f.ID)^n.cfg.Seed<<32^0x5bd1e995))
	}
	if port < 0 || port >= len(n.ports) {
		return fmt.Errorf("nodes: h%d: flow %d to h%d: no egress port (route %v, fib)", n.cfg.Host, f.ID, f.Dst, f.Route)
	}
	if len(f.Then) > 0 && (int(f.Then[0]) != port || f.After < 0) {
		return fmt.Errorf("nodes: h%d: flow %d: second route leaves by port %d after %d bytes, want port %d and a non-negative offset",
			n.cfg.Host, f.ID, f.Then[0], f.After, port)
	}
	if err := n.checkPaths(&f, port); err != nil {
		return err
	}
	prio := f.Prio
	if prio == 0 {
		prio = n.cfg.DataPrio
	}
	mtu := int64(n.cfg.MTU)
	npk := (f.Size + mtu - 1) / mtu
	if npk == 0 {
		npk = 1 // an empty message is still one (empty) packet that must be acknowledged
	}
	if npk > 1<<31 {
		return fmt.Errorf("nodes: flow %d: %d packets overflow the PSN space", f.ID, npk)
	}
	q := &qp{n: n, id: f.ID, dst: f.Dst, route: f.Route, prio: prio, port: port, after: f.After,
		sport: uint16(sportBase + mix32(uint64(f.ID)^n.cfg.Seed)&sportRandom),
		npkts: uint32(npk), mtu: int32(mtu), lastPayload: int32(f.Size - (npk-1)*mtu)}
	if len(f.Then) > 0 {
		q.then = f.Then
	}
	q.lineRate = n.cfg.Ports[port].RateBps
	q.rate = q.lineRate
	q.base = f.Base
	q.capPkts, q.capThen = q.capFor(f.Base), q.capFor(f.ThenBase)
	if n.cfg.Transport == IRN {
		q.sacked = map[uint32]struct{}{}
	}
	if n.cfg.CC == CCDCQCN {
		q.cc = newDCQCN(q)
	}
	if n.cfg.CC == CCDCTCP {
		q.dc = newDCTCP(q)
	}
	n.started++
	q.seq = n.started
	q.rtoFire = q.onRTOTimer
	q.rec = records.Flow{ID: f.ID, Src: n.cfg.Host, Dst: f.Dst, SPort: q.sport, DPort: RoCEv2Port, Size: f.Size,
		Start: now, Ideal: f.Ideal, Class: f.Class}

	proto := pkt.Packet{Kind: pkt.Data, Src: n.cfg.Host, Dst: f.Dst, Flow: f.ID, SPort: q.sport, DPort: RoCEv2Port,
		Proto: ProtoUDP, Prio: prio, Route: f.Route}
	qi := n.layout.Local(port, &proto)
	if qi < 0 || qi >= n.ports[port].NumQueues() || qi == n.control[port] {
		return fmt.Errorf("nodes: layout put flow %d in queue %d of port %d", f.ID, qi, port)
	}
	l := n.lanes[port][qi]
	if l == nil {
		l = &lane{n: n, port: port, q: qi}
		l.wake = l.onWake
		n.lanes[port][qi] = l
	}
	q.lane = l
	l.qps = append(l.qps, q)
	n.qps[f.ID] = q
	n.active++
	if len(f.Paths) > 1 {
		if n.cfg.PathSelect != "" {
			q.sel = n.newPathSel(q, f.Paths, f.PathBases)
		} else if n.cfg.Spread != "" {
			q.spread = n.newSpreader(q, f.Paths, f.PathBases)
		}
		if q.sel != nil || q.spread != nil {
			q.rec.PathBytes = make([]int64, len(f.Paths))
		}
	}
	l.refill()
	return nil
}

// next returns the PSN the QP would send now if pacing allowed, and whether it has one.
func (q *qp) next() (uint32, bool) {
	if q.sacked != nil { // IRN: holes first
		for q.rtxNext < q.lossBound {
			if _, ok := q.sacked[q.rtxNext]; !ok && q.rtxNext >= q.sndUna {
				return q.rtxNext, true
			}
			q.rtxNext++
		}
	}
	if q.sndNxt >= q.npkts {
		return 0, false
	}
	c := q.capPkts
	if q.then != nil && int64(q.sndNxt+1)*int64(q.mtu) > q.after {
		c = q.capThen
	}
	if c > 0 && q.sndNxt-q.sndUna >= c {
		return 0, false
	}
	if q.dc != nil && q.sndNxt-q.sndUna >= q.dc.window() {
		return 0, false
	}
	if q.sel != nil && q.sel.draining() {
		return 0, false // a reroute waits for the old path's packets (telemetry.go); an ACK refills
	}
	return q.sndNxt, true
}

// capFor is the BDP-FC cap, in packets, of a flow on a path with base delays b: Config.BDPCapBytes
// (IRN's one fabric-wide value, the longest shortest path's BDP), raised under Config.BDPCapPath to
// the path's own bottleneck rate x RTT when that is larger: a non-minimal path longer than the
// diameter would otherwise be held below line rate. 0 = none.
func (q *qp) capFor(b PathBase) uint32 {
	c, mtu := &q.n.cfg, int64(q.mtu)
	bytes := c.BDPCapBytes
	if c.BDPCapPath && b.RTT > 0 {
		rate := q.lineRate
		if b.RateBps > 0 && b.RateBps < rate {
			rate = b.RateBps
		}
		bytes = max(bytes, int64(rate/8*b.RTT.Seconds()+0.5))
	}
	if bytes <= 0 {
		return 0
	}
	return uint32(max((bytes+mtu-1)/mtu, 1))
}

// pathBDPPkts is the current path's bottleneck rate x base RTT in packets (at least 1), from the
// fabric-wide BDP cap when the path's base is unknown, else 10 packets.
func (q *qp) pathBDPPkts() uint32 {
	b := q.base
	if b.RTT <= 0 {
		if c := q.n.cfg.BDPCapBytes; c > 0 {
			return uint32(max((c+int64(q.mtu)-1)/int64(q.mtu), 1))
		}
		return 10
	}
	rate := q.lineRate
	if b.RateBps > 0 && b.RateBps < rate {
		rate = b.RateBps
	}
	return uint32(max(int64(rate/8*b.RTT.Seconds()+0.5)/int64(q.mtu), 1))
}

// usePath moves the flow's new packets to route, whose base delays are b, and sizes every
// path-dependent limit from that path: the one place a path change (telemetry reroute, multipath
// spread) touches transport state.
func (q *qp) usePath(route []uint8, b PathBase) {
	q.route, q.base = route, b
	q.capPkts = q.capFor(b)
}

// send builds data packet psn and hands it to the lane's egress queue.
func (q *qp) send(psn uint32) {
	n := q.n
	now := n.clk.Now()
	payload := q.mtu
	last := psn == q.npkts-1
	if last {
		payload = q.lastPayload
	}
	route, _ := q.routeFor(psn, payload, now) // spread.go
	size := int32(pkt.DataSize(int(payload), len(route)))
	p := n.pool.New(pkt.Packet{Kind: pkt.Data, Size: size, Src: n.cfg.Host, Dst: q.dst, Flow: q.id, SPort: q.sport,
		DPort: RoCEv2Port, Proto: ProtoUDP, Prio: q.prio, ECN: pkt.ECT0, PSN: psn, Payload: payload, Last: last,
		SentAt: now, Route: route, InPort: -1})
	if route != nil {
		p.Hop = 1 // this NIC used Route[0]; the next device reads Route[1]
	}
	if psn < q.sndHigh {
		q.rec.Retransmits++
		n.stats.Retransmits++
	}
	if q.sacked != nil && psn != q.sndNxt {
		q.rtxNext = psn + 1
	} else {
		q.sndNxt = psn + 1
	}
	if psn+1 > q.sndHigh {
		q.sndHigh = psn + 1
	}
	if f := q.sndHigh - q.sndUna; f > q.maxInFlight {
		q.maxInFlight = f
	}
	q.sentAt = now
	q.lastSize = size
	if !q.rtoOn {
		q.rtoOn = true
		q.rtoBase = now
		q.armRTO()
	}
	n.stats.TxData++
	if q.sel != nil {
		q.sel.sent()
	}
	if n.mem != nil {
		n.mem.admit(p, false)
	}
	q.lane.queued++
	q.lane.queuedBytes += int(size)
	n.enqueue(q.port, q.lane.q, p)
}

// readyAt is when the QP may send again. It is derived from the current rate, so a rate change moves it
// exactly as HPCC's ChangeRate shifts nextAvail (by the difference in the last packet's spacing).
// Pacing at line rate would only duplicate the port's own serialization: skip it, and its timer.
func (q *qp) readyAt() clock.Time {
	var t clock.Time
	if q.rate < q.lineRate && q.lastSize != 0 {
		t = q.sentAt + clock.TxTime(int(q.lastSize), q.rate)
	}
	if q.sel != nil && q.sel.idleUntil > t {
		t = q.sel.idleUntil // a go-back-N reroute waits out the old path (telemetry.go)
	}
	return t
}

// rto is the current timeout: IRN picks RTO_low while few packets are outstanding (a tail loss gets no
// NACK, so waiting long would dominate a short flow's FCT) and RTO_high otherwise.
func (q *qp) rto() clock.Time {
	c := &q.n.cfg
	if c.Transport == IRN {
		if q.sndHigh-q.sndUna <= uint32(c.RTOThreshold) {
			return c.RTOLow
		}
		return c.RTOHigh
	}
	return c.RTO
}

// armRTO makes sure the clock timer fires no later than the current deadline.
func (q *qp) armRTO() {
	d := q.rtoBase + q.rto()
	if q.rtoTimer != nil {
		if q.rtoArmedAt <= d {
			return
		}
		q.rtoTimer.Stop()
	}
	q.rtoArmedAt = d
	q.rtoTimer = q.n.clk.AfterFunc(d-q.n.clk.Now(), q.rtoFire)
}

func (q *qp) onRTOTimer() {
	q.rtoTimer = nil
	if !q.rtoOn || q.done {
		return
	}
	now := q.n.clk.Now()
	if d := q.rtoBase + q.rto(); now < d {
		q.armRTO()
		return
	}
	q.timeout()
}

// timeout recovers from a loss no NACK reported: go-back-N rewinds to the cumulative ACK; IRN treats
// every unSACKed outstanding packet as lost. The timer re-arms on the next transmission.
func (q *qp) timeout() {
	n := q.n
	q.timeouts++
	n.stats.Timeouts++
	if q.dc != nil {
		q.dc.onTimeout()
	}
	q.rtoOn = false
	if q.sacked != nil {
		q.rtxNext = q.sndUna
		q.lossBound = q.sndHigh
	} else {
		q.sndNxt = q.sndUna
		n.stats.GoBacks++
	}
	q.lane.refill()
}

// onAck handles an ACK or NACK for a flow this NIC sends.
func (n *NIC) onAck(p *pkt.Packet, nack bool) {
	q := n.lastQP
	if q == nil || n.lastQPID != p.Flow {
		q = n.qps[p.Flow]
		n.lastQP, n.lastQPID = q, p.Flow
	}
	if q == nil {
		n.stats.Unknown++
		return
	}
	now := n.clk.Now()
	if q.sel != nil && !nack {
		q.sel.acked(p)
	}
	cum := p.PSN
	if cum > q.sndHigh { // cannot acknowledge what was never sent; ignore the excess
		cum = q.sndHigh
	}
	progress := cum > q.sndUna
	newly := uint32(0)
	if progress {
		newly = cum - q.sndUna
		if len(q.sacked) > 0 {
			if int(cum-q.sndUna) < len(q.sacked) {
				for s := q.sndUna; s < cum; s++ {
					delete(q.sacked, s)
				}
			} else {
				for s := range q.sacked {
					if s < cum {
						delete(q.sacked, s)
					}
				}
			}
		}
		q.sndUna = cum
		if q.sndNxt < cum {
			q.sndNxt = cum
		}
		if q.rtxNext < cum {
			q.rtxNext = cum
		}
	}
	if q.sndUna >= q.npkts {
		n.complete(q)
		return
	}
	if q.dc != nil {
		if newly > 0 {
			q.dc.onAck(newly, p.ECN == pkt.CE) // the receiver echoes CE in the ACK's ECN field
		}
		if nack {
			q.dc.onLoss()
		}
	}
	if nack {
		if q.sacked != nil {
			if s := p.SackPSN; s >= q.sndUna && s < q.sndHigh {
				q.sacked[s] = struct{}{}
				if s > q.lossBound {
					q.lossBound = s // every unSACKed PSN below a SACKed one is lost
				}
			}
		} else if q.sndNxt > q.sndUna {
			q.sndNxt = q.sndUna
			n.stats.GoBacks++
		}
	}
	if progress {
		if q.sndUna == q.sndHigh {
			q.rtoOn = false
		} else if q.rtoOn {
			q.rtoBase = now
			q.armRTO()
		}
	}
	q.lane.refill()
}

// complete writes the flow's record (HPCC convention: finish = when the last byte is cumulatively
// acknowledged at the sender) and releases the QP.
func (n *NIC) complete(q *qp) {
	q.done = true
	q.rtoOn = false
	if q.rtoTimer != nil {
		q.rtoTimer.Stop()
		q.rtoTimer = nil
	}
	if q.cc != nil {
		q.cc.stop()
	}
	if q.sel != nil {
		q.sel.stop()
	}
	q.rec.Finish = n.clk.Now()
	q.rec.Completed = true
	q.rec.Delivered = q.rec.Size
	q.closeWindow()
	n.log.Flows = append(n.log.Flows, q.rec)
	delete(n.qps, q.id)
	if n.lastQP == q {
		n.lastQP = nil
	}
	n.active--
	q.lane.remove(q)
	if n.onComplete != nil {
		n.onComplete(q.rec.ID, q.rec.Finish)
	}
}

// lane is one local-data egress queue of one port and the QPs feeding it. It keeps the queue at most
// QueueDepth frames deep, refilling round-robin among QPs that may send whenever a frame leaves, so the
// NIC never hoards a backlog (queues build in switches) and a QP's pacing is what reaches the wire.
type lane struct {
	n       *NIC
	port, q int
	qps     []*qp
	rr      int
	timer   clock.Timer
	timerAt clock.Time
	wake    func()
	// queued/queuedBytes count this lane's own frames in its queue: under FIFOLayout relayed frames
	// share it (localRoom, layout.go).
	queued      int
	queuedBytes int
}

func (l *lane) onWake() {
	l.timer = nil
	l.refill()
}

func (l *lane) refill() {
	n := l.n
	now := n.clk.Now()
	for n.localRoom(l) && len(l.qps) > 0 {
		var earliest clock.Time = -1
		sent := false
		for i := 0; i < len(l.qps); i++ {
			idx := (l.rr + i) % len(l.qps)
			q := l.qps[idx]
			psn, ok := q.next()
			if !ok {
				continue
			}
			if t := q.readyAt(); t > now {
				if earliest < 0 || t < earliest {
					earliest = t
				}
				continue
			}
			l.rr = idx + 1
			q.send(psn)
			sent = true
			break
		}
		if !sent {
			if earliest >= 0 {
				l.armAt(earliest)
			}
			return
		}
	}
}

// armAt makes sure a wake-up happens no later than t.
func (l *lane) armAt(t clock.Time) {
	if l.timer != nil {
		if l.timerAt <= t {
			return
		}
		l.timer.Stop()
	}
	l.timerAt = t
	l.timer = l.n.clk.AfterFunc(t-l.n.clk.Now(), l.wake)
}

func (l *lane) remove(q *qp) {
	for i, x := range l.qps {
		if x == q {
			copy(l.qps[i:], l.qps[i+1:])
			l.qps[len(l.qps)-1] = nil
			l.qps = l.qps[:len(l.qps)-1]
			if l.rr > i {
				l.rr--
			}
			break
		}
	}
	if len(l.qps) == 0 {
		l.rr = 0
		if l.timer != nil {
			l.timer.Stop()
			l.timer = nil
		}
	}
}

// ackedBytes is the application bytes the receiver has cumulatively acknowledged (every PSN below
// sndUna): what an unfinished flow delivered, as the report's goodput over all flows counts it.
func (q *qp) ackedBytes() int64 {
	if q.sndUna >= q.npkts {
		return q.rec.Size
	}
	return int64(q.sndUna) * int64(q.mtu)
}
