// Package switchsw is the switch engine: ports with egress queues (egress.Port: strict control queues,
// DRR among data queues, serialization), a shared-buffer MMU (package mmu), forwarding by source route or
// by table with ECMP and flowlets, RED/ECN marking, counters, and a pluggable flow-control module
// (package fc: lossy, pfc, and later pfcstar and portfc).
//
// Like every engine it is driven only by its clock and by Receive; it never reads the wall clock or
// touches a socket, so the same code runs in virtual time and behind real veths.
package switchsw

import (
	"fmt"
	"math/rand/v2"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/fib"
	"github.com/fabriclab/fabriclab/fifo"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/switchsw/fc"
	"github.com/fabriclab/fabriclab/switchsw/mmu"
)

// meta is what the switch remembers about a queued frame. Egress queues are FIFO, so a FIFO per queue
// in the same order replaces a per-packet map (and a field on pkt.Packet).
type meta struct {
	at    clock.Time // enqueue time: probe delay
	in    int16
	prio  uint8 // priority on arrival: the ingress group to release
	class fc.Class
}

// uncharged marks the meta of an ACK queued with data (Config.AcksWithData): no buffer or pause
// counter holds its bytes.
const uncharged fc.Class = 255

type queueCounters struct{ dropped, marked uint64 }

type portCounters struct {
	pausesSent, resumesSent, refreshesSent uint64
	pausesRecv, resumesRecv, refreshesRecv uint64
	bytes, maxBytes                        int64 // data bytes queued now, and the most at once
}

type flowlet struct {
	hash  uint32
	idx   uint8
	valid bool
	last  clock.Time
}

const flowletBits = 13

// Switch is one switch. Not safe for concurrent use: all calls (Receive, timers) come from the engine's
// goroutine, as the clock contract promises.
//
// What every frame reads (Receive, route, dequeued and the flow-control hooks) comes first, together,
// with copies of the few settings it reads (prios, the lossless priorities, ECN on, ACKs with data): at
// fat-tree k=16 a switch's state is out of cache by its next frame, and those reads were spread over
// eight or more lines of the struct, its configuration's among them.
type Switch struct {
	clk   clock.Clock
	ports []*egress.Port
	meta  []fifo.Queue[meta] // [port*nall+q]
	pc    []portCounters
	fib   fib.Table // cfg.FIB, kept beside the other fields route reads
	// routes is fib by destination with a one-port set's port in place (routeOne | port), else the set's
	// index in fib.Sets: most hops (every hop down a fat-tree) have one port, and each step from
	// fib.Idx to fib.Sets to the set's own array was a cache miss. Nil when fib has too many sets for
	// the index to fit beside the flag: route then reads fib itself.
	routes   []uint16
	mmu      *mmu.MMU
	fc       fc.Module
	nq, nall int // data queues, all queues per port
	fcq, ctq int // strict queues: flow-control frames, then other control frames
	prios    int // cfg.Prios
	rx       uint64
	salt     uint32 // ECMP hash salt: the spec's seed mixed with this switch's ID (ecmpSalt)
	lossless uint8  // cfg.lossless as a bitmask by priority
	acksData bool   // cfg.AcksWithData
	ecn      bool   // cfg.ECN.Enabled
	// The switch's ports share these: queue storage follows what is queued in the switch now, not the
	// sum of every queue's own peak.
	frames   fifo.Pool[*pkt.Packet]
	metas    fifo.Pool[meta]
	classUp  []bool // [in*ports+out]: the turn raises a data frame's class (Config.ClassUp)
	flowlets []flowlet

	cfg      resolved
	log      *records.Log
	red      *rand.Rand
	flowRand *rand.Rand
	qc       []queueCounters // [port*nall+q]

	noRoute, drops, losslessDrops, marked uint64

	sampler  clock.Timer
	sampleFn func()

	// pool recycles the PFC frames the switch sends and receives (SetPool); nil allocates each.
	pool *pkt.Pool
}

