package nodes

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

// Path selection among a flow's candidate source routes (Flow.Paths), per connection at the sending NIC,
// from measured forward queueing delay (telemetry paper §III):
//
//   - Switches add queueing delay to a field of the frame (switchsw): data frames their residence, path
//     test messages (PTMs, Probe frames) the data backlog they bypass in the strict queue.
//   - The receiver answers a PTM with a path test reply (PTR: Probe with Last set) carrying the PTM's
//     forward delay, and reflects each data frame's delay in the ACK it triggers (piggybacking).
//   - "telemetry": the flow starts on Paths[0] (minimal) and probes it and Initial random alternatives;
//     the first round ends Wait x R after it began, R being the first reply's round trip, or when all
//     replies are in. Afterwards one PTM goes out every Every data packets, round-robin over all
//     candidates. The flow moves to a path whose delay is below Ratio x the current one and MTUs MTU
//     times less (BETTER). Go-back-N and lossless transports first idle for the delay difference so the
//     new path's packets do not overtake the old path's; IRN (selective repeat, the paper's LERP) does
//     not wait.
//   - "ugal": one round at flow start between Paths[0] and one random non-minimal candidate; the flow
//     takes the non-minimal one if minimal's delay exceeds it by more than Threshold (UGAL's rule, with
//     path delay standing for queue length x hops), and keeps its choice.
//
// A reroute restarts congestion control as for a new connection (the paper's slow start; DCQCN starts at
// line rate).

// Path-selection policies (Config.PathSelect).
const (
	SelectTelemetry = "telemetry"
	SelectUGAL      = "ugal"
	// SelectUGALPeriodic re-decides UGAL every Every data packets: a round probes MIN and one random
	// VAL candidate and the flow takes VAL iff MIN's delay exceeds it by more than Threshold, else MIN.
	// The telemetry paper's Benchmark decides per packet at the first switch with ideal knowledge of
	// its group's global-link loads (UGAL-PB); this is the closest the per-connection NIC engine
	// comes (a reroute restarts congestion control and, lossless or go-back-N, drains the old path).
	SelectUGALPeriodic = "ugal-periodic"
	// SelectUGALPB decides per data packet (pathSel.pick): MIN or one VAL candidate drawn at random for
	// that packet, by UGAL's queue x hops rule. It never reroutes (no drain, no idle wait, no congestion
	// control restart); receivers hold out-of-order packets in a reorder buffer (Config.ReorderBuffer).
	SelectUGALPB = "ugal-pb"
)

// ProbePort is the UDP destination port of PTMs and PTRs (wire.ProbePort).
const ProbePort = 4792

// TelemetryConfig holds the path-selection constants; zero fields take the paper's values.
type TelemetryConfig struct {
	Ratio   float64 `json:"ratio,omitempty"`   // Δ1 (0.8)
	MTUs    int     `json:"mtus,omitempty"`    // Δ2, in transmission times of one MTU frame (75)
	Every   int     `json:"every,omitempty"`   // Δ3: data packets between PTMs (100); there is no window to compare
	Initial int     `json:"initial,omitempty"` // alternatives probed at flow start, "a few" (3)
	Wait    float64 `json:"wait,omitempty"`    // the first round lasts Wait x the first reply's RTT (3)
	// PaperWait keeps a go-back-N or lossless reroute in order by the paper's §III rule alone: idle
	// for the old path's latency (one-way delay and last queueing sample) minus the new one's. false:
	// idle until the old path's last packet is due to land, then send nothing new until it is
	// acknowledged (reroute), which also covers an old path whose queue grew since its last sample.
	PaperWait bool `json:"paper_wait,omitempty"`
	// Threshold is UGAL's bias T; 0: MTUs MTU times, the margin telemetry demands too.
	Threshold clock.Time `json:"threshold_ps,omitempty"`
}

// Paper values (telemetry paper §III); Initial is ours, the paper says "a few".
const (
	DefaultTelemetryRatio   = 0.8
	DefaultTelemetryMTUs    = 75
	DefaultTelemetryEvery   = 100
	DefaultTelemetryInitial = 3
	DefaultTelemetryWait    = 3
)

