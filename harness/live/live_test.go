package live

import (
	"testing"

	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// Cutting an edge switch's uplink leaves the edge its other uplink toward a remote host, keeps every
// port number, and leaves a host behind a cut access link unreachable.
func TestWithoutLinksReroutes(t *testing.T) {
	g, err := topo.Build("fattree", map[string]string{"k": "4"})
	if err != nil {
		t.Fatal(err)
	}
	full, err := route.Shortest(g)
	if err != nil {
		t.Fatal(err)
	}
	s0 := g.Switches[0]
	up := -1 // s0's first uplink (toward an aggregation switch)
	for p, li := range g.Nodes[s0].Ports {
		if g.Nodes[g.Links[li].Other(s0).Node].Kind == topo.Switch {
			up = p
			break
		}
	}
	far := len(g.Hosts) - 1
	if len(full.Ports(s0, far)) != 2 {
		t.Fatalf("s0 -> h%d: want 2 uplinks in the ECMP set, got %v", far, full.Ports(s0, far))
	}
	cut, err := route.ShortestWith(route.WithoutLinks(g, map[int]bool{g.Nodes[s0].Ports[up]: true}), false)
	if err != nil {
		t.Fatal(err)
	}
	if set := cut.Ports(s0, far); len(set) != 1 || int(set[0]) == up {
		t.Fatalf("s0 -> h%d after cutting p%d: %v", far, up, set)
	}
	h0 := g.Hosts[0]
	cut, _ = route.ShortestWith(route.WithoutLinks(g, map[int]bool{g.Nodes[h0].Ports[0]: true}), false)
	if set := cut.Ports(g.Switches[len(g.Switches)-1], 0); len(set) != 0 {
		t.Fatalf("h0 cut off, yet a core switch routes to it through %v", set)
	}
	if len(g.Nodes[s0].Ports) != len(route.WithoutLinks(g, map[int]bool{0: true}).Nodes[s0].Ports) {
		t.Fatal("port count changed")
	}
}

func TestFamilySpec(t *testing.T) {
	l, _, err := Build(Config{Name: "x", Family: "fattree", Params: map[string]string{"k": "4", "rate": "10Gbps"}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.EffectiveDilation() != DefaultDilation || l.Graph.Links[0].RateBps != 10e9 || l.Spec.Host.Transport != "kernel-tcp" {
		t.Fatalf("dilation %v rate %v transport %s", l.Spec.EffectiveDilation(), l.Graph.Links[0].RateBps, l.Spec.Host.Transport)
	}
	if _, _, err := Build(Config{Name: "x", Family: "fattree", Params: map[string]string{"k": "3"}}); err == nil {
		t.Fatal("fattree k=3 accepted")
	}
}