// New builds a switch. links[i] carries port i's frames to its peer (nil entries may be set later with
// SetLink, before traffic flows). log receives the switch's records; nil gives the switch its own.
func New(cfg Config, clk clock.Clock, links []egress.Link, log *records.Log) (*Switch, error) {
	r, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	if links != nil && len(links) != len(r.Ports) {
		return nil, fmt.Errorf("switch %d: %d links for %d ports", r.Device, len(links), len(r.Ports))
	}
	if log == nil {
		log = &records.Log{}
	}
	n := len(r.Ports)
	s := &Switch{cfg: r, clk: clk, log: log, nq: r.DataQueues, nall: r.DataQueues + 2,
		fcq: r.DataQueues, ctq: r.DataQueues + 1, prios: r.Prios, acksData: r.AcksWithData, ecn: r.ECN.Enabled}
	for prio, l := range r.lossless {
		if l {
			s.lossless |= 1 << uint(prio)
		}
	}
	s.mmu, err = mmu.New(r.mmu)
	if err != nil {
		return nil, fmt.Errorf("switch %d: %w", r.Device, err)
	}
	s.ports = make([]*egress.Port, n)
	for i, pc := range r.Ports {
		var l egress.Link
		if links != nil {
			l = links[i]
		}
		out := i
		hooks := egress.Hooks{Dequeue: func(q int, p *pkt.Packet) { s.dequeued(out, q, p) }}
		s.ports[i], err = egress.New(egress.Config{RateBps: pc.RateBps, Queues: s.nall, Strict: []int{s.fcq, s.ctq},
			Quantum: r.Quantum, Overhead: pc.Overhead, Pool: &s.frames}, clk, l, hooks)
		if err != nil {
			return nil, fmt.Errorf("switch %d: port %d: %w", r.Device, i, err)
		}
	}
	s.meta = make([]fifo.Queue[meta], n*s.nall)
	s.qc = make([]queueCounters, n*s.nall)
	s.pc = make([]portCounters, n)
	s.red = rand.New(rand.NewPCG(uint64(r.Seed), uint64(int64(r.Device))))
	s.flowRand = rand.New(rand.NewPCG(uint64(r.Seed)^0x9e3779b97f4a7c15, uint64(int64(r.Device))))
	s.salt = ecmpSalt(r.ECMPSeed, r.Device)
	s.setRoutes(r.FIB)
	if r.FlowletGap > 0 {
		s.flowlets = make([]flowlet, 1<<flowletBits)
	}
	if len(r.ClassUp) > 0 {
		s.classUp = make([]bool, n*n)
		for _, t := range r.ClassUp {
			s.classUp[int(t.In)*n+int(t.Out)] = true
		}
	}
	s.fc, err = fc.New((*device)(s), r.FlowControl)
	if err != nil {
		return nil, fmt.Errorf("switch %d: %w", r.Device, err)
	}
	if r.SampleEvery > 0 {
		s.sampleFn = s.sample
		s.sampler = clk.AfterFunc(r.SampleEvery, s.sampleFn)
	}
	return s, nil
}

// SetLink attaches port i's link.
func (s *Switch) SetLink(i int, l egress.Link) { s.ports[i].SetLink(l) }

// SetPool makes the switch take its PFC frames from pl and put back the ones it has read. The pool must
// be the one every engine the switch exchanges frames with uses, on the same goroutine (the virtual
// backend's, or a netns agent's loop). Allocated one by one, PFC frames were 22 MB of the 74 MB a fat-tree k=12 incast
// allocated while running, all of it garbage, and garbage is what the collector lets grow to the size
// of the live heap before it runs: it, not the live heap, set the run's peak.
func (s *Switch) SetPool(pl *pkt.Pool) { s.pool = pl }

// NumPorts is the number of ports.
func (s *Switch) NumPorts() int { return len(s.ports) }

// Port exposes port i's egress (occupancy and pause state, for monitors and tests).
func (s *Switch) Port(i int) *egress.Port { return s.ports[i] }

// MMU exposes the buffer accounting (for monitors and tests).
func (s *Switch) MMU() *mmu.MMU { return s.mmu }

// FlowControl is the switch's flow-control module.
func (s *Switch) FlowControl() fc.Module { return s.fc }

// Log is the log the switch writes to.
func (s *Switch) Log() *records.Log { return s.log }

