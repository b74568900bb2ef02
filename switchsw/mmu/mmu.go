// Package mmu is the switch's shared-buffer memory management unit, modelled on the Broadcom-style MMU in
// the HPCC ns-3 simulator (switch-mmu.cc) that the seed papers were run on, extended with egress
// accounting so lossy classes get real drop-tail.
//
// One buffer is split into three regions, fixed at construction:
//
//   - reserve: ReserveBytes for every accounting unit (each ingress (port, lossless priority) group and each
//     egress data queue), so no unit can be starved to zero by the others;
//   - headroom: per port, per lossless priority, absorbing what is still on the wire after a pause is sent;
//   - shared: everything else, used on demand.
//
// A frame is charged exactly once, by one of two accountings chosen by its class:
//
//   - ingress (lossless, PFC-like): to its ingress (port, priority) group. Beyond the reserve it takes shared
//     space up to the group's XOFF limit (static bytes, or dynamic alpha x free shared space as in HPCC);
//     past that limit it goes to the group's headroom; only a full headroom drops it.
//   - egress (lossy drop-tail, or lossless schemes that bound queues themselves such as PortFC): to its
//     egress queue. Beyond the reserve it takes shared space, limited for lossy queues by a dynamic
//     threshold (alpha x free shared space) or a static per-queue cap.
//
// Release takes the same path back. The MMU holds no pause state: it answers "over XOFF?"/"under XON?"
// and the flow-control module decides what to send.
package mmu

import "fmt"

// Config sizes the buffer. All byte quantities are frame bytes (pkt.Packet.Size).
type Config struct {
	Ports  int
	Prios  int // ingress priority groups per port
	Queues int // egress data queues per port

	BufferBytes  int64
	ReserveBytes int64 // per unit: each lossless ingress group and each egress data queue
	// Lossless[prio] marks the priorities that get ingress accounting, a reserve and headroom.
	Lossless []bool
	// Headroom[port] is the headroom of each lossless group on that port.
	Headroom []int64

	// Egress (lossy) limit: Alpha > 0 is the dynamic threshold (a queue may hold at most Alpha x free
	// shared bytes beyond its reserve); otherwise QueueLimit > 0 caps each queue's total bytes; otherwise a
	// queue may use the whole shared region.
	Alpha      float64
	QueueLimit int64

	// Ingress (lossless) limits. PFCAlpha > 0 selects the dynamic XOFF of HPCC: a group goes to headroom and
	// asks for a pause once its shared bytes exceed PFCAlpha x free shared bytes, and may resume once they
	// are ResumeOffset below it. Otherwise XOFF[port]/XON[port] are static limits on a group's total bytes.
	PFCAlpha     float64
	ResumeOffset int64
	XOFF, XON    []int64
}

type group struct {
	bytes int64 // reserve + shared bytes held
	hdrm  int64 // headroom bytes held
}

// MMU is the buffer state of one switch. It is not safe for concurrent use (engines are single-threaded).
//
// What a frame's admission and release read comes first, with copies of the settings they read and a
// port's three limits side by side (limits): at fat-tree k=16 the MMU is out of cache by a switch's
// next frame, and those reads were spread over four lines of the struct and three arrays.
type MMU struct {
	groups     []group // [port*Prios+prio]
	prios      int     // cfg.Prios
	reserve    int64   // cfg.ReserveBytes
	pfcAlpha   float64 // cfg.PFCAlpha
	sharedSize int64
	sharedUsed int64
	used       int64 // all bytes held, any region
	maxHdrm    int64 // most headroom any one group has held: how close a run came to a violation
	limits     []portLimits
	queues     []int64 // [port*Queues+q] bytes charged by egress accounting
	nq         int     // cfg.Queues
	alpha      float64 // cfg.Alpha
	queueLimit int64   // cfg.QueueLimit
	resumeOff  int64   // cfg.ResumeOffset

	cfg                  Config
	hdrmTotal, rsrvTotal int64
}

// portLimits are cfg.XOFF, cfg.XON and cfg.Headroom of one port.
type portLimits struct{ xoff, xon, headroom int64 }

