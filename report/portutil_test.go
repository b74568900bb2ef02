package report

import (
	"math"
	"testing"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// A host port busy for one 10 us bin of a 100 us span is 10% utilised; a switch-to-switch port busy at
// half rate for two bins is 10% too; every other port of the fabric counts, at 0.
func TestPortUtilSplitsServerAndNetworkPorts(t *testing.T) {
	g := topo.MustBuild("fattree", "k=4")
	h0 := g.Hosts[0]
	sw, swPort := -1, -1
	for _, n := range g.Switches {
		for p := range g.Nodes[n].Ports {
			if g.Nodes[g.Peer(n, p).Node].Kind == topo.Switch {
				sw, swPort = n, p
				break
			}
		}
		if sw >= 0 {
			break
		}
	}
	r := &Run{Name: "r", Graph: g, Links: []LinkSample{
		{AtS: 0, BinS: 1e-5, Device: h0, Port: 0, Util: 1, Bytes: 1250},
		{AtS: 2e-5, BinS: 1e-5, Device: sw, Port: swPort, Util: 0.5, Bytes: 625},
		{AtS: 3e-5, BinS: 1e-5, Device: sw, Port: swPort, Util: 0.5, Bytes: 625},
		{AtS: 9e-5, BinS: 1e-5, Device: h0, Port: 0, Util: 0},
	}}
	u, ok := PortUtilOf(r)
	if !ok {
		t.Fatal("no port utilisation")
	}
	// k=4: 16 hosts, each link two directions: 32 server ports; 32 switch links: 64 network ports.
	if len(u.Server) != 32 || len(u.Network) != 64 {
		t.Fatalf("%d server and %d network ports, want 32 and 64", len(u.Server), len(u.Network))
	}
	if math.Abs(u.SpanS-1e-4) > 1e-12 || math.Abs(NearestRank(u.Server, 1)-0.1) > 1e-9 || math.Abs(NearestRank(u.Network, 1)-0.1) > 1e-9 {
		t.Errorf("span %g, server max %g, network max %g; want 1e-4, 0.1, 0.1", u.SpanS, NearestRank(u.Server, 1), NearestRank(u.Network, 1))
	}
	if u.NetworkBytes != 1250 {
		t.Errorf("network bytes %d, want the switch port's 1250 (the host port's are not network)", u.NetworkBytes)
	}
	if NearestRank(u.Network, 0.98) != 0 || math.Abs(meanOf(u.Server)-0.1/32) > 1e-12 {
		t.Errorf("network p98 %g (want 0: one busy port of 64), server mean %g (want 0.1/32)", NearestRank(u.Network, 0.98), meanOf(u.Server))
	}
	if tb := PortUtilTable([]*Run{r, {Name: "unmetered"}}); len(tb.Rows) != 1 {
		t.Errorf("table rows %d, want 1 (the unmetered run left out)", len(tb.Rows))
	}
}

// Rail-only NDC(4,1): the HBD links' utilisation counts both directions of every HBD link over the
// metered span, and nothing the rail links carried; a class no link has is an error.
func TestLinkClassUtil(t *testing.T) {
	g := topo.MustBuild("ndc", "n=4", "k=1", "rail=true")
	var hbd []int // link indices
	for i, l := range g.Links {
		if l.Class == "hbd" {
			hbd = append(hbd, i)
		}
	}
	if len(hbd) != 16 {
		t.Fatalf("%d hbd links, want 16", len(hbd))
	}
	l0 := g.Links[hbd[0]]
	var rail *topo.Link
	for i := range g.Links {
		if g.Links[i].Class == "rail" {
			rail = &g.Links[i]
			break
		}
	}
	// One HBD direction full for the first 10 us of a 20 us span, the other end at half for 10 us; a
	// rail link busy throughout (not counted).
	full := int64(l0.RateBps * 1e-5 / 8)
	r := &Run{Graph: g, Links: []LinkSample{
		{AtS: 0, BinS: 1e-5, Device: l0.A.Node, Port: l0.A.Port, Bytes: full},
		{AtS: 1e-5, BinS: 1e-5, Device: l0.B.Node, Port: l0.B.Port, Bytes: full / 2},
		{AtS: 0, BinS: 1e-5, Device: rail.A.Node, Port: rail.A.Port, Bytes: 1e9},
	}}
	u, err := LinkClassUtil(r, "hbd")
	want := 1.5 * float64(full) * 8 / (32 * l0.RateBps * 2e-5)
	if err != nil || math.Abs(u-want) > 1e-12 {
		t.Errorf("hbd utilisation %v (%v), want %v", u, err, want)
	}
	if _, err := LinkClassUtil(r, "nvlink"); err == nil {
		t.Error("a class no link has: no error")
	}
	if _, err := LinkClassUtil(&Run{Graph: g}, "hbd"); err == nil {
		t.Error("no meters: no error")
	}
}

// Windowed: a network port busy at half rate in two 10 us bins is at 0.5 in each 10 us window and at
// 0.5 in the 20 us window holding both, while its whole-run utilisation (100 us) is 0.1; a window
// narrower than a bin is rounded up to the bin.
func TestWindowedUtil(t *testing.T) {
	g := topo.MustBuild("fattree", "k=4")
	sw, swPort := g.Switches[0], -1
	for p := range g.Nodes[sw].Ports {
		if g.Nodes[g.Peer(sw, p).Node].Kind == topo.Switch {
			swPort = p
			break
		}
	}
	r := &Run{Name: "r", Graph: g, Links: []LinkSample{
		{AtS: 0, BinS: 1e-5, Device: g.Hosts[0], Port: 0, Util: 1},
		{AtS: 2e-5, BinS: 1e-5, Device: sw, Port: swPort, Util: 0.5},
		{AtS: 3e-5, BinS: 1e-5, Device: sw, Port: swPort, Util: 0.5},
		{AtS: 9e-5, BinS: 1e-5, Device: g.Hosts[0], Port: 0, Util: 0},
	}}
	for _, tc := range []struct {
		window, wantW, max float64
		windows            int
	}{{1e-5, 1e-5, 0.5, 10}, {2e-5, 2e-5, 0.5, 5}, {4e-6, 1e-5, 0.5, 10}, {1e-4, 1e-4, 0.1, 1}} {
		u, ok := WindowedUtilOf(r, tc.window)
		if !ok {
			t.Fatal("no windowed utilisation")
		}
		if math.Abs(u.WindowS-tc.wantW) > 1e-12 || u.Windows != tc.windows || len(u.Network) != 64*tc.windows ||
			math.Abs(NearestRank(u.Network, 1)-tc.max) > 1e-9 || math.Abs(NearestRank(u.Server, 1)-1e-5/tc.wantW) > 1e-9 {
			t.Errorf("window %g: width %g, %d windows, %d samples, network max %g, server max %g; want %g, %d, %d, %g, %g",
				tc.window, u.WindowS, u.Windows, len(u.Network), NearestRank(u.Network, 1), NearestRank(u.Server, 1),
				tc.wantW, tc.windows, 64*tc.windows, tc.max, 1e-5/tc.wantW)
		}
	}
	if tb := WindowedUtilTable([]*Run{r, {Name: "unmetered"}}, 1e-5); len(tb.Rows) != 1 {
		t.Errorf("table rows %d, want 1", len(tb.Rows))
	}
}
