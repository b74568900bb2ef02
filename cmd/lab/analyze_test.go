package main

import (
	"math"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/lab"
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

// --updown-paths: the FC+ paper's N_P4 / N_P6 / N_P per pair, one enumeration for every limit; a limit
// that is not a hop count or all, or a family without virtual layers, is refused naming what is wrong.
func TestAnalyzeUpDownPaths(t *testing.T) {
	g := topo.MustBuild("fc", "switches=20", "s=6", "k=2", "hosts_per_switch=1", "seed=5")
	a := &analysis{}
	if err := analyzeUpDownPaths(&lab.Lab{Graph: g}, a, lpOptions{udLimits: "1, all", udNLP: 1}); err != nil {
		t.Fatal(err)
	}
	// Two layers: s/(N-1) one-link paths per pair and (s + d(d-1))/(N-1) in all (d = s/2 = 3).
	if math.Abs(a.UpDownPaths["1"]-6.0/19) > 1e-12 || math.Abs(a.UpDownPaths["all"]-12.0/19) > 1e-12 || a.UpDownNLP != 1 {
		t.Errorf("FC k=2 N=20 s=6: %v (nlp %d), want 1: 6/19, all: 12/19", a.UpDownPaths, a.UpDownNLP)
	}
	for _, c := range []struct{ limits, want string }{{"4,x", `"x"`}, {"0", `"0"`}, {"", `""`}} {
		if err := analyzeUpDownPaths(&lab.Lab{Graph: g}, &analysis{}, lpOptions{udLimits: c.limits, udNLP: 1}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--updown-paths %q: err %v, want one naming %s", c.limits, err, c.want)
		}
	}
	x := topo.MustBuild("xpander", "switches=16", "degree=4", "hosts_per_switch=1")
	if err := analyzeUpDownPaths(&lab.Lab{Graph: x}, &analysis{}, lpOptions{udLimits: "4", udNLP: 1}); err == nil || !strings.Contains(err.Error(), "xpander") {
		t.Errorf("xpander: err %v, want one naming the family", err)
	}
}
