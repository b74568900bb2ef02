package fc

import (
	"fmt"

	"github.com/fabriclab/fabriclab/pkt"
)

func init() { Register("portfc", Mode{New: NewPortFC}) }

// PortFC is the switch side of PortFC (Cao et al., ToN 2026, §III; docs/portfc.md): per egress port,
// n-1 inter-hop forwarding queues (IHFQ, indexed by the egress port the frame will take at the switch
// after the next relay) and one destination-direct queue (DDQ), with the strict control queue as the
// paper's HQ. Congestion is detected per egress port on the sum of the IHFQs (Algorithm 1/2, X_off/X_on)
// and on the DDQ alone (X-hat), and reported with (queue, port) pause/resume frames out of every other
// port. A frame relayed back by a node pauses the IHFQ that feeds the congested port (Algorithm 4).
//
// Queue bounds come from those pauses, not from the MMU, so frames are LosslessEgress: a buffer drop is
// a violation.
type PortFC struct {
	dev   Device
	n     int // data queues: IHFQ 0..n-2, DDQ n-1
	xoff  []int64
	xon   []int64
	dxoff []int64
	dxon  []int64
	// self[p][j]: the port index of the node on port p at the switch behind its port j (-1: faces us).
	self [][]int16
	// back[p]: that node's port index at its other switch, when it has exactly one (NDC k = 1): the
	// switch a relayed frame without its via came from; -1 otherwise.
	back []int
	// upstreamIsPaused, one flag per (port, class): the paper's single flag would let an IHFQ pause
	// swallow a DDQ pause on the same port (docs/portfc.md, resolution 2).
	upA, upB []bool
	// rx[port*n+q] counts the congested ports (of the node's other switches, by via, class and port:
	// the keys of held) whose relayed pause holds IHFQ q of port paused. For k = 1 one port at most
	// maps to a queue; for k > 1 several can (the node's switches, the two classes), and the queue
	// resumes only when the last of them has.
	rx   []int
	held map[rxKey]bool
	// mem[port]: the node on port has paused its relay traffic because its memory is full (an 802.1Qbb
	// frame from the node's memory guard, nodes/nicmem.go); every IHFQ of the port stays paused while
	// it holds, whatever Algorithm 4 says.
	mem []bool
}

// NewPortFC is the "portfc" Factory. Thresholds must be in bytes: the module does not know link delays,
// so the lab resolves "Nbdp" before it builds the config.
func NewPortFC(dev Device, cfg Config) (Module, error) { return newPortFC(dev, cfg) }

func newPortFC(dev Device, cfg Config) (*PortFC, error) {
	n, ports := dev.DataQueues(), dev.NumPorts()
	if n < 2 {
		return nil, fmt.Errorf("portfc: data_queues must be at least 2 (n-1 IHFQs and a DDQ), got %d", n)
	}
	pc := cfg.PortFC
	for _, t := range []struct {
		name string
		bdp  bool
	}{{"xoff", cfg.XOFF.BDPs != 0}, {"xon", cfg.XON.BDPs != 0},
		{"portfc.ddq_xoff", pc.DDQXOFF.BDPs != 0}, {"portfc.ddq_xon", pc.DDQXON.BDPs != 0}} {
		if t.bdp {
			return nil, fmt.Errorf("flow_control.%s: portfc needs thresholds in bytes (the lab resolves BDPs)", t.name)
		}
	}
	xoff := cfg.XOFF.Bytes
	if xoff <= 0 {
		return nil, fmt.Errorf("flow_control.xoff: portfc needs a positive static X_off, got %d", xoff)
	}
	xon := cfg.XON.Bytes
	if xon == 0 {
		xon = xoff * 2 / 3
	}
	dxoff, dxon := pc.DDQXOFF.Bytes, pc.DDQXON.Bytes
	if dxoff == 0 {
		dxoff = xoff
	}
	if dxon == 0 {
		dxon = dxoff * 2 / 3
		if pc.DDQXOFF.IsZero() {
			dxon = xon
		}
	}
	if xon < 0 || xon >= xoff {
		return nil, fmt.Errorf("flow_control.xon: %d must be below xoff %d", xon, xoff)
	}
	if dxon < 0 || dxon >= dxoff {
		return nil, fmt.Errorf("flow_control.portfc.ddq_xon: %d must be below ddq_xoff %d", dxon, dxoff)
	}
	f := &PortFC{dev: dev, n: n, upA: make([]bool, ports), upB: make([]bool, ports), rx: make([]int, ports*n),
		held: map[rxKey]bool{}, back: make([]int, ports), mem: make([]bool, ports)}
	for p := 0; p < ports; p++ {
		f.xoff, f.xon = append(f.xoff, xoff), append(f.xon, xon)
		f.dxoff, f.dxon = append(f.dxoff, dxoff), append(f.dxon, dxon)
		f.back[p] = -1
	}
	if pc.PeerSelf != nil {
		if len(pc.PeerSelf) != ports {
			return nil, fmt.Errorf("flow_control.portfc.peer_self: want %d entries (one per port), got %d", ports, len(pc.PeerSelf))
		}
		f.self = pc.PeerSelf
		for p, row := range pc.PeerSelf {
			others := 0
			for j, s := range row {
				if s < 0 {
					continue
				}
				if int(s) > n-1 {
					return nil, fmt.Errorf("flow_control.portfc.peer_self[%d][%d]: port %d does not fit %d IHFQs", p, j, s, n-1)
				}
				if others++; others == 1 {
					f.back[p] = int(s)
				} else {
					f.back[p] = -1 // NDC k > 1: relayed frames say which switch by their via
				}
			}
		}
	}
	return f, nil
}

