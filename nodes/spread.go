package nodes

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/fabriclab/fabriclab/clock"
)

// Spreading a flow over the paths of its pair (Flow.Paths) when the router gives K source routes and no
// path-selection policy measures them (Config.PathSelect ""): the multipath routings of the FC+ and
// Fibre Channel papers (ksp, dfksp, fc, updown, smart). This is the one place a sending QP's path is
// chosen (qp.routeFor); a change of path goes through qp.usePath, which sizes the per-path limits.
//
//   - "flow": one path per flow, drawn by a seeded hash of the flow (ECMP's rule over the K paths).
//   - "flowlet": a new draw after the flow was idle for Config.SpreadGap (LetFlow's rule at the NIC).
//   - "packet": packet PSN goes on path (PSN + offset) mod K, offset drawn per flow, so a retransmission
//     takes the path its original took (spraying; go-back-N and lossless transports see reordering as
//     loss, IRN tolerates it).
const (
	SpreadFlow    = "flow"
	SpreadFlowlet = "flowlet"
	SpreadPacket  = "packet"
)

func (c *Config) checkSpread() error {
	switch c.Spread {
	case "", SpreadFlow, SpreadPacket:
	case SpreadFlowlet:
		if c.SpreadGap <= 0 {
			return fmt.Errorf("nodes: config.spread flowlet needs a positive spread_gap (got %v)", c.SpreadGap)
		}
	default:
		return fmt.Errorf("nodes: config.spread %q: want flow, flowlet, packet or empty", c.Spread)
	}
	if c.Spread != "" && c.PathSelect != "" {
		return fmt.Errorf("nodes: config.spread %q and path_select %q both choose paths; set one", c.Spread, c.PathSelect)
	}
	return nil
}

// spreader is one flow's choice among its candidate routes.
type spreader struct {
	mode   string
	paths  [][]uint8
	bases  []PathBase // Flow.PathBases; may be nil
	rng    *rand.Rand
	gap    clock.Time
	cur    int
	last   clock.Time
	offset int
}

func (n *NIC) newSpreader(q *qp, paths [][]uint8, bases []PathBase) *spreader {
	s := &spreader{mode: n.cfg.Spread, paths: paths, bases: bases, gap: n.cfg.SpreadGap,
		rng: rand.New(rand.NewPCG(n.cfg.Seed^0x5b7ead, uint64(q.id)))}
	s.cur = s.rng.IntN(len(paths))
	s.offset = s.cur
	s.last = -1
	return s
}

// pick returns the candidate index packet psn goes on, sent at now.
func (s *spreader) pick(psn uint32, now clock.Time) int {
	switch s.mode {
	case SpreadPacket:
		return (int(psn%uint32(len(s.paths))) + s.offset) % len(s.paths)
	case SpreadFlowlet:
		if s.last >= 0 && now-s.last > s.gap {
			s.cur = s.rng.IntN(len(s.paths))
		}
		s.last = now
	}
	return s.cur
}

// routeFor is the source route of data packet psn carrying payload bytes, and the index of the candidate
// it is (-1 without candidates), and counts the bytes against that candidate.
func (q *qp) routeFor(psn uint32, payload int32, now clock.Time) ([]uint8, int) {
	idx := -1
	route := q.route
	switch {
	case q.spread != nil:
		s := q.spread
		idx = s.pick(psn, now)
		if !slices.Equal(q.route, s.paths[idx]) {
			b := q.base
			if idx < len(s.bases) {
				b = s.bases[idx]
			}
			q.usePath(s.paths[idx], b)
		}
		route = q.route
	case q.sel != nil && q.sel.qdelay != nil: // ugal-pb: per packet (telemetry.go)
		idx = q.sel.pick(psn)
		if !slices.Equal(q.route, q.sel.paths[idx]) {
			q.usePath(q.sel.paths[idx], q.sel.base(idx))
		}
		route = q.route
	case q.sel != nil:
		idx = q.sel.cur
	}
	// By offset, not by send order, so a retransmission takes the same route as the original (the
	// thesis' rule: a packet goes direct iff the bytes up to and including it are at most Q).
	if q.then != nil && int64(psn)*int64(q.mtu)+int64(payload) > q.after {
		route = q.then
	}
	if idx >= 0 && q.rec.PathBytes != nil {
		q.rec.PathBytes[idx] += int64(payload)
	}
	return route, idx
}
