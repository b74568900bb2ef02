package main

import (
	"math"
	"testing"

	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// The Appendix C bound shows for a fabric of equal switches only, and the graph's own average switch
// path can never beat the Cerf bound under it.
func TestRegularBound(t *testing.T) {
	g := topo.MustBuild("xpander", "switches=64", "degree=6", "hosts_per_switch=2")
	f, err := route.NewFabric(g)
	if err != nil {
		t.Fatal(err)
	}
	rb := regular(f)
	if rb == nil {
		t.Fatal("no regular bound for XP(64,6,2)")
	}
	// 6 switches at distance 1, 30 at 2, the other 27 at 3.
	if rb.Degree != 6 || rb.Hosts != 2 || math.Abs(rb.DStar-147.0/63) > 1e-12 {
		t.Errorf("XP(64,6,2): %+v, want r=6 s=2 d*=147/63", rb)
	}
	if avg := g.Stats().SwitchAvgShortestPath; avg < rb.DStar {
		t.Errorf("average switch path %.4f below the Cerf bound %.4f", avg, rb.DStar)
	}
	if want := rb.OffSwitch * 128 / 126; math.Abs(rb.PerHost-want) > 1e-12 {
		t.Errorf("per-host %g, want off-switch x 128/126 = %g", rb.PerHost, want)
	}
	ft, err := route.NewFabric(topo.MustBuild("fattree", "k=4"))
	if err != nil {
		t.Fatal(err)
	}
	if rb := regular(ft); rb != nil {
		t.Errorf("fat-tree (edge, aggregation and core switches differ) got a regular bound %+v", rb)
	}
}
