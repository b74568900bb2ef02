package nslink

import (
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// A line h0 - s0 - h1 split over two machines at the s0 - h1 link.
func splitLine() *topo.Graph {
	g := &topo.Graph{Nodes: []topo.Node{{Name: "h0"}, {Name: "s0"}, {Name: "h1"}}}
	g.Links = []topo.Link{{A: topo.End{Node: 0, Port: 0}, B: topo.End{Node: 1, Port: 0}}, {A: topo.End{Node: 1, Port: 1}, B: topo.End{Node: 2, Port: 0}}}
	g.Nodes[0].Ports = []int{0}
	g.Nodes[1].Ports = []int{0, 1}
	g.Nodes[2].Ports = []int{1}
	return g
}

func TestPartChecked(t *testing.T) {
	g := splitLine()
	v := VXLANLink{Link: 1, Node: 1, Port: 1, VNI: 5001, Local: "198.19.0.1", Remote: "198.19.0.2", DstPort: 14789, Underlay: "eth0"}
	o := Options{Nodes: []int{0, 1}, VXLAN: []VXLANLink{v}}
	if err := o.checkPart(g); err != nil {
		t.Fatal(err)
	}
	veth, vx, idx := linkEntries("l", g, &o)
	if len(veth) != 1 || idx[0] != 0 || len(vx) != 1 || vx[0].A != (LinkEnd{NS: "fl-l-s0", Ifname: "p1"}) || vx[0].VXLAN.VNI != 5001 {
		t.Fatalf("entries %+v %+v %v", veth, vx, idx)
	}
	st := State{Lab: "l", Namespaces: []NSEntry{{Name: "fl-l-h0", Device: "h0"}, {Name: "fl-l-s0", Device: "s0"}}, Links: append(veth, vx...)}
	if err := st.Check(); err != nil {
		t.Fatalf("a part's state file is refused: %v", err)
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Nodes: []int{0, 1}}, "link 1 leaves this machine's part but has no vxlan end"},
		{Options{Nodes: []int{0, 1, 2}, VXLAN: []VXLANLink{v}}, "is not this machine's end"},
		{Options{Nodes: []int{0, 1}, VXLAN: []VXLANLink{{Link: 1, Node: 1, Port: 1, VNI: 0, Local: "198.19.0.1", Remote: "198.19.0.2", DstPort: 14789, Underlay: "eth0"}}}, "VNI 0"},
		{Options{Nodes: []int{0, 1}, VXLAN: []VXLANLink{{Link: 1, Node: 1, Port: 1, VNI: 5, Local: "198.19.0.1", Remote: "224.0.0.1", DstPort: 14789, Underlay: "eth0"}}}, "not a unicast"},
		{Options{Nodes: []int{7}}, "node 7 is not in the topology"},
		{Options{VXLAN: []VXLANLink{v}}, "need Options.Nodes"},
	} {
		if err := c.o.checkPart(g); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q, got %v", c.want, err)
		}
	}
	st.Links[1].VXLAN.Remote = "x"
	if err := st.Check(); err == nil {
		t.Error("a state file with a bad vxlan entry passes")
	}
}

func TestUnderlayMTU(t *testing.T) {
	if err := CheckUnderlayMTU("m2", 1500, 1500); err == nil || !strings.Contains(err.Error(), "machine m2: underlay MTU 1500 is below the lab's MTU 1500 + 50") {
		t.Errorf("got %v", err)
	}
	if err := CheckUnderlayMTU("m2", 1550, 1500); err != nil {
		t.Error(err)
	}
}
