package nodes

import (
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
)

// Relay PFC modes (Config.RelayPFC.Mode). The PortFC paper describes PFC at relay nodes two ways
// (docs/portfc.md, resolution 9), so both exist; "" only honours pauses, as a plain RoCE NIC does.
const (
	// RelayPassThrough: a pause (or resume) a node receives from a downstream switch on one port, for a
	// priority, is applied to the node's own queues of that priority AND forwarded with the same
	// quanta out of the node's other ports, so the upstream switches stop sending that priority to the
	// node altogether (paper Fig. 5: "the nodes merely forwarding flow control information received
	// from downstream switches"). A resume is forwarded to a port only when no other port of the node is
	// still paused on the priority.
	RelayPassThrough = "pass-through"
	// RelayIngress: the node runs PFC at its own ingress (paper Fig. 4(a): "congestion detection at
	// ingress ports of nodes"): bytes it relays are counted per (ingress port, priority) from arrival
	// until they leave, and a pause goes out of the ingress port at XOFF, a resume at XON.
	RelayIngress = "ingress"
)

// RelayPFCConfig is how a relay node takes part in PFC / PFC*.
type RelayPFCConfig struct {
	Mode string `json:"mode,omitempty"`
	// XOFFBytes/XONBytes are the ingress thresholds (mode ingress), the switches' XOFF/XON.
	XOFFBytes int64 `json:"xoff_bytes,omitempty"`
	XONBytes  int64 `json:"xon_bytes,omitempty"`
	// PauseQuanta is the pause time asked for (0 = 0xFFFF quanta); a pause is refreshed every half of
	// it while the group stays above XON.
	PauseQuanta uint16 `json:"pause_quanta,omitempty"`
	// LocalBytes (mode ingress, FIFO node queues under pfc/pfcstar) is how much of a port's priority
	// FIFO the node's own flows may hold, per queue: the host side of the node's buffer. 0 = 2 x
	// XOFFBytes (docs/portfc.md §5 says why).
	LocalBytes int64 `json:"local_bytes,omitempty"`
}

// LocalBytesDefault is RelayPFCConfig.LocalBytes when it is 0.
func (r RelayPFCConfig) LocalBytesDefault() int64 {
	if r.LocalBytes > 0 {
		return r.LocalBytes
	}
	return 2 * r.XOFFBytes
}

func (r RelayPFCConfig) check() error {
	switch r.Mode {
	case "", RelayPassThrough:
	case RelayIngress:
		if r.XOFFBytes <= 0 || r.XONBytes < 0 || r.XONBytes >= r.XOFFBytes {
			return fmt.Errorf("nodes: config.relay_pfc: ingress needs 0 <= xon_bytes < xoff_bytes, got %d and %d", r.XONBytes, r.XOFFBytes)
		}
		if r.LocalBytes < 0 {
			return fmt.Errorf("nodes: config.relay_pfc.local_bytes must not be negative, got %d", r.LocalBytes)
		}
	default:
		return fmt.Errorf("nodes: config.relay_pfc.mode %q: want pass-through or ingress", r.Mode)
	}
	return nil
}

// passThrough is RelayPassThrough's PFC handler.
type passThrough struct {
	until [][8]clock.Time // [port][prio]: when the pause received on port runs out (0 = not paused)
}

func newPassThrough(ports int) *passThrough { return &passThrough{until: make([][8]clock.Time, ports)} }

func (t *passThrough) onPFC(n *NIC, in int, p *pkt.Packet) {
	n.handlePFC(in, p)
	now := n.clk.Now()
	for prio := 0; prio < 8; prio++ {
		if p.PauseMask&(1<<uint(prio)) == 0 {
			continue
		}
		quanta := p.PauseQuanta[prio]
		if quanta > 0 {
			t.until[in][prio] = now + clock.TxTime(int(quanta)*512/8, n.cfg.Ports[in].RateBps)
		} else {
			t.until[in][prio] = 0
		}
		for out := range n.ports {
			if out == in {
				continue
			}
			if quanta == 0 && (t.pausedElsewhere(out, prio, now) || n.memHolds()) {
				continue
			}
			for _, up := range upstreamPrios(n.layout, prio) {
				f := &pkt.Packet{Kind: pkt.PFC, Size: pkt.MinFrame, Src: -1, Dst: -1, Prio: uint8(up),
					PauseMask: 1 << uint(up)}
				f.PauseQuanta[up] = quanta
				n.SendControl(out, f)
				n.log.AddPause(records.Pause{At: now, Device: n.cfg.Device, Kind: records.Host,
					Port: int16(out), Queue: int16(up), On: quanta > 0, Sent: true, Hops: 1})
			}
		}
	}
}

// upstreamPrios are the priorities upstream devices send the frames this node relays into its queue of
// priority prio: prio itself, except under PFC*, where the relay raised their tag by one (FIFOLayout),
// so the pause must name the tag below (both top tags at the cap; none for tag 0, which holds no
// relayed frames).
func upstreamPrios(l Layout, prio int) []int {
	f, ok := l.(FIFOLayout)
	if !ok || f.Tags <= 1 || f.KeepTag {
		return []int{prio}
	}
	var ups []int
	for a := f.Base; a < f.Base+f.Tags; a++ {
		if f.Base+min(PFCStarTag(a, f.Tags, f.Base)+1, f.Tags-1) == prio {
			ups = append(ups, a)
		}
	}
	return ups
}

