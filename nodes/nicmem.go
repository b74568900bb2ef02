package nodes

import (
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
)

// NIC memory guards (NICMemConfig.Guard): what a relay node does as the frames it forwards fill its
// memory. The PortFC paper gives nodes no buffer size and never pauses their relay queue,
// which makes a node's memory unbounded; a real NIC or DPDK server has a finite pool.
const (
	// GuardPause (lossless fabrics): at XOFF bytes held the node sends an 802.1Qbb pause of every data
	// priority out of every port, so the switches feeding it stop what it would relay (PFC at the node's
	// ingress; a PortFC switch pauses the port's IHFQs, switchsw/fc/portfc.go), and a resume at XON.
	// XOFF leaves room for each port's headroom and the node's own queued frames, so a relayed frame
	// never finds the memory full; if one does, it is dropped and the drop is a lossless violation.
	GuardPause = "pause"
	// GuardECN (lossy fabrics): relayed data is CE-marked RED-style on the bytes held (KMin..KMax,
	// PMax), and dropped when the memory is full, as a switch does.
	GuardECN = "ecn"
)

// NICMemConfig is a NIC's finite memory. Bytes = 0 keeps the unbounded model (engines built directly
// in tests); the lab always gives a size (spec host.nic_buffer).
type NICMemConfig struct {
	Bytes int64  `json:"bytes,omitempty"`
	Guard string `json:"guard,omitempty"` // "" (drop at the limit only), GuardPause, GuardECN
	// KMin/KMax/PMax: GuardECN marking (the switches' ECN thresholds).
	KMin int64   `json:"kmin,omitempty"`
	KMax int64   `json:"kmax,omitempty"`
	PMax float64 `json:"pmax,omitempty"`
}

// nicMem is the NIC's memory account: every data frame in an egress data queue (relayed or local).
type nicMem struct {
	n             *NIC
	cfg           NICMemConfig
	xoff, xon     int64
	held, peak    int64
	paused        bool
	timer         clock.Timer
	refresh       func()
	pauses, drops uint64
}

// memHeadroom is what can still arrive on a port after the node sends a pause: the pause's and the
// last frames' flight (2 x rate x delay) plus three frames, as switchsw.Headroom.
func memHeadroom(p PortConfig, frame int) int64 {
	return 2*int64(p.RateBps/8*p.Delay.Seconds()+0.5) + 3*int64(frame) + pkt.MinFrame + 4
}

// localCap bounds the bytes of the node's own data its egress queues can hold: QueueDepth frames per
// local queue (or RelayPFC.LocalBytes per priority FIFO under relay_pfc ingress).
func (n *NIC) localCap(frame int) int64 {
	var c int64
	for port := range n.cfg.Ports {
		queues := int64(n.layout.Queues(port) - 1)
		switch n.layout.(type) {
		case *PortFCLayout:
			queues-- // the RQ holds only relayed frames
		case PrioLayout:
			queues = 8
		case FIFOLayout:
			queues = 8
			if n.cfg.RelayPFC.Mode == RelayIngress {
				c += n.cfg.RelayPFC.LocalBytesDefault() + int64(frame) // one data priority, plus the frame over the line
				continue
			}
		}
		c += queues * int64(n.cfg.QueueDepth) * int64(frame)
	}
	return c
}

func newNICMem(n *NIC) (*nicMem, error) {
	c := n.cfg.NICMem
	if c.Bytes == 0 {
		return nil, nil
	}
	if c.Bytes < 0 {
		return nil, fmt.Errorf("nodes: config.nic_memory.bytes must not be negative, got %d", c.Bytes)
	}
	m := &nicMem{n: n, cfg: c}
	frame := pkt.DataSize(n.cfg.MTU, 8)
	switch c.Guard {
	case "":
	case GuardPause:
		room := c.Bytes - n.localCap(frame)
		for _, p := range n.cfg.Ports {
			room -= memHeadroom(p, frame)
		}
		if room < int64(4*frame) {
			return nil, fmt.Errorf("nodes: config.nic_memory.bytes: %d B leaves no room to pause before it fills (need %d B more for headroom and local queues)",
				c.Bytes, int64(4*frame)-room)
		}
		m.xoff, m.xon = room, room*2/3
		m.refresh = m.refreshFire
	case GuardECN:
		if c.KMin < 0 || c.KMax < c.KMin || c.PMax < 0 || c.PMax > 1 {
			return nil, fmt.Errorf("nodes: config.nic_memory: ECN needs 0 <= kmin <= kmax and pmax in [0,1], got %d, %d, %g", c.KMin, c.KMax, c.PMax)
		}
	default:
		return nil, fmt.Errorf("nodes: config.nic_memory.guard %q: want %s or %s", c.Guard, GuardPause, GuardECN)
	}
	return m, nil
}

