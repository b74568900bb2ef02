package lab

import (
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/nodes"
)

// Routers whose flows choose among candidate paths at run time (route.Adaptive: ugal, telemetry) leave
// the choice to the sending NIC: every flow carries its candidates as source routes and starts on the
// first; the NIC's policy moves it (nodes/telemetry.go). A pinned flow (path:, via:) keeps its pin.

// candidatePaths gives fp its pair's paths as candidates when the NIC chooses among them: an adaptive
// router (UGAL, telemetry: the NIC picks and reroutes) or a multipath one (spread.go: the NIC spreads). A
// pinned flow keeps its one route. fp.Cands keeps the paths whole (classes) for classTurns.
func (l *Lab) candidatePaths(fp *FlowPlan) error {
	if _, adaptive := l.Router.(route.Adaptive); !adaptive && !l.spreads() {
		return nil
	}
	if len(fp.Via) > 0 || len(fp.Flow.Path) > 0 {
		return nil
	}
	ps, err := l.Router.Paths(fp.Src, fp.Dst)
	if err != nil {
		return fmt.Errorf("flow %d (h%d->h%d): %w", fp.ID, fp.Src, fp.Dst, err)
	}
	if len(ps) < 2 {
		return nil // one candidate: nothing to choose
	}
	fp.Cands = ps
	fp.Paths = make([][]uint8, len(ps))
	fp.PathBases = make([]nodes.PathBase, len(ps))
	for i, p := range ps {
		fp.Paths[i] = p.Route()
		fp.PathBases[i] = l.pathBase(p)
	}
	fp.Route = fp.Paths[0]
	return nil
}

// hostPathSelect names the NIC policy of an adaptive router, and UGAL's bias: the spec's
// routing.threshold is bytes of queue, which the NIC compares as their time at the host link rate.
func (l *Lab) hostPathSelect(c *nodes.Config) {
	a, ok := l.Router.(route.Adaptive)
	if !ok {
		return
	}
	c.PathSelect = a.PathSelect()
	// Per-packet UGAL reorders every flow: its receivers get the Benchmark's reorder buffer.
	c.ReorderBuffer = c.PathSelect == nodes.SelectUGALPB
	if r, ok := l.Router.(*route.ATE); ok {
		l.hostATE(r, c) // ate.go
	}
	c.Telemetry.PaperWait = l.Spec.Routing.RerouteWait == "paper"
	if d, ok := l.Router.(*route.Dragonfly); ok && d.ThresholdBytes > 0 && len(c.Ports) > 0 {
		c.Telemetry.Threshold = clock.TxTime(int(d.ThresholdBytes), c.Ports[0].RateBps)
	}
}