func (t *passThrough) pausedElsewhere(out, prio int, now clock.Time) bool {
	for port := range t.until {
		if port != out && t.until[port][prio] > now {
			return true
		}
	}
	return false
}

// ingressPFC is RelayIngress: PFC on the bytes this node holds for relaying.
type ingressPFC struct {
	n         *NIC
	xoff, xon int64
	local     int64 // RelayPFCConfig.LocalBytes resolved
	quanta    uint16
	groups    [][8]ingressGroup // [ingress port][prio]
	// held is the group each relayed frame was charged to: a PFC* relay raises the frame's priority
	// after admission, so the priority at release no longer names it.
	held map[*pkt.Packet]*ingressGroup
}

type ingressGroup struct {
	bytes   int64
	paused  bool
	timer   clock.Timer
	refresh func()
}

func newIngressPFC(n *NIC) *ingressPFC {
	r := n.cfg.RelayPFC
	if r.Mode != RelayIngress {
		return nil
	}
	g := &ingressPFC{n: n, xoff: r.XOFFBytes, xon: r.XONBytes, local: r.LocalBytesDefault(), quanta: r.PauseQuanta, groups: make([][8]ingressGroup, len(n.ports)),
		held: map[*pkt.Packet]*ingressGroup{}}
	if g.quanta == 0 {
		g.quanta = 0xFFFF
	}
	for port := range g.groups {
		for prio := range g.groups[port] {
			port, prio := port, prio
			g.groups[port][prio].refresh = func() { g.refreshFire(port, prio) }
		}
	}
	return g
}

func (g *ingressPFC) group(p *pkt.Packet) (*ingressGroup, int, int) {
	in, prio := int(p.InPort), int(p.Prio&7)
	if in < 0 || in >= len(g.groups) {
		return nil, 0, 0
	}
	return &g.groups[in][prio], in, prio
}

// position is the (ingress port, priority) of group x.
func (g *ingressPFC) position(x *ingressGroup) (int, int) {
	for in := range g.groups {
		for prio := range g.groups[in] {
			if &g.groups[in][prio] == x {
				return in, prio
			}
		}
	}
	return -1, -1
}

// admitted counts a relayed frame against its ingress group and pauses the upstream at XOFF.
func (g *ingressPFC) admitted(p *pkt.Packet) {
	x, in, prio := g.group(p)
	if x == nil {
		return
	}
	g.held[p] = x
	x.bytes += int64(p.Size)
	if !x.paused && x.bytes >= g.xoff {
		x.paused = true
		g.send(in, prio, g.quanta, true)
		x.timer = g.n.clk.AfterFunc(g.period(in), x.refresh)
	}
}

// released returns a relayed frame's bytes when it leaves, and resumes the upstream at XON.
func (g *ingressPFC) released(p *pkt.Packet) {
	x := g.held[p]
	if x == nil {
		return
	}
	delete(g.held, p)
	in, prio := g.position(x)
	x.bytes -= int64(p.Size)
	if x.paused && x.bytes <= g.xon {
		x.paused = false
		if x.timer != nil {
			x.timer.Stop()
			x.timer = nil
		}
		g.send(in, prio, 0, true)
	}
}

// period re-sends a pause at half its time, before the peer's quanta run out.
func (g *ingressPFC) period(port int) clock.Time {
	return clock.TxTime(int(g.quanta)*512/8, g.n.cfg.Ports[port].RateBps) / 2
}

func (g *ingressPFC) refreshFire(port, prio int) {
	x := &g.groups[port][prio]
	if !x.paused {
		return
	}
	g.send(port, prio, g.quanta, false)
	x.timer = g.n.clk.AfterFunc(g.period(port), x.refresh)
}

func (g *ingressPFC) send(port, prio int, quanta uint16, change bool) {
	if quanta == 0 && g.n.memHolds() {
		return // the memory guard's resume lifts it
	}
	f := &pkt.Packet{Kind: pkt.PFC, Size: pkt.MinFrame, Src: -1, Dst: -1, Prio: uint8(prio), PauseMask: 1 << uint(prio)}
	f.PauseQuanta[prio] = quanta
	g.n.SendControl(port, f)
	if change {
		g.n.log.AddPause(records.Pause{At: g.n.clk.Now(), Device: g.n.cfg.Device, Kind: records.Host,
			Port: int16(port), Queue: int16(prio), On: quanta > 0, Sent: true})
	}
}

// IngressBytes reports the relayed bytes held from (port, prio) and whether that group has paused its
// upstream (relay_pfc ingress; zero otherwise).
func (n *NIC) IngressBytes(port, prio int) (bytes int64, paused bool) {
	if n.ingress == nil {
		return 0, false
	}
	x := &n.ingress.groups[port][prio&7]
	return x.bytes, x.paused
}