// Stop cancels the switch's own periodic work (queue sampling) so a virtual clock can run dry. Frames in
// flight and pause timers are left alone.
func (s *Switch) Stop() {
	if s.sampler != nil {
		s.sampler.Stop()
		s.sampler = nil
		s.sampleFn = nil
	}
}

// Receive takes a frame whose last bit arrived on port. Flow-control frames go to the flow-control
// module; everything else is forwarded.
func (s *Switch) Receive(port int, p *pkt.Packet) {
	s.rx++
	p.InPort = int16(port)
	if p.Kind == pkt.PFC || p.Kind == pkt.PortFC {
		s.fc.Receive(port, p)
		if p.Kind == pkt.PFC {
			// Modules read a PFC frame and keep nothing of it. PortFC frames are left alone: a node may
			// relay them.
			s.pool.Put(p)
		}
		return
	}
	out := s.route(p)
	if out < 0 {
		s.noRoute++
		s.drop(-1, -1, p, false, "no-route")
		return
	}
	routed := p.NextPort() >= 0
	if s.acksData && (p.Kind == pkt.Ack || p.Kind == pkt.Nack) {
		// FIFO with data (Config.AcksWithData): the meta's class tells dequeued that nothing was charged.
		q := fc.QueueOf((*device)(s), int(s.cfg.AckDataPrio))
		s.meta[out*s.nall+q].Push(&s.metas, meta{at: s.clk.Now(), in: int16(port), class: uncharged})
		if routed {
			p.Hop++
		}
		s.ports[out].Enqueue(q, p)
		return
	}
	if p.Kind.Control() {
		// Control frames are small, strict priority and never paused, so they drain at line rate; the MMU
		// does not account them.
		s.meta[out*s.nall+s.ctq].Push(&s.metas, meta{at: s.clk.Now(), in: int16(port)})
		if p.Kind == pkt.Probe && !p.Last {
			// A path test message bypasses data in the strict queue, so it carries the queueing delay a
			// data frame of its priority would see here instead: the backlog ahead of it at line rate
			// (telemetry routing, telemetry paper §III, Fig. 3). Replies (Last) carry the forward delay
			// back unchanged.
			eg := s.ports[out]
			p.ProbeDelay += clock.TxTime(eg.Bytes(fc.QueueOf((*device)(s), int(p.Prio))), eg.Rate())
		}
		if routed {
			p.Hop++
		}
		s.ports[out].Enqueue(s.ctq, p)
		return
	}
	prio := int(p.Prio)
	if prio >= s.prios {
		prio = s.prios - 1
	}
	if s.classUp != nil && s.classUp[port*len(s.ports)+out] && int(p.Prio) < s.prios-1 {
		p.Prio++ // queued, sent and paused downstream in the next class; admitted here in the old one
	}
	q, class := s.fc.Classify(out, p)
	if q < 0 || q >= s.nq {
		panic(fmt.Sprintf("switchsw: flow-control classifier returned queue %d of %d", q, s.nq))
	}
	size := int64(p.Size)
	var ok bool
	if class == fc.LosslessIngress {
		ok = s.mmu.AdmitIngress(port, prio, size)
	} else {
		ok = s.mmu.AdmitEgress(out, q, size, class == fc.Lossy)
	}
	if !ok {
		reason := "buffer"
		if class == fc.LosslessIngress {
			reason = "headroom"
		}
		s.drop(out, q, p, class.Lossless(), reason)
		return
	}
	if routed {
		p.Hop++
	}
	s.fc.Enqueued(fc.Loc{In: port, InPrio: prio, Out: out, Queue: q, Class: class}, p)
	s.meta[out*s.nall+q].Push(&s.metas, meta{at: s.clk.Now(), in: int16(port), prio: uint8(prio), class: class})
	pc := &s.pc[out]
	pc.bytes += size
	if pc.bytes > pc.maxBytes {
		pc.maxBytes = pc.bytes
	}
	s.ports[out].Enqueue(q, p)
}

