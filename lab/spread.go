package lab

import (
	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/nodes"
)

// Multipath routings (the FC+ paper's KSP-K, DF-KSP and FC edge-disjoint paths, the Fibre Channel
// paper's up*/down* and smart routing) give every pair K paths; a run uses all of them as the papers'
// throughput analyses do: each flow carries its pair's K source routes and its NIC spreads it over them
// (routing.spread, nodes/spread.go). Before, a flow took the first path only, so KSP-1 and KSP-8 ran
// byte-identical.

// spreadRouters are the algorithms whose paths a run spreads over.
var spreadRouters = map[string]bool{"ksp": true, "dfksp": true, "fc": true, "updown": true, "smart": true}

// DefaultSpreadGap is the flowlet gap for routing.spread: flowlet when routing.flowlet_gap is unset: the
// expander thesis' LetFlow gap (50 us).
const DefaultSpreadGap = spec.Time(50 * clock.Microsecond)

// spreads reports whether the lab's flows are spread over their pair's paths.
func (l *Lab) spreads() bool { return spreadRouters[l.Router.Name()] }

// hostSpread tells the NICs how to spread.
func (l *Lab) hostSpread(c *nodes.Config) {
	if !l.spreads() {
		return
	}
	r := l.Spec.Routing
	c.Spread = r.Spread
	if c.Spread == "" {
		c.Spread = spec.DefaultSpread
	}
	if c.Spread == nodes.SpreadFlowlet {
		gap := r.FlowletGap
		if gap <= 0 {
			gap = DefaultSpreadGap
		}
		c.SpreadGap = gap.Clock()
	}
}
