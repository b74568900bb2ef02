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
	// back[p]: that node's port index at its other switch, the one whose DDQ pauses it relays to us.
	back []int
	// upstreamIsPaused, one flag per (port, class): the paper's single flag would let an IHFQ pause
	// swallow a DDQ pause on the same port (docs/portfc.md, resolution 2).
	upA, upB []bool
	rx       []bool // [port*n+q]: queue paused by a relayed frame
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
	f := &PortFC{dev: dev, n: n, upA: make([]bool, ports), upB: make([]bool, ports), rx: make([]bool, ports*n),
		back: make([]int, ports), mem: make([]bool, ports)}
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
			for j, s := range row {
				if s < 0 {
					continue
				}
				if int(s) > n-1 {
					return nil, fmt.Errorf("flow_control.portfc.peer_self[%d][%d]: port %d does not fit %d IHFQs", p, j, s, n-1)
				}
				if f.back[p] >= 0 {
					// Algorithm 4 does not say which of a multi-port node's switches a relayed frame
					// came from; the paper defines PortFC for k = 1 only.
					return nil, fmt.Errorf("flow_control.portfc.peer_self[%d]: the node has more than one other switch; portfc is defined for two-port nodes (NDC k=1)", p)
				}
				f.back[p] = int(s)
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
// DDQ port; the IHFQ of our port toward the node that feeds exactly that port is paused or resumed.
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
			f.dev.Port(in).Pause(q, on || f.rx[in*f.n+q])
		}
		f.dev.Note(in, -1, on, false, true, 0)
		return
	}
	if p.Kind != pkt.PortFC {
		return
	}
	q := min(Compress(int(p.FCPort), f.back[in]), f.n-2)
	if q < 0 {
		return
	}
	r := &f.rx[in*f.n+q]
	change := *r != p.FCPause
	*r = p.FCPause
	f.dev.Port(in).Pause(q, p.FCPause || f.mem[in])
	f.dev.Note(in, q, p.FCPause, false, change, 1)
}

// UpstreamPaused reports whether port's IHFQ group and DDQ currently hold their upstream paused.
func (f *PortFC) UpstreamPaused(port int) (ihfq, ddq bool) { return f.upA[port], f.upB[port] }

// Thresholds returns port's X_off, X_on, X-hat_off, X-hat_on in bytes.
func (f *PortFC) Thresholds(port int) (xoff, xon, ddqXoff, ddqXon int64) {
	return f.xoff[port], f.xon[port], f.dxoff[port], f.dxon[port]
}