// New checks cfg and returns an empty MMU.
func New(cfg Config) (*MMU, error) {
	if cfg.Ports < 1 || cfg.Prios < 1 || cfg.Queues < 1 {
		return nil, fmt.Errorf("mmu: need at least one port, priority and queue (got %d, %d, %d)", cfg.Ports, cfg.Prios, cfg.Queues)
	}
	if len(cfg.Lossless) != cfg.Prios {
		return nil, fmt.Errorf("mmu: lossless flags: got %d, want one per priority (%d)", len(cfg.Lossless), cfg.Prios)
	}
	if len(cfg.Headroom) != cfg.Ports || len(cfg.XOFF) != cfg.Ports || len(cfg.XON) != cfg.Ports {
		return nil, fmt.Errorf("mmu: headroom/xoff/xon need one entry per port (%d)", cfg.Ports)
	}
	if cfg.BufferBytes <= 0 || cfg.ReserveBytes < 0 || cfg.Alpha < 0 || cfg.PFCAlpha < 0 {
		return nil, fmt.Errorf("mmu: buffer must be positive and reserve, alpha non-negative")
	}
	nll := 0
	for _, l := range cfg.Lossless {
		if l {
			nll++
		}
	}
	m := &MMU{cfg: cfg, groups: make([]group, cfg.Ports*cfg.Prios), queues: make([]int64, cfg.Ports*cfg.Queues),
		prios: cfg.Prios, reserve: cfg.ReserveBytes, pfcAlpha: cfg.PFCAlpha, nq: cfg.Queues, alpha: cfg.Alpha,
		queueLimit: cfg.QueueLimit, resumeOff: cfg.ResumeOffset, limits: make([]portLimits, cfg.Ports)}
	for port := range m.limits {
		m.limits[port] = portLimits{xoff: cfg.XOFF[port], xon: cfg.XON[port], headroom: cfg.Headroom[port]}
	}
	for port := 0; port < cfg.Ports; port++ {
		if nll > 0 {
			if cfg.Headroom[port] < 0 {
				return nil, fmt.Errorf("mmu: port %d: negative headroom", port)
			}
			if cfg.PFCAlpha == 0 && (cfg.XOFF[port] <= 0 || cfg.XON[port] < 0 || cfg.XON[port] > cfg.XOFF[port]) {
				return nil, fmt.Errorf("mmu: port %d: static thresholds need 0 <= xon (%d) <= xoff (%d), xoff > 0", port, cfg.XON[port], cfg.XOFF[port])
			}
		}
		m.hdrmTotal += cfg.Headroom[port] * int64(nll)
	}
	m.rsrvTotal = cfg.ReserveBytes * int64(cfg.Ports*(nll+cfg.Queues))
	m.sharedSize = cfg.BufferBytes - m.hdrmTotal - m.rsrvTotal
	if m.sharedSize <= 0 {
		return nil, fmt.Errorf("mmu: buffer %d B leaves no shared space after reserves (%d B) and headroom (%d B)",
			cfg.BufferBytes, m.rsrvTotal, m.hdrmTotal)
	}
	return m, nil
}

// SharedSize is the shared region's size in bytes.
func (m *MMU) SharedSize() int64 { return m.sharedSize }

// SharedUsed is the shared region's occupancy.
func (m *MMU) SharedUsed() int64 { return m.sharedUsed }

// Used is the total bytes held in any region.
func (m *MMU) Used() int64 { return m.used }

// HeadroomTotal and ReserveTotal are the sizes of the fixed regions.
func (m *MMU) HeadroomTotal() int64 { return m.hdrmTotal }
func (m *MMU) ReserveTotal() int64  { return m.rsrvTotal }

// MaxHeadroomUsed is the most headroom any one ingress group has held so far.
func (m *MMU) MaxHeadroomUsed() int64 { return m.maxHdrm }

func (m *MMU) free() int64 { return m.sharedSize - m.sharedUsed }

func over(bytes, reserve int64) int64 {
	if bytes > reserve {
		return bytes - reserve
	}
	return 0
}

// pfcThreshold is the dynamic XOFF on a group's shared bytes.
func (m *MMU) pfcThreshold() int64 { return int64(m.pfcAlpha * float64(m.free())) }

// overLimit reports whether a group holding bytes would be past its XOFF limit.
func (m *MMU) overLimit(port int, bytes int64) bool {
	if m.pfcAlpha > 0 {
		return over(bytes, m.reserve) > m.pfcThreshold()
	}
	return bytes > m.limits[port].xoff
}