// route picks the egress port, or -1. A source route wins; an exhausted or absent one falls back to the
// table. It leaves Hop alone: the classifier reads the route relative to this device (PortFC's
// PortAhead(2)), and Receive advances Hop just before the frame joins its queue.
func (s *Switch) route(p *pkt.Packet) int {
	if out := p.NextPort(); out >= 0 {
		if out >= len(s.ports) {
			return -1
		}
		return out
	}
	if p.Dst < 0 || int(p.Dst) >= len(s.fib.Idx) {
		return -1
	}
	var set []uint8
	if s.routes != nil {
		r := s.routes[p.Dst]
		if r&routeOne != 0 {
			return int(r &^ routeOne)
		}
		set = s.fib.Sets[r]
	} else {
		set = s.fib.Sets[s.fib.Idx[p.Dst]]
	}
	switch len(set) {
	case 0:
		return -1
	case 1:
		return int(set[0])
	}
	h := fmix32(p.FlowHash(s.salt))
	if s.flowlets == nil {
		return int(set[h%uint32(len(set))])
	}
	f := &s.flowlets[h&(1<<flowletBits-1)]
	now := s.clk.Now()
	if f.valid && f.hash == h && now-f.last <= s.cfg.FlowletGap && int(f.idx) < len(set) {
		f.last = now
		return int(set[f.idx])
	}
	idx := s.flowRand.IntN(len(set))
	*f = flowlet{hash: h, idx: uint8(idx), valid: true, last: now}
	return int(set[idx])
}

// routeOne flags an entry of Switch.routes that is a port, not a set's index.
const routeOne = 1 << 15

// setRoutes makes t the switch's table, and routes from it.
func (s *Switch) setRoutes(t fib.Table) {
	s.fib, s.routes = t, nil
	if len(t.Sets) > routeOne {
		return
	}
	routes := make([]uint16, len(t.Idx))
	for d, i := range t.Idx {
		if set := t.Sets[i]; len(set) == 1 {
			routes[d] = routeOne | uint16(set[0])
		} else {
			routes[d] = i
		}
	}
	s.routes = routes
}

// ecmpSalt gives each switch its own ECMP hash. With one seed everywhere, an edge and an aggregation
// switch with the same number of uplinks pick the same index for a flow, so a flow that went up port i
// at the edge goes up port i again at the aggregation: on a fat-tree k=12 only 6 of 36 cores carried
// bytes (polarization). Real switches salt the hash per device for this reason.
func ecmpSalt(seed uint32, device int32) uint32 {
	x := uint64(seed)<<32 | uint64(uint32(device))
	// splitmix64's finalizer: nearby (seed, device) pairs give unrelated salts.
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return uint32(x ^ x>>31)
}

// fmix32 is MurmurHash3's finalizer. FlowHash takes the salt only as its starting value; mixing after
// it makes every output bit, the low bits that pick a port included, depend on salt and 5-tuple alike.
func fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

func (s *Switch) dequeued(out, q int, p *pkt.Packet) {
	i := out*s.nall + q
	m := s.meta[i].Pop(&s.metas)
	// Data frames accumulate their measured residence for the receiver to reflect in ACKs (telemetry's
	// piggybacked delay); probes add their own wait in the control queue. Probe replies do not: they
	// carry the forward delay of the probe they answer.
	if p.Kind == pkt.Data || (p.Kind == pkt.Probe && !p.Last) {
		p.ProbeDelay += s.clk.Now() - m.at
	}
	if q >= s.nq || m.class == uncharged {
		return
	}
	size := int64(p.Size)
	if m.class == fc.LosslessIngress {
		s.mmu.ReleaseIngress(int(m.in), int(m.prio), size)
	} else {
		s.mmu.ReleaseEgress(out, q, size)
	}
	s.pc[out].bytes -= size
	// Marking at dequeue, on what the frame leaves behind, as HPCC's ns-3 switch does: the mark carries
	// the freshest queue state to the receiver.
	if s.ecn && (p.ECN == pkt.ECT0 || p.ECN == pkt.ECT1) && s.redMark(s.ports[out].Bytes(q)) {
		p.ECN = pkt.CE
		s.qc[i].marked++
		s.marked++
	}
	s.fc.Dequeued(fc.Loc{In: int(m.in), InPrio: int(m.prio), Out: out, Queue: q, Class: m.class}, p)
}

