package switchsw

import (
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/fib"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/switchsw/fc"
	"github.com/fabriclab/fabriclab/switchsw/mmu"
)

// Config is one switch, as plain data: the lab layer fills it and the netns backend ships it to an agent
// as JSON. Byte quantities are frame bytes (pkt.Packet.Size); times are clock.Time picoseconds.
type Config struct {
	// Device is the switch's graph node index, written into every record.
	Device int32 `json:"device"`
	// Ports are the switch's ports in graph port order.
	Ports []PortConfig `json:"ports"`

	// Prios is the number of priorities (1..8, default 8); frame priorities above are clamped.
	Prios int `json:"prios,omitempty"`
	// DataQueues is the number of data queues per egress port (default Prios; PortFC uses n). Each port
	// also has two strict queues after them: flow-control frames first, then other control frames.
	DataQueues int `json:"data_queues,omitempty"`
	// Quantum is the DRR quantum among data queues in bytes (0 = egress default, 1500).
	Quantum int `json:"quantum,omitempty"`
	// MTU is the largest frame Size that can arrive (default 1500); it enters the headroom bound. Kernel
	// hosts sending GSO super-frames need it set to the largest super-frame.
	MTU int `json:"mtu,omitempty"`

	// BufferBytes is the shared buffer (required), ReserveBytes the guaranteed bytes per accounting unit
	// (each egress data queue and each ingress (port, lossless priority) group).
	BufferBytes  int64 `json:"buffer_bytes"`
	ReserveBytes int64 `json:"reserve_bytes,omitempty"`
	// Alpha is the lossy drop-tail dynamic threshold: a queue may take Alpha x the free shared buffer.
	// 0 = static: QueueLimitBytes per queue if set, else the whole shared buffer.
	Alpha           float64 `json:"alpha,omitempty"`
	QueueLimitBytes int64   `json:"queue_limit_bytes,omitempty"`
	// Lossless marks lossless priorities (nil = all, in modes that have lossless classes).
	Lossless []bool `json:"lossless,omitempty"`

	FlowControl fc.Config `json:"flow_control"`
	ECN         ECNConfig `json:"ecn"`

	// FIB.Ports(dst host) is the set of equal-cost egress ports toward that host. Frames with a source
	// route (pkt.Packet.Route) ignore it.
	FIB fib.Table `json:"fib,omitzero"`
	// ECMPSeed seeds the ECMP hash; each switch salts it with its Device, so switches hash independently.
	ECMPSeed uint32 `json:"ecmp_seed,omitempty"`
	// FlowletGap > 0 enables flowlet switching (LetFlow): a flow whose packets were apart by more than
	// the gap picks a fresh random port of its set. 0 = per-flow ECMP by 5-tuple hash.
	FlowletGap clock.Time `json:"flowlet_gap,omitempty"`
	// Seed seeds the switch's random choices (RED, flowlets), together with Device.
	Seed int64 `json:"seed"`
	// SampleEvery > 0 records each port's queue occupancy at this period.
	SampleEvery clock.Time `json:"sample_every,omitempty"`
	// ClassUp lists the turns (in-port, out-port) at which a data frame moves up one priority: DF-KSP's
	// down-then-up turns in the virtual layers (FC+ paper §III-D), which the switch can tell from the two
	// ports alone. Ingress accounting and the pause sent upstream keep the arrival priority.
	ClassUp []Turn `json:"class_up,omitempty"`
	// AcksWithData queues ACKs and NACKs in the data queue of priority AckDataPrio, FIFO behind data
	// and paused with it, as csg-htsim's switches do (sim/queue_lossless_output.cpp: one FIFO per
	// egress port), instead of in the strict control queue that is never paused. They are not charged
	// to the buffer or the pause counters (htsim charges them: 64 bytes against 1064 of a data frame).
	AcksWithData bool  `json:"acks_with_data,omitempty"`
	AckDataPrio  uint8 `json:"ack_data_prio,omitempty"`
}

// Turn is an (in-port, out-port) pair of a switch.
type Turn struct {
	In  uint8 `json:"in"`
	Out uint8 `json:"out"`
}

// PortConfig is one port's link.
type PortConfig struct {
	RateBps float64 `json:"rate_bps"`
	// Delay is the link's one-way propagation delay. The link itself (the backend) applies it; the switch
	// uses it only for BDP and headroom arithmetic.
	Delay clock.Time `json:"delay"`
	// Overhead is added to each frame's size for serialization only (preamble, FCS, gap); 0 matches
	// the HPCC ns-3 model.
	Overhead int `json:"overhead,omitempty"`
	// PeerIsHost says the port faces host PeerHost (PortFC tells destination-direct traffic by it).
	PeerIsHost bool  `json:"peer_is_host,omitempty"`
	PeerHost   int32 `json:"peer_host,omitempty"`
}

// BDP is the port's one-way bandwidth-delay product in bytes, the unit of "Nbdp" thresholds.
func (p PortConfig) BDP() int64 { return int64(p.RateBps/8*p.Delay.Seconds() + 0.5) }

// ECNConfig is RED marking on egress queue bytes.
type ECNConfig struct {
	Enabled   bool    `json:"enabled"`
	KMinBytes int64   `json:"kmin_bytes"`
	KMaxBytes int64   `json:"kmax_bytes"`
	PMax      float64 `json:"pmax"`
}