// admit decides on a data frame about to enter an egress data queue. Local frames are always taken
// (their queues are bounded by localCap); a relayed frame that does not fit is refused (the caller
// drops it), and one that fits may be CE-marked (GuardECN) or trigger the pause (GuardPause).
func (m *nicMem) admit(p *pkt.Packet, relayed bool) bool {
	size := int64(p.Size)
	if relayed && m.held+size > m.cfg.Bytes {
		m.drops++
		return false
	}
	m.held += size
	m.peak = max(m.peak, m.held)
	if !relayed {
		return true
	}
	switch m.cfg.Guard {
	case GuardPause:
		if !m.paused && m.held >= m.xoff {
			m.paused = true
			m.pauses++
			m.send(0xFFFF, true)
			m.timer = m.n.clk.AfterFunc(m.period(), m.refresh)
		}
	case GuardECN:
		if p.ECN == pkt.ECT0 || p.ECN == pkt.ECT1 {
			if m.mark(p) {
				p.ECN = pkt.CE
			}
		}
	}
	return true
}

// mark draws RED's decision from a hash of the frame (deterministic, no shared random stream).
func (m *nicMem) mark(p *pkt.Packet) bool {
	c := m.cfg
	switch {
	case m.held <= c.KMin:
		return false
	case m.held >= c.KMax:
		return true
	}
	prob := c.PMax * float64(m.held-c.KMin) / float64(c.KMax-c.KMin)
	h := mix32(uint64(p.Flow)<<32 ^ uint64(p.PSN) ^ m.n.cfg.Seed<<17)
	return float64(h)/float64(1<<32) < prob
}

// release returns a data frame's bytes when it leaves its egress queue, resuming at XON.
func (m *nicMem) release(p *pkt.Packet) {
	m.held -= int64(p.Size)
	if m.paused && m.held <= m.xon {
		m.paused = false
		if m.timer != nil {
			m.timer.Stop()
			m.timer = nil
		}
		m.send(0, true)
	}
}

func (m *nicMem) period() clock.Time {
	slowest := m.n.cfg.Ports[0].RateBps
	for _, p := range m.n.cfg.Ports {
		slowest = min(slowest, p.RateBps)
	}
	return clock.TxTime(0xFFFF*512/8, slowest) / 2
}

func (m *nicMem) refreshFire() {
	m.timer = nil
	if !m.paused {
		return
	}
	m.send(0xFFFF, false)
	m.timer = m.n.clk.AfterFunc(m.period(), m.refresh)
}

// send pauses (quanta > 0) or resumes every data priority out of every port. A resume leaves out the
// priorities relay PFC still holds paused on that port (ingress groups, pass-through pauses), which
// share the 802.1Qbb priorities with the guard.
func (m *nicMem) send(quanta uint16, change bool) {
	n := m.n
	all := uint8(0xFF &^ (1 << n.cfg.ControlPrio))
	for port := range n.ports {
		mask := all
		if quanta == 0 {
			for prio := 0; prio < 8; prio++ {
				if n.relayHolds(port, prio) {
					mask &^= 1 << uint(prio)
				}
			}
			if mask == 0 {
				continue
			}
		}
		f := &pkt.Packet{Kind: pkt.PFC, Size: pkt.MinFrame, Src: -1, Dst: -1, Prio: n.cfg.ControlPrio, PauseMask: mask}
		for prio := 0; prio < 8; prio++ {
			if mask&(1<<uint(prio)) != 0 {
				f.PauseQuanta[prio] = quanta
			}
		}
		n.SendControl(port, f)
		if change {
			n.log.AddPause(records.Pause{At: n.clk.Now(), Device: n.cfg.Device, Kind: records.Host,
				Port: int16(port), Queue: -1, On: quanta > 0, Sent: true})
		}
	}
}

// MemHeld reports the bytes of data the NIC's egress queues hold now, the peak, and the limit (0:
// unbounded).
func (n *NIC) MemHeld() (held, peak, limit int64) {
	if n.mem == nil {
		return 0, 0, 0
	}
	return n.mem.held, n.mem.peak, n.mem.cfg.Bytes
}

// MemThresholds are the guard's pause and resume levels (GuardPause; 0 otherwise).
func (n *NIC) MemThresholds() (xoff, xon int64) {
	if n.mem == nil {
		return 0, 0
	}
	return n.mem.xoff, n.mem.xon
}

// relayHolds reports whether relay PFC keeps priority prio paused toward the switch on port.
func (n *NIC) relayHolds(port, prio int) bool {
	if n.ingress != nil && n.ingress.groups[port][prio].paused {
		return true
	}
	return n.pass != nil && n.pass.pausedElsewhere(port, prio, n.clk.Now())
}

// memHolds reports whether the memory guard keeps the node's upstream paused (relay PFC then sends no
// resume of its own).
func (n *NIC) memHolds() bool { return n.mem != nil && n.mem.paused }