func (c *Config) checkPathSelect() error {
	switch c.PathSelect {
	case "", SelectTelemetry, SelectUGAL, SelectUGALPeriodic, SelectUGALPB, SelectATE: // ate: ate.go
	default:
		return fmt.Errorf("nodes: config.path_select %q: want telemetry, ugal, ugal-periodic, ugal-pb, ate or empty", c.PathSelect)
	}
	t := &c.Telemetry
	if t.Ratio < 0 || t.Ratio > 1 || t.MTUs < 0 || t.Every < 0 || t.Initial < 0 || t.Wait < 0 || t.Threshold < 0 {
		return fmt.Errorf("nodes: config.telemetry: parameters out of range: %+v", *t)
	}
	if t.Wait > 0 && t.Wait < 1 {
		return fmt.Errorf("nodes: config.telemetry.wait %g: the round cannot end before its first reply (want >= 1)", t.Wait)
	}
	if t.Ratio == 0 {
		t.Ratio = DefaultTelemetryRatio
	}
	if t.MTUs == 0 {
		t.MTUs = DefaultTelemetryMTUs
	}
	if t.Every == 0 {
		t.Every = DefaultTelemetryEvery
	}
	if t.Initial == 0 {
		t.Initial = DefaultTelemetryInitial
	}
	if t.Wait == 0 {
		t.Wait = DefaultTelemetryWait
	}
	return nil
}

// checkPaths rejects candidate routes a flow could not switch between: each must leave by the flow's
// port (the QP keeps its NIC queue) and Route must be the first.
func (n *NIC) checkPaths(f *Flow, port int) error {
	if len(f.Paths) == 0 {
		return nil
	}
	if len(f.Route) == 0 || !slices.Equal(f.Route, f.Paths[0]) {
		return fmt.Errorf("nodes: h%d: flow %d: Route must be Paths[0] (the path a flow starts on)", n.cfg.Host, f.ID)
	}
	for i, r := range f.Paths {
		if len(r) == 0 || int(r[0]) != port {
			return fmt.Errorf("nodes: h%d: flow %d: candidate path %d leaves by port %v, want %d", n.cfg.Host, f.ID, i, r, port)
		}
	}
	return nil
}

// pathSel is one flow's path-selection state.
type pathSel struct {
	q      *qp
	cfg    *TelemetryConfig
	policy string
	paths  [][]uint8
	bases  []PathBase // Flow.PathBases: each candidate's idle one-way delay and RTT
	rng    *rand.Rand
	tMTU   clock.Time

	cur      int
	curDelay clock.Time
	curFrom  uint32 // first PSN sent on cur: ACK samples of earlier PSNs measured an older path
	reroutes int

	seq     uint32
	pending map[uint32]int // outstanding PTM sequence -> candidate

	// The opening round (both policies): replies by candidate, until the round closes.
	round      map[uint32]bool
	roundDelay map[int]clock.Time
	t0         clock.Time
	timer      clock.Timer
	ugalAlt    int

	sinceProbe int
	rr         int
	idleUntil  clock.Time
	// lastLand is when the last data packet sent is expected to arrive: its departure from this NIC
	// (behind what the lane queued), its path's one-way delay and the path's last measured queueing.
	lastLand clock.Time
	// drainTo: after a go-back-N or lossless reroute no new packet leaves until the cumulative ACK
	// reaches it (every packet sent on the old path has arrived); 0: not draining.
	drainTo uint32
	settled bool // UGAL decided: no more probes

	// ugal-pb: each candidate's latest forward queueing sample (ACK-reflected or probe reply), and the
	// candidate each recent PSN took (by PSN mod len), so an ACK's sample goes to the path it measured.
	qdelay []clock.Time
	took   []uint8
}

// ugalPBRing is how many recent PSNs a ugal-pb flow remembers the candidate of: more than a lossless
// window at 100 Gb/s over D1 (~40 packets); beyond it an ACK's sample may go to the wrong candidate.
const ugalPBRing = 1024

func (n *NIC) newPathSel(q *qp, paths [][]uint8, bases []PathBase) *pathSel {
	c := &n.cfg.Telemetry
	s := &pathSel{q: q, cfg: c, policy: n.cfg.PathSelect, paths: paths, bases: bases, pending: map[uint32]int{},
		rng:  rand.New(rand.NewPCG(n.cfg.Seed^0x7e1e, uint64(q.id))),
		tMTU: clock.TxTime(pkt.DataSize(int(q.mtu), len(paths[0])), q.lineRate)}
	if s.policy == SelectUGALPB {
		s.qdelay, s.took = make([]clock.Time, len(paths)), make([]uint8, ugalPBRing)
		return s // no opening round: every candidate counts as idle until a sample says otherwise
	}
	s.open()
	return s
}

// open sends the opening round: the current path plus alternatives drawn at random.
func (s *pathSel) open() {
	alts := s.rng.Perm(len(s.paths) - 1)
	k := min(s.cfg.Initial, len(alts))
	if s.policy == SelectUGAL || s.policy == SelectUGALPeriodic {
		k = 1
	}
	s.round, s.roundDelay, s.t0 = map[uint32]bool{}, map[int]clock.Time{}, s.q.n.clk.Now()
	s.round[s.probe(s.cur)] = true
	for _, a := range alts[:k] {
		s.ugalAlt = a + 1
		s.round[s.probe(a+1)] = true
	}
}

