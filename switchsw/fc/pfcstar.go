package fc

import (
	"fmt"

	"github.com/fabriclab/fabriclab/pkt"
)

func init() { Register("pfcstar", Mode{New: NewPFCStar, Ingress: true}) }

// PFCStar is PFC* (the PortFC paper's "improved PFC", Tagger-style queue cutover): PFC with a per-hop
// priority increase. A frame's tag (priority Base+t) at any device is min(switches it crossed before
// that device, P-1) (docs/portfc.md §4): a switch raises the tag by one when the frame arrives from
// another switch, and keeps it when the frame arrives from a host, because the host already queued
// it at the right tag (its source sends tag 0; a relay node raised it when it crossed the switch before
// it, nodes.FIFOLayout). Every lossless priority then only waits on the same or a higher one, and on
// NDC(n,1) P = 2 separates a relay's queue (tag 1) from the senders' (tag 0). Priorities outside
// Base..Base+P-1 read as tag 0 below the range and P-1 above it. Ingress accounting stays on the
// arrival priority (Loc.InPrio): it is the queue the upstream device holds the frame in.
type PFCStar struct {
	*PFC
	tags, base  int
	everySwitch bool // PFCStarConfig.EverySwitch: raise also for frames from hosts
}

// NewPFCStar is the "pfcstar" Factory.
func NewPFCStar(dev Device, cfg Config) (Module, error) {
	tags, base := cfg.PFCStar.Tags, cfg.PFCStar.Base
	if tags == 0 {
		tags = 2
	}
	if tags < 1 || base < 0 || base+tags > dev.Prios() {
		return nil, fmt.Errorf("flow_control.pfcstar: tags %d from priority %d do not fit %d priorities", tags, base, dev.Prios())
	}
	pfc, err := newPFC(dev, cfg)
	if err != nil {
		return nil, err
	}
	return &PFCStar{PFC: pfc, tags: tags, base: base, everySwitch: cfg.PFCStar.EverySwitch}, nil
}

// Tag returns the tag a priority stands for.
func (f *PFCStar) Tag(prio int) int {
	t := prio - f.base
	if t < 0 || t >= f.tags {
		if t >= f.tags {
			return f.tags - 1
		}
		return 0
	}
	return t
}

// Classify raises the frame's tag when it crossed a switch just before this one (under EverySwitch:
// always), then queues it as PFC does.
func (f *PFCStar) Classify(out int, p *pkt.Packet) (int, Class) {
	t := f.Tag(int(p.Prio))
	if _, fromHost := f.dev.PeerHost(int(p.InPort)); !fromHost || f.everySwitch {
		t = min(t+1, f.tags-1)
	}
	p.Prio = uint8(f.base + t)
	return f.PFC.Classify(out, p)
}