// redMark draws the RED decision for a queue of bytes: never below Kmin, with probability rising
// linearly to PMax at Kmax, always above Kmax.
func (s *Switch) redMark(bytes int) bool {
	e := &s.cfg.ECN
	b := int64(bytes)
	switch {
	case b <= e.KMinBytes:
		return false
	case b > e.KMaxBytes:
		return true
	}
	return s.red.Float64() < e.PMax*float64(b-e.KMinBytes)/float64(e.KMaxBytes-e.KMinBytes)
}

// MarkProbability is the RED curve the switch applies (for tests and reports).
func (s *Switch) MarkProbability(bytes int) float64 {
	e := &s.cfg.ECN
	b := int64(bytes)
	switch {
	case !e.Enabled || b <= e.KMinBytes:
		return 0
	case b > e.KMaxBytes:
		return 1
	}
	return e.PMax * float64(b-e.KMinBytes) / float64(e.KMaxBytes-e.KMinBytes)
}

func (s *Switch) drop(out, q int, p *pkt.Packet, lossless bool, reason string) {
	s.drops++
	if out >= 0 && q >= 0 {
		s.qc[out*s.nall+q].dropped++
	}
	s.log.Drops = append(s.log.Drops, records.Drop{At: s.clk.Now(), Device: s.cfg.Device, Port: int16(out),
		Queue: int16(q), Flow: p.Flow, Lossless: lossless, Reason: reason})
	if lossless {
		s.losslessDrops++
		s.log.Violations = append(s.log.Violations, fmt.Sprintf(
			"switch %d port %d queue %d: lossless drop (%s) of flow %d psn %d from port %d at %v",
			s.cfg.Device, out, q, reason, p.Flow, p.PSN, p.InPort, s.clk.Now()))
	}
}

func (s *Switch) sample() {
	now := s.clk.Now()
	for i, port := range s.ports {
		s.log.Samples = append(s.log.Samples, records.QueueSample{At: now, Device: s.cfg.Device, Port: int16(i),
			Queue: -1, Bytes: int32(s.pc[i].bytes)})
		for q := 0; q < s.nq; q++ {
			if b := port.Bytes(q); b > 0 {
				s.log.Samples = append(s.log.Samples, records.QueueSample{At: now, Device: s.cfg.Device,
					Port: int16(i), Queue: int16(q), Bytes: int32(b)})
			}
		}
	}
	s.sampler = s.clk.AfterFunc(s.cfg.SampleEvery, s.sampleFn)
}

// device is the Switch as the flow-control module sees it; a separate method set keeps these hooks out
// of the Switch's public API.
type device Switch

// device implements fc.Device: the one view of a switch every flow-control mode is written against.
var _ fc.Device = (*device)(nil)

func (d *device) ID() int32               { return d.cfg.Device }
func (d *device) Clock() clock.Clock      { return d.clk }
func (d *device) NumPorts() int           { return len(d.ports) }
func (d *device) Port(i int) *egress.Port { return d.ports[i] }
func (d *device) DataQueues() int         { return d.nq }
func (d *device) Prios() int              { return d.prios }
func (d *device) Lossless(prio int) bool  { return d.lossless>>uint(prio)&1 != 0 }
func (d *device) MMU() *mmu.MMU           { return d.mmu }
func (d *device) PeerHost(port int) (int32, bool) {
	pc := d.cfg.Ports[port]
	return pc.PeerHost, pc.PeerIsHost
}

func (d *device) Frame(v pkt.Packet) *pkt.Packet { return d.pool.New(v) }

func (d *device) SendControl(port int, f *pkt.Packet) {
	d.meta[port*d.nall+d.fcq].Push(&d.metas, meta{at: d.clk.Now(), in: -1})
	d.ports[port].Enqueue(d.fcq, f)
}

func (d *device) Note(port, queue int, on, sent, change bool, hops int8) {
	pc := &d.pc[port]
	switch {
	case sent && !on:
		pc.resumesSent++
	case sent && change:
		pc.pausesSent++
	case sent:
		pc.refreshesSent++
	case !on:
		pc.resumesRecv++
	case change:
		pc.pausesRecv++
	default:
		pc.refreshesRecv++
	}
	if change {
		d.log.AddPause(records.Pause{At: d.clk.Now(), Device: d.cfg.Device, Kind: records.Switch,
			Port: int16(port), Queue: int16(queue), On: on, Sent: sent, Hops: hops})
	}
}