// probe sends a PTM on candidate i and returns its sequence number.
func (s *pathSel) probe(i int) uint32 {
	q, n := s.q, s.q.n
	r := s.paths[i]
	seq := s.seq
	s.seq++
	s.pending[seq] = i
	n.stats.TxProbe++
	n.enqueue(q.port, n.control[q.port], &pkt.Packet{Kind: pkt.Probe, Size: int32(pkt.ProbeSize + pkt.RouteOptionBytes(len(r))),
		Src: n.cfg.Host, Dst: q.dst, Flow: q.id, SPort: q.sport, DPort: ProbePort, Proto: ProtoUDP, Prio: q.prio,
		PSN: seq, SentAt: n.clk.Now(), Route: r, Hop: 1, InPort: -1})
	return seq
}

// better is the paper's BETTER(alt, cur).
func (s *pathSel) better(alt, cur clock.Time) bool {
	return float64(alt) < s.cfg.Ratio*float64(cur) && cur-alt > clock.Time(s.cfg.MTUs)*s.tMTU
}

// reply handles a PTR: seq's forward queueing delay.
func (s *pathSel) reply(seq uint32, delay clock.Time) {
	i, ok := s.pending[seq]
	if !ok {
		return
	}
	delete(s.pending, seq)
	if s.qdelay != nil {
		s.qdelay[i] = delay
		return
	}
	if s.round != nil && s.round[seq] {
		first := len(s.roundDelay) == 0
		s.roundDelay[i] = delay
		if len(s.roundDelay) == len(s.round) {
			s.close()
		} else if first {
			now := s.q.n.clk.Now()
			s.timer = s.q.n.clk.AfterFunc(clock.Time(s.cfg.Wait*float64(now-s.t0))-(now-s.t0), s.close)
		}
		return
	}
	if s.settled {
		return
	}
	if i == s.cur {
		s.curDelay = delay
	} else if s.better(delay, s.curDelay) {
		s.reroute(i, delay)
	}
}

// close ends the opening round with the replies that arrived.
func (s *pathSel) close() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	got := s.roundDelay
	s.round, s.roundDelay = nil, nil
	if d, ok := got[s.cur]; ok {
		s.curDelay = d
	}
	if s.policy == SelectUGAL || s.policy == SelectUGALPeriodic {
		s.settled = s.policy == SelectUGAL
		dMin, okMin := got[0]
		dVal, okVal := got[s.ugalAlt]
		t := s.cfg.Threshold
		if t == 0 {
			t = clock.Time(s.cfg.MTUs) * s.tMTU
		}
		if !okMin || !okVal || s.ugalAlt == 0 {
			return
		}
		want, d := 0, dMin
		if dMin > dVal+t {
			want, d = s.ugalAlt, dVal
		}
		if want != s.cur {
			s.reroute(want, d)
		}
		return
	}
	best, bestDelay := -1, clock.Time(0)
	for i, d := range got {
		if i != s.cur && (best < 0 || d < bestDelay || d == bestDelay && i < best) {
			best, bestDelay = i, d
		}
	}
	if best >= 0 && s.better(bestDelay, s.curDelay) {
		s.reroute(best, bestDelay)
	}
}

// sent counts a data packet toward the next PTM.
func (s *pathSel) sent() {
	q := s.q
	land := q.n.clk.Now() + clock.TxTime(q.lane.queuedBytes, q.lineRate) + s.base(s.cur).OneWay + s.curDelay
	s.lastLand = max(s.lastLand, land)
	if s.settled || s.round != nil {
		return
	}
	if s.policy == SelectUGALPeriodic {
		if s.sinceProbe++; s.sinceProbe >= s.cfg.Every && len(s.paths) > 1 {
			s.sinceProbe = 0
			s.ugalAlt = 1 + s.rng.IntN(len(s.paths)-1)
			s.round, s.roundDelay, s.t0 = map[uint32]bool{}, map[int]clock.Time{}, s.q.n.clk.Now()
			s.round[s.probe(0)] = true
			s.round[s.probe(s.ugalAlt)] = true
		}
		return
	}
	if s.sinceProbe++; s.sinceProbe >= s.cfg.Every {
		s.sinceProbe = 0
		s.probe(s.rr)
		s.rr = (s.rr + 1) % len(s.paths)
	}
}

// acked takes the delay an ACK reflects, if the packet that triggered it went on the current path.
func (s *pathSel) acked(p *pkt.Packet) {
	if s.qdelay != nil {
		// The ACK reflects the delay of PSN-1: the in-order packet that triggered it, or the last one
		// the receiver's reorder buffer released (receiver.go heldDelay).
		if p.PSN > 0 {
			s.qdelay[s.took[(p.PSN-1)%ugalPBRing]] = p.ProbeDelay
		}
		return
	}
	if p.PSN > s.curFrom {
		s.curDelay = p.ProbeDelay
	}
}

