package lab

import (
	"fmt"

	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/traffic"
)

// flowRouted plans a flow whose router picks its path per flow (route.FlowRouter: vlb, hybrid): the
// chosen path becomes the flow's source route unless the router leaves it to the tables, and a second
// path (HYBRID's VLB part) rides along for the NIC to switch to.
func (l *Lab) flowRouted(fr route.FlowRouter, f traffic.Flow) (FlowPlan, error) {
	g := l.Graph
	r, err := fr.FlowRoute(f.Src, f.Dst, f.ID, f.Size)
	if err != nil {
		return FlowPlan{}, fmt.Errorf("flow %d (h%d->h%d): %w", f.ID, f.Src, f.Dst, err)
	}
	fp := FlowPlan{Flow: f, SrcNode: g.Hosts[f.Src], Path: r.Path}
	if !r.Table {
		fp.Route = r.Path.Route()
	}
	if len(r.Then.Nodes) > 0 {
		fp.Then, fp.ThenAfter = r.Then.Route(), r.After
		fp.ThenBase = l.pathBase(r.Then)
	}
	fp.Base = l.pathBase(r.Path)
	// The ideal is the flow's first path standing alone: for HYBRID the direct one, a lower bound on
	// what the flow could do.
	fp.Ideal = nodes.IdealFCT(f.Size, l.Spec.Host.MTU, len(fp.Route), r.Path.Rates(g), r.Path.Delays(g))
	return fp, nil
}

// NICFlow is the flow as its source NIC is asked to send it.
func (fp *FlowPlan) NICFlow() nodes.Flow {
	return nodes.Flow{ID: fp.ID, Dst: int32(fp.Dst), Size: fp.Size, Route: fp.Route, Then: fp.Then, After: fp.ThenAfter,
		Paths: fp.Paths, Base: fp.Base, ThenBase: fp.ThenBase, PathBases: fp.PathBases, Ideal: fp.Ideal, Class: fp.Class}
}