// AdmitIngress charges a lossless frame of size bytes to group (port, prio) and reports whether it fits.
// A false return is a lossless drop: the headroom was too small for what arrived after the pause.
func (m *MMU) AdmitIngress(port, prio int, size int64) bool {
	g := &m.groups[port*m.prios+prio]
	nb := g.bytes + size
	if nb <= m.reserve {
		g.bytes = nb
		m.used += size
		return true
	}
	sh := over(nb, m.reserve) - over(g.bytes, m.reserve)
	if !m.overLimit(port, nb) && m.sharedUsed+sh <= m.sharedSize {
		g.bytes = nb
		m.sharedUsed += sh
		m.used += size
		return true
	}
	if g.hdrm+size <= m.limits[port].headroom {
		g.hdrm += size
		m.used += size
		m.maxHdrm = max(m.maxHdrm, g.hdrm)
		return true
	}
	return false
}

// ReleaseIngress returns a frame charged by AdmitIngress. Headroom drains first, as in HPCC, so a group
// leaves headroom (and may resume) as early as possible.
func (m *MMU) ReleaseIngress(port, prio int, size int64) {
	g := &m.groups[port*m.prios+prio]
	h := min(g.hdrm, size)
	g.hdrm -= h
	rest := size - h
	m.sharedUsed -= over(g.bytes, m.reserve) - over(g.bytes-rest, m.reserve)
	g.bytes -= rest
	m.used -= size
}

// ShouldPause reports whether group (port, prio) is at or past XOFF or is using headroom.
func (m *MMU) ShouldPause(port, prio int) bool {
	g := &m.groups[port*m.prios+prio]
	if g.hdrm > 0 {
		return true
	}
	if m.pfcAlpha > 0 {
		return over(g.bytes, m.reserve) >= m.pfcThreshold()
	}
	return g.bytes >= m.limits[port].xoff
}

// ShouldResume reports whether group (port, prio) has drained to XON with its headroom empty.
func (m *MMU) ShouldResume(port, prio int) bool {
	g := &m.groups[port*m.prios+prio]
	if g.hdrm > 0 {
		return false
	}
	if m.pfcAlpha > 0 {
		sh := over(g.bytes, m.reserve)
		return sh == 0 || sh+m.resumeOff <= m.pfcThreshold()
	}
	return g.bytes <= m.limits[port].xon
}

// Ingress returns group (port, prio)'s bytes outside headroom and in headroom.
func (m *MMU) Ingress(port, prio int) (bytes, headroom int64) {
	g := &m.groups[port*m.prios+prio]
	return g.bytes, g.hdrm
}

// AdmitEgress charges a frame of size bytes to egress queue (port, q). limited applies the lossy limit
// (dynamic threshold or static cap); without it only a full shared region refuses the frame.
func (m *MMU) AdmitEgress(port, q int, size int64, limited bool) bool {
	b := &m.queues[port*m.nq+q]
	nb := *b + size
	sh := over(nb, m.reserve) - over(*b, m.reserve)
	if sh > 0 {
		if m.sharedUsed+sh > m.sharedSize {
			return false
		}
		if limited {
			switch {
			case m.alpha > 0:
				if float64(over(nb, m.reserve)) > m.alpha*float64(m.free()) {
					return false
				}
			case m.queueLimit > 0:
				if nb > m.queueLimit {
					return false
				}
			}
		}
	}
	*b = nb
	m.sharedUsed += sh
	m.used += size
	return true
}

// ReleaseEgress returns a frame charged by AdmitEgress.
func (m *MMU) ReleaseEgress(port, q int, size int64) {
	b := &m.queues[port*m.nq+q]
	m.sharedUsed -= over(*b, m.reserve) - over(*b-size, m.reserve)
	*b -= size
	m.used -= size
}

// Egress returns the bytes charged to egress queue (port, q).
func (m *MMU) Egress(port, q int) int64 { return m.queues[port*m.nq+q] }

// Split is how New divided the buffer: the shared pool, and the headroom and reserves set apart.
func (m *MMU) Split() (shared, headroom, reserve int64) {
	return m.sharedSize, m.hdrmTotal, m.rsrvTotal
}
