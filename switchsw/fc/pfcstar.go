package fc

import (
	"fmt"

	"github.com/fabriclab/fabriclab/pkt"
)

func init() { Register("pfcstar", Mode{New: NewPFCStar, Ingress: true}) }

// PFCStar is PFC* (the PortFC paper's "improved PFC", Tagger-style queue cutover): PFC with a per-hop
// priority increase. A data frame arriving with tag t (priority Base+t) leaves with tag min(t+1, P-1),
// so a frame's tag counts the switches it has crossed, capped at P-1, and every lossless priority only
// waits on the same or a higher one. Priorities outside Base..Base+P-1 read as tag 0. Ingress
// accounting stays on the arrival priority (Loc.InPrio), so pauses go upstream for the priority the
// upstream device actually sent.
type PFCStar struct {
	*PFC
	tags, base int
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
	return &PFCStar{PFC: pfc, tags: tags, base: base}, nil
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

// Classify raises the frame's tag by one hop, then queues it as PFC does.
func (f *PFCStar) Classify(out int, p *pkt.Packet) (int, Class) {
	p.Prio = uint8(f.base + min(f.Tag(int(p.Prio))+1, f.tags-1))
	return f.PFC.Classify(out, p)
}