// Compress maps an egress port e of a switch with the node's own port self excluded onto n-1 queue
// indices: ports below self keep their number, ports above shift down by one (docs/portfc.md,
// resolution 1). self < 0 means no compression.
func Compress(e, self int) int {
	if self >= 0 && e > self {
		return e - 1
	}
	return e
}

// Classify is the paper's GetQIdx for data frames (control frames never reach it: they take the
// switch's strict queues, the paper's HQ).
func (f *PortFC) Classify(out int, p *pkt.Packet) (int, Class) {
	if h, ok := f.dev.PeerHost(out); ok && h == p.Dst {
		return f.n - 1, LosslessEgress
	}
	e := p.PortAhead(2)
	if e < 0 {
		// Without a source route the switch cannot see two hops ahead; such frames share IHFQ 0.
		return 0, LosslessEgress
	}
	self := -1
	if f.self != nil {
		if j := p.PortAhead(1); j >= 0 && j < len(f.self[out]) {
			self = int(f.self[out][j])
		}
	}
	return min(Compress(e, self), f.n-2), LosslessEgress
}

func (f *PortFC) ihfqBytes(out int) int64 {
	port := f.dev.Port(out)
	var b int64
	for q := 0; q < f.n-1; q++ {
		b += int64(port.Bytes(q))
	}
	return b
}

// Enqueued is Algorithm 1: after the frame joins its queue, pause upstream when the IHFQ sum reaches
// X_off or the DDQ reaches X-hat_off.
func (f *PortFC) Enqueued(at Loc, p *pkt.Packet) {
	size := int64(p.Size)
	if at.Queue < f.n-1 {
		if !f.upA[at.Out] && f.ihfqBytes(at.Out)+size >= f.xoff[at.Out] {
			f.upA[at.Out] = true
			f.signal(at.Out, at.Queue, true)
		}
		return
	}
	if !f.upB[at.Out] && int64(f.dev.Port(at.Out).Bytes(f.n-1))+size >= f.dxoff[at.Out] {
		f.upB[at.Out] = true
		f.signal(at.Out, f.n-1, true)
	}
}

// Dequeued is Algorithm 2: resume upstream once the class drained to X_on (X-hat_on).
func (f *PortFC) Dequeued(at Loc, _ *pkt.Packet) {
	if at.Queue < f.n-1 {
		if f.upA[at.Out] && f.ihfqBytes(at.Out) <= f.xon[at.Out] {
			f.upA[at.Out] = false
			f.signal(at.Out, at.Queue, false)
		}
		return
	}
	if f.upB[at.Out] && int64(f.dev.Port(at.Out).Bytes(f.n-1)) <= f.dxon[at.Out] {
		f.upB[at.Out] = false
		f.signal(at.Out, f.n-1, false)
	}
}

