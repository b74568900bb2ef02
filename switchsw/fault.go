package switchsw

import (
	"fmt"

	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/fib"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
)

// SetFault impairs the link port transmits onto (egress.Fault; the zero Fault clears it). Frames the
// fault drops are the switch's drops, with reason link-down or link-loss, never lossless violations:
// a failed cable is not the flow control's doing.
func (s *Switch) SetFault(port int, f egress.Fault) {
	seed := uint64(s.cfg.Seed)<<16 ^ uint64(s.cfg.Device)<<8 ^ uint64(port)
	s.ports[port].SetFault(f, seed, func(p *pkt.Packet, reason string) {
		s.drops++
		s.log.Drops = append(s.log.Drops, records.Drop{At: s.clk.Now(), Device: s.cfg.Device, Port: int16(port),
			Queue: p.Queue, Flow: p.Flow, Reason: reason})
	})
}

// FaultCounters are the frames a port's link fault dropped so far (zero without a fault).
func (s *Switch) FaultCounters(port int) (down, lost uint64, f egress.Fault) {
	if fl, ok := s.ports[port].Link().(*egress.FaultLink); ok {
		return fl.Down, fl.Lost, fl.Fault
	}
	return 0, 0, egress.Fault{}
}

// SetFIB replaces the forwarding table (routing reacting to a failed or repaired link: the ECMP sets
// recomputed without it). Frames already queued keep the port they were given. A table that names a
// port the switch lacks is refused, and the old one stays.
func (s *Switch) SetFIB(table fib.Table) error {
	if err := table.Check("fib", len(s.ports)); err != nil {
		return fmt.Errorf("switch %d: %w", s.cfg.Device, err)
	}
	s.cfg.FIB = table
	s.setRoutes(table)
	return nil
}