// Headroom is the default PFC headroom of one lossless (port, priority) group: the most a group can
// receive after the frame that triggers its pause, under this engine's link model:
//
//	2 x rate x delay   wire in both directions: data already on the link, and the link time of the pause
//	+ 3 x mtu          the frame that crossed XOFF, the frame our port is serializing when the pause is
//	                   queued (transmission is not preemptive), the frame the upstream is serializing when
//	                   the pause lands
//	+ 64               the pause frame's own serialization
//
// HPCC's ns-3 uses 3 x rate x delay, which is looser at long delays and tighter at short ones; set
// FlowControl.HeadroomBytes to reproduce it.
func Headroom(rateBps float64, delay clock.Time, mtu int) int64 {
	return 2*int64(rateBps/8*delay.Seconds()+0.5) + 3*int64(mtu) + pkt.MinFrame + 4
}

const maxPrios = 8

// resolved is cfg with defaults applied and everything derived that the switch needs.
type resolved struct {
	Config
	lossless []bool // per priority, as the MMU and module see it
	mmu      mmu.Config
}

func resolve(cfg Config) (resolved, error) {
	r := resolved{Config: cfg}
	c := &r.Config
	if len(c.Ports) == 0 || len(c.Ports) > 255 {
		return r, fmt.Errorf("switch %d: ports: need 1..255, got %d", c.Device, len(c.Ports))
	}
	for i, p := range c.Ports {
		if p.RateBps <= 0 || p.Delay < 0 || p.Overhead < 0 {
			return r, fmt.Errorf("switch %d: ports[%d]: rate must be positive, delay and overhead non-negative", c.Device, i)
		}
	}
	if c.Prios == 0 {
		c.Prios = maxPrios
	}
	if c.Prios < 1 || c.Prios > maxPrios {
		return r, fmt.Errorf("switch %d: prios: want 1..8, got %d", c.Device, c.Prios)
	}
	if c.DataQueues == 0 {
		c.DataQueues = c.Prios
	}
	if c.DataQueues < 1 || c.DataQueues > 62 {
		return r, fmt.Errorf("switch %d: data_queues: want 1..62, got %d", c.Device, c.DataQueues)
	}
	if c.MTU == 0 {
		c.MTU = 1500
	}
	if c.BufferBytes <= 0 {
		return r, fmt.Errorf("switch %d: buffer_bytes must be positive", c.Device)
	}
	if c.Lossless != nil && len(c.Lossless) != c.Prios {
		return r, fmt.Errorf("switch %d: lossless: want %d flags (one per priority), got %d", c.Device, c.Prios, len(c.Lossless))
	}
	if e := c.ECN; e.Enabled && (e.KMinBytes < 0 || e.KMaxBytes <= e.KMinBytes || e.PMax <= 0 || e.PMax > 1) {
		return r, fmt.Errorf("switch %d: ecn: want 0 <= kmin < kmax and 0 < pmax <= 1, got %d %d %g", c.Device, e.KMinBytes, e.KMaxBytes, e.PMax)
	}
	for i, t := range c.ClassUp {
		if int(t.In) >= len(c.Ports) || int(t.Out) >= len(c.Ports) || t.In == t.Out {
			return r, fmt.Errorf("switch %d: class_up[%d]: turn %d->%d is not between two different ports of %d", c.Device, i, t.In, t.Out, len(c.Ports))
		}
	}
	if err := c.FIB.Check("fib", len(c.Ports)); err != nil {
		return r, fmt.Errorf("switch %d: %w", c.Device, err)
	}

	r.lossless = make([]bool, c.Prios)
	mode, err := fc.Lookup(c.FlowControl.Mode)
	if err != nil {
		return r, fmt.Errorf("switch %d: %w", c.Device, err)
	}
	if name := c.FlowControl.Mode; name != "" && name != "lossy" {
		for i := range r.lossless {
			r.lossless[i] = c.Lossless == nil || c.Lossless[i]
		}
	}
	n := len(c.Ports)
	m := mmu.Config{
		Ports: n, Prios: c.Prios, Queues: c.DataQueues,
		BufferBytes: c.BufferBytes, ReserveBytes: c.ReserveBytes,
		Lossless: make([]bool, c.Prios), Headroom: make([]int64, n), XOFF: make([]int64, n), XON: make([]int64, n),
		Alpha: c.Alpha, QueueLimit: c.QueueLimitBytes,
	}
	if mode.Ingress {
		copy(m.Lossless, r.lossless)
		f := &c.FlowControl
		// Alpha set: the dynamic threshold, whatever XOFF says (the spec layer always fills XOFF with its
		// 6 BDP default, so "XOFF unset" cannot be how a user asks for it). Neither set: HPCC's 1/8.
		if f.Alpha > 0 || f.XOFF.IsZero() {
			if f.Alpha == 0 {
				f.Alpha = 1.0 / 8
			}
			if f.ResumeOffset == 0 {
				f.ResumeOffset = 3000
			}
			m.PFCAlpha, m.ResumeOffset = f.Alpha, f.ResumeOffset
		}
		for i, p := range c.Ports {
			m.Headroom[i] = f.HeadroomBytes
			if m.Headroom[i] == 0 {
				m.Headroom[i] = Headroom(p.RateBps, p.Delay, c.MTU)
			}
			if m.PFCAlpha == 0 {
				bdp := p.BDP()
				m.XOFF[i] = f.XOFF.Resolve(bdp)
				if f.XON.IsZero() {
					m.XON[i] = m.XOFF[i] * 2 / 3
				} else {
					m.XON[i] = f.XON.Resolve(bdp)
				}
			}
		}
	}
	r.mmu = m
	return r, nil
}