// ugalChoice is UGAL's rule (Kim et al. 2008; the telemetry paper §II-B): a packet goes VAL iff MIN's
// queue times its hop count exceeds VAL's queue times its hop count by more than the bias t.
func ugalChoice(qMin clock.Time, hMin int, qVal clock.Time, hVal int, t clock.Time) bool {
	return qMin*clock.Time(hMin) > qVal*clock.Time(hVal)+t
}

// pick is ugal-pb's choice for data packet psn: MIN (0) or the VAL candidate drawn for this packet. The
// queue of a candidate is its latest measured forward queueing delay (the sum over its switches, in
// time at line rate), its hop count the length of its source route.
func (s *pathSel) pick(psn uint32) int {
	i := 0
	if len(s.paths) > 1 {
		v := 1 + s.rng.IntN(len(s.paths)-1)
		t := s.cfg.Threshold
		if t == 0 {
			t = clock.Time(s.cfg.MTUs) * s.tMTU
		}
		if ugalChoice(s.qdelay[0], len(s.paths[0]), s.qdelay[v], len(s.paths[v]), t) {
			i = v
		}
	}
	s.took[psn%ugalPBRing] = uint8(i)
	s.cur = i
	return i
}

// base is candidate i's idle delays, zero when the lab gave none.
func (s *pathSel) base(i int) PathBase {
	if i < len(s.bases) {
		return s.bases[i]
	}
	return PathBase{}
}

func (s *pathSel) reroute(i int, delay clock.Time) {
	q, n := s.q, s.q.n
	if t := n.cfg.Transport; (t == GBN || t == Lossless) && s.cfg.PaperWait {
		if w := s.base(s.cur).OneWay + s.curDelay - s.base(i).OneWay - delay; w > 0 {
			s.idleUntil = max(s.idleUntil, n.clk.Now()+w)
		}
	} else if t == GBN || t == Lossless {
		// The first packet on the new path must not land before the last one sent (on the old path, or
		// an older one when reroutes follow each other). The paper's wait is the queueing difference
		// alone, which lets a shorter new path (MIN after VAL: two hops fewer) overtake.
		// A packet handed over at t leaves at t (the lane has drained by then) and lands after the new
		// path's one-way delay and queueing; one frame time of margin covers a control frame (ACK,
		// probe) the strict queue put ahead of the old path's last packet.
		if t := s.lastLand + s.tMTU - s.base(i).OneWay - delay; t > n.clk.Now() {
			s.idleUntil = max(s.idleUntil, t)
		}
		// The estimate uses the old path's last queueing sample, up to a round trip old: while its
		// queue is still growing (flow start) the old path's last packets land later than estimated
		// (measured on D1 ADV1, N=64: 186 reordered packets). Waiting for their acknowledgement as
		// well is exact; it overshoots the exact wait by the ACK's way back.
		if q.sndNxt > q.sndUna {
			s.drainTo = q.sndNxt
		}
	}
	s.cur, s.curDelay, s.curFrom = i, delay, q.sndNxt
	q.usePath(s.paths[i], s.base(i))
	// The new path starts like a new connection (the paper's slow start on reroute): the rate the old
	// path's congestion forced says nothing about the new one. DCQCN's start is line rate.
	if q.cc != nil {
		q.cc.stop()
		q.cc = newDCQCN(q)
		q.rate = q.lineRate
	}
	if q.dc != nil {
		q.dc.restart()
	}
	s.reroutes++
	n.stats.Reroutes++
}

// draining reports whether new packets must wait for the old path to drain (drainTo); a go-back
// (the cumulative ACK can no longer pass drainTo by the old path's packets) or the drain's end stops it.
func (s *pathSel) draining() bool {
	q := s.q
	if s.drainTo == 0 {
		return false
	}
	if q.sndUna >= s.drainTo || q.sndNxt <= q.sndUna {
		s.drainTo = 0
		return false
	}
	return true
}

func (s *pathSel) stop() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// onProbe answers a PTM addressed here with a PTR back to its sender, or hands a PTR to its flow.
func (n *NIC) onProbe(p *pkt.Packet) {
	n.stats.RxProbe++
	if p.Last {
		if q := n.qps[p.Flow]; q != nil && q.sel != nil {
			q.sel.reply(p.PSN, p.ProbeDelay)
		}
		return
	}
	r := &pkt.Packet{Kind: pkt.Probe, Src: n.cfg.Host, Dst: p.Src, Flow: p.Flow, SPort: p.SPort,
		DPort: ProbePort, Proto: ProtoUDP, Prio: n.cfg.ControlPrio, PSN: p.PSN, Last: true, SentAt: p.SentAt,
		ProbeDelay: p.ProbeDelay, InPort: -1}
	n.sendBack(r, pkt.ProbeSize)
}