// signal sends a (queue, port) frame out of every port but the congested one: every node that could
// be feeding it (Algorithm 1 lines 14-17). Switches originate, so the records carry Hops 0.
func (f *PortFC) signal(out, q int, on bool) {
	for port := 0; port < f.dev.NumPorts(); port++ {
		if port == out {
			continue
		}
		f.dev.SendControl(port, &pkt.Packet{Kind: pkt.PortFC, Size: pkt.MinFrame, Src: -1, Dst: -1,
			FCQueue: int16(q), FCPort: int16(out), FCPause: on})
		f.dev.Note(port, q, on, true, true, 0)
	}
}

// Receive is Algorithm 4: a frame a node relayed from its other switch names that switch's congested
// DDQ port (for k > 1, also an IHFQ group's; nodes/portfc.go says why); the IHFQ of our port toward
// the node that feeds exactly that port is paused or resumed. Which of the node's switches the port is
// on comes from the frame's via, or, for a two-port node, is its only other switch.
// Every frame a switch receives was relayed once (nodes never originate), hence Hops 1. Switches never
// relay further.
//
// An 802.1Qbb frame from the node is its memory guard (not part of the paper, whose relay queue is never
// paused and unbounded): any pausing priority pauses all of the port's IHFQs, which hold exactly the
// frames the node would relay; a frame pausing nothing resumes them. The DDQ, whose frames the node
// consumes, keeps flowing. The guard sends explicit resumes, so the quanta are read as on/off.
func (f *PortFC) Receive(in int, p *pkt.Packet) {
	if p.Kind == pkt.PFC {
		on := false
		for prio := 0; prio < 8; prio++ {
			if p.PauseMask&(1<<uint(prio)) != 0 && p.PauseQuanta[prio] > 0 {
				on = true
			}
		}
		if on == f.mem[in] {
			return
		}
		f.mem[in] = on
		for q := 0; q < f.n-1; q++ {
			f.dev.Port(in).Pause(q, on || f.rx[in*f.n+q] > 0)
		}
		f.dev.Note(in, -1, on, false, true, 0)
		return
	}
	if p.Kind != pkt.PortFC {
		return
	}
	self := f.back[in]
	if via := p.FCVia(); via >= 0 && f.self != nil && via < len(f.self[in]) && f.self[in][via] >= 0 {
		self = int(f.self[in][via])
	}
	if self < 0 && f.self != nil {
		// A node with several other switches relayed a frame without saying which one it came from.
		return
	}
	q := min(Compress(int(p.FCPort), self), f.n-2)
	if q < 0 {
		return
	}
	k := rxKey{in: int16(in), via: int16(p.FCVia()), ddq: int(p.FCQueue) == f.n-1, port: p.FCPort}
	if f.held[k] == p.FCPause {
		// A repeat: this congested port already holds (or already released) the queue.
		f.dev.Note(in, q, p.FCPause, false, false, 1)
		return
	}
	r := &f.rx[in*f.n+q]
	was := *r > 0
	if p.FCPause {
		f.held[k] = true
		*r++
	} else {
		delete(f.held, k)
		*r--
	}
	now := *r > 0
	f.dev.Port(in).Pause(q, now || f.mem[in])
	f.dev.Note(in, q, p.FCPause, false, was != now, 1)
}

// rxKey names a congested port a relayed frame reports: the node port it arrived on (in), the node's
// port it was relayed from (via, -1 when not given), its class and the congested port there.
type rxKey struct {
	in, via int16
	ddq     bool
	port    int16
}

// UpstreamPaused reports whether port's IHFQ group and DDQ currently hold their upstream paused.
func (f *PortFC) UpstreamPaused(port int) (ihfq, ddq bool) { return f.upA[port], f.upB[port] }

// Thresholds returns port's X_off, X_on, X-hat_off, X-hat_on in bytes.
func (f *PortFC) Thresholds(port int) (xoff, xon, ddqXoff, ddqXon int64) {
	return f.xoff[port], f.xon[port], f.dxoff[port], f.dxon[port]
}
