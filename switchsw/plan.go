package switchsw

import (
	"fmt"

	"github.com/fabriclab/fabriclab/switchsw/mmu"
)

// BufferPlan is how a switch built from a Config divides its buffer, for checks made before a run: a
// lab refuses a buffer with no shared space left, and warns about thresholds that cannot act.
type BufferPlan struct {
	Buffer, Shared, Headroom, Reserve int64
	Lossless                          int     // lossless priorities
	PortHeadroom                      []int64 // per port, per lossless priority: as configured (0: no PFC)
	PortNeed                          []int64 // per port: Headroom(rate, delay, mtu), what the link needs
	XOFF                              []int64 // per port: static XOFF (0 under a dynamic threshold)
}

// PlanBuffer resolves c as New does and returns its buffer plan, or the error New would return for
// anything but the buffer's size: Shared <= 0 is New's "no shared space", left to the caller to word.
func PlanBuffer(c Config) (BufferPlan, error) {
	r, err := resolve(c)
	if err != nil {
		return BufferPlan{}, err
	}
	// Split a buffer too large to fail, so a too-small one still reports what it lacks.
	probe := r.mmu
	probe.BufferBytes = 1 << 62
	m, err := mmu.New(probe)
	if err != nil {
		return BufferPlan{}, fmt.Errorf("switch %d: %w", r.Device, err)
	}
	p := BufferPlan{Buffer: r.BufferBytes, PortHeadroom: r.mmu.Headroom, XOFF: r.mmu.XOFF}
	_, p.Headroom, p.Reserve = m.Split()
	p.Shared = p.Buffer - p.Headroom - p.Reserve
	for _, l := range r.mmu.Lossless {
		if l {
			p.Lossless++
		}
	}
	for _, pc := range r.Ports {
		p.PortNeed = append(p.PortNeed, Headroom(pc.RateBps, pc.Delay, r.MTU))
	}
	return p, nil
}

// NeedBuffer is the buffer that leaves shared space after headroom and reserves: the least a spec
// may give.
func (p BufferPlan) NeedBuffer() int64 { return p.Headroom + p.Reserve + 1 }
