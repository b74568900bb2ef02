package nodes

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
)

// twoPort builds a two-port NIC whose links tap what leaves each port (and deliver nothing).
func twoPort(t *testing.T, cfg Config) (*NIC, *clock.Virtual, []*tlink, *records.Log) {
	t.Helper()
	clk := clock.NewVirtual()
	links := []*tlink{{clk: clk, delay: us, to: discard{}}, {clk: clk, delay: us, to: discard{}}}
	log := &records.Log{}
	n, err := New(cfg, clk, []egress.Link{links[0], links[1]}, log)
	if err != nil {
		t.Fatal(err)
	}
	return n, clk, links, log
}

// node15 is the paper's node 15 of NDC(4,1): address a1=3, a0=3, so it sits on port 3 of both its
// switches (s3 behind port 0, s7 behind port 1).
func node15() Config {
	c := Config{Device: 15, Host: 15, Relay: true, RTO: clock.Second, FlowControl: FCPortFC,
		PortFC: PortFCConfig{N: 4, Self: []int{3, 3}}}
	c.Ports = []PortConfig{{RateBps: g100, Delay: us}, {RateBps: g100, Delay: us}}
	return c
}

// TestPortFCNodeQueuesFig6 is the paper's Fig. 6 node example, node 15's port toward switch 19 (our
// s3): four-hop flows via s3's ports 0, 1, 2 -> Q0, Q1, Q2; two-hop flows to s3's ports 0, 1, 2 -> Q3,
// Q4, Q5; relayed traffic -> RQ (Q6); control -> HQ (Q7).
func TestPortFCNodeQueuesFig6(t *testing.T) {
	n, clk, _, _ := twoPort(t, node15())
	if n.Port(0).NumQueues() != 8 || n.Port(1).NumQueues() != 8 {
		t.Fatalf("queues per port %d, want (k+1)(n-1)+2 = 8", n.Port(0).NumQueues())
	}
	// Hold everything so frames stay where the layout put them.
	for q := 0; q < 8; q++ {
		n.PauseQueue(0, q, true)
	}
	flows := []struct {
		name  string
		dst   int32
		route []uint8
		want  int
	}{
		{"F1 (15->0 via 12)", 0, []uint8{0, 0, 1, 0}, 0},
		{"F2 (15->5 via 13)", 5, []uint8{0, 1, 1, 1}, 1},
		{"F3 (15->10 via 14)", 10, []uint8{0, 2, 1, 2}, 2},
		{"F6 (15->12)", 12, []uint8{0, 0}, 3},
		{"F7 (15->13)", 13, []uint8{0, 1}, 4},
		{"F8 (15->14)", 14, []uint8{0, 2}, 5},
	}
	for i, f := range flows {
		if err := n.StartFlow(Flow{ID: uint32(i + 1), Dst: f.dst, Size: 10_000, Route: f.route}); err != nil {
			t.Fatal(err)
		}
	}
	// F9: 11 -> 12 relayed by 15 (11 -> s7 -> 15 -> s3 -> 12), arriving on port 1.
	n.Receive(1, &pkt.Packet{Kind: pkt.Data, Size: 1100, Src: 11, Dst: 12, Flow: 99, Route: []uint8{1, 3, 0, 0}, Hop: 2})
	clk.RunUntil(5 * us)
	for i, f := range flows {
		st := n.Port(0).Stats(f.want)
		if st.Frames == 0 {
			t.Errorf("%s: queue %d empty", f.name, f.want)
		}
		_ = i
	}
	if n.Port(0).Frames(6) != 1 {
		t.Errorf("relayed frame not in RQ 6")
	}
	if err := n.StartFlow(Flow{ID: 50, Dst: 0, Size: 1000, Route: []uint8{0, 3, 1, 0}}); err == nil {
		t.Error("a route through the node's own switch port was accepted")
	}
	if err := n.StartFlow(Flow{ID: 51, Dst: 0, Size: 1000}); err == nil {
		t.Error("a PortFC flow without a source route was accepted")
	}
}

// TestPortFCAlgorithm3 checks the node's handling of PortFC frames arriving from s3 on port 0.
func TestPortFCAlgorithm3(t *testing.T) {
	n, clk, links, log := twoPort(t, node15())
	fr := func(q, port int, on bool) *pkt.Packet {
		return &pkt.Packet{Kind: pkt.PortFC, Size: pkt.MinFrame, Src: -1, Dst: -1, FCQueue: int16(q), FCPort: int16(port), FCPause: on}
	}
	paused := func(port int) (qs []int) {
		for q := 0; q < 8; q++ {
			if n.Port(port).Paused(q) {
				qs = append(qs, q)
			}
		}
		return qs
	}
	// IHFQ class about s3's port 1: pause four-hop queue a[1]; nothing is relayed.
	n.Receive(0, fr(0, 1, true))
	if got := paused(0); len(got) != 1 || got[0] != 1 {
		t.Fatalf("IHFQ pause: paused %v, want [1]", got)
	}
	// DDQ class about s3's port 2: pause two-hop queue b[2] = Q5, relay the frame to s7 (port 1).
	n.Receive(0, fr(3, 2, true))
	if got := paused(0); len(got) != 2 || got[1] != 5 {
		t.Fatalf("DDQ pause: paused %v, want [1 5]", got)
	}
	if len(paused(1)) != 0 {
		t.Fatal("a frame from port 0 paused port 1's queues")
	}
	clk.RunUntil(5 * us)
	if links[1].count(pkt.PortFC) != 1 || links[0].count(pkt.PortFC) != 0 {
		t.Fatalf("relayed: port1 %d port0 %d, want exactly one out of the other port", links[1].count(pkt.PortFC), links[0].count(pkt.PortFC))
	}
	if r := links[1].tap[0].p; r.FCQueue != 3 || r.FCPort != 2 || !r.FCPause {
		t.Fatalf("relayed frame changed: %+v", r)
	}
	n.Receive(0, fr(3, 2, false))
	n.Receive(0, fr(0, 1, false))
	clk.RunUntil(10 * us)
	if len(paused(0)) != 0 || links[1].count(pkt.PortFC) != 2 {
		t.Fatal("resumes not applied or DDQ resume not relayed")
	}
	// Records: 4 received (Hops 0), 2 relayed (Sent, Hops 1). The RQ (6) is never touched.
	var recv, sent int
	for _, r := range log.Pauses {
		if r.Queue == 6 {
			t.Fatal("RQ paused")
		}
		if r.Sent {
			sent++
			if r.Hops != 1 {
				t.Fatalf("relayed record %+v", r)
			}
		} else {
			recv++
		}
	}
	if recv != 4 || sent != 2 {
		t.Fatalf("records: %d received %d sent", recv, sent)
	}
	// A frame naming the node's own port cannot come from a correct switch.
	n.Receive(0, fr(3, 3, true))
	if len(log.Violations) != 1 || len(paused(0)) != 0 {
		t.Fatalf("bad frame: violations %v paused %v", log.Violations, paused(0))
	}
}

// TestPortFCNodeIsolation: pausing a four-hop queue stops only the flow in it.
func TestPortFCNodeIsolation(t *testing.T) {
	n, clk, links, _ := twoPort(t, node15())
	n.StartFlow(Flow{ID: 1, Dst: 0, Size: 1 << 30, Route: []uint8{0, 0, 1, 0}}) // a[0]
	n.StartFlow(Flow{ID: 2, Dst: 13, Size: 1 << 30, Route: []uint8{0, 1}})      // b[1] = Q4
	clk.AfterFunc(10*us, func() {
		n.Receive(0, &pkt.Packet{Kind: pkt.PortFC, Src: -1, Dst: -1, FCQueue: 1, FCPort: 0, FCPause: true})
	})
	clk.RunUntil(30 * us)
	count := map[uint32]int{}
	for _, e := range links[0].data() {
		if e.at > 11*us {
			count[e.p.Flow]++
		}
	}
	if count[1] != 0 || count[2] < 200 {
		t.Fatalf("after pausing a[0]: %v", count)
	}
}

func TestPortFCNodeConfigErrors(t *testing.T) {
	for name, mut := range map[string]func(c *Config){
		"portfc.n":           func(c *Config) { c.PortFC.N = 1 },
		"portfc.self":        func(c *Config) { c.PortFC.Self = []int{1} },
		"portfc.self[1]":     func(c *Config) { c.PortFC.Self = []int{1, 4} },
		"at least two ports": func(c *Config) { c.Ports = c.Ports[:1] },
		"flow_control":       func(c *Config) { c.FlowControl = "credit" },
		"relay_pfc":          func(c *Config) { c.RelayPFC.Mode = RelayIngress },
		"relay_pfc.mode":     func(c *Config) { c.FlowControl = FCPFC; c.RelayPFC.Mode = "egress" },
		"xoff_bytes, got 5": func(c *Config) {
			c.FlowControl = FCPFC
			c.RelayPFC = RelayPFCConfig{Mode: RelayIngress, XOFFBytes: 5, XONBytes: 5}
		},
	} {
		c := node15()
		mut(&c)
		if _, err := c.WithDefaults(); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !contains(err.Error(), name) {
			t.Errorf("%s: error %q", name, err)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestFCConfigJSON: the flow-control parts survive the JSON trip to a netns agent, and the NIC an
// agent builds from them has PortFC's queues.
func TestFCConfigJSON(t *testing.T) {
	in := node15()
	in.RelayPFC = RelayPFCConfig{}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Config
	if err := json.Unmarshal(b, &out); err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %v\n%s", err, b)
	}
	n, _, _, _ := twoPort(t, out)
	if n.Port(1).NumQueues() != 8 {
		t.Fatal("layout not rebuilt from JSON")
	}
	r := relayNode(RelayIngress)
	b, _ = json.Marshal(r)
	var r2 Config
	if err := json.Unmarshal(b, &r2); err != nil || !reflect.DeepEqual(r, r2) {
		t.Fatalf("relay_pfc round trip: %v\n%s", err, b)
	}
}

// threePort is a node of NDC(4,2) (k = 2): port l faces its layer-l switch, on which it sits at port
// Self[l] = 1, 2, 3.
func threePort(t *testing.T) (*NIC, *clock.Virtual, []*tlink, *records.Log) {
	t.Helper()
	clk := clock.NewVirtual()
	var links []*tlink
	var el []egress.Link
	c := Config{Device: 21, Host: 21, Relay: true, RTO: clock.Second, FlowControl: FCPortFC,
		PortFC: PortFCConfig{N: 4, Self: []int{1, 2, 3}}}
	for i := 0; i < 3; i++ {
		links = append(links, &tlink{clk: clk, delay: us, to: discard{}})
		el = append(el, links[i])
		c.Ports = append(c.Ports, PortConfig{RateBps: g100, Delay: us})
	}
	log := &records.Log{}
	n, err := New(c, clk, el, log)
	if err != nil {
		t.Fatal(err)
	}
	return n, clk, links, log
}

// TestPortFCNodeQueuesK2: (k+1)(n-1)+2 = 11 queues; local flows are typed by the switches they cross
// (three: type 0, queues 0-2; two: type 1, 3-5; one: type 2, 6-8), each by the compressed egress port
// at the next switch; the RQ is 9 and the HQ 10.
func TestPortFCNodeQueuesK2(t *testing.T) {
	n, clk, _, _ := threePort(t)
	if n.Port(0).NumQueues() != 11 {
		t.Fatalf("queues per port %d, want (k+1)(n-1)+2 = 11", n.Port(0).NumQueues())
	}
	for q := 0; q < 11; q++ {
		n.PauseQueue(0, q, true)
	}
	for i, f := range []struct {
		route []uint8
		want  int
	}{
		{[]uint8{0, 3, 1, 0, 2, 1}, 2}, // six-hop via port 3 of the layer-0 switch (self 1: 3-1)
		{[]uint8{0, 0, 1, 0}, 3},       // four-hop via port 0: type 1
		{[]uint8{0, 2}, 7},             // two-hop to port 2: type 2, 6 + (2-1)
	} {
		if err := n.StartFlow(Flow{ID: uint32(i + 1), Dst: 5, Size: 10_000, Route: f.route}); err != nil {
			t.Fatal(err)
		}
		clk.RunUntil(clock.Time(i+1) * us)
		if n.Port(0).Frames(f.want) == 0 {
			t.Errorf("route %v: queue %d empty", f.route, f.want)
		}
	}
	n.Receive(1, &pkt.Packet{Kind: pkt.Data, Size: 1100, Src: 40, Dst: 5, Flow: 99, Route: []uint8{1, 2, 0, 1}, Hop: 2})
	if n.Port(0).Frames(9) != 1 {
		t.Errorf("relayed frame not in RQ 9")
	}
}

// TestPortFCAlgorithm3K2: an IHFQ-class frame pauses the queues of every type crossing two or more
// switches (types 0 and 1) and is relayed, with its via, only to the switches of lower layers; a
// DDQ-class frame pauses the one-switch queue and is relayed to every other switch.
func TestPortFCAlgorithm3K2(t *testing.T) {
	n, clk, links, log := threePort(t)
	fr := func(q, port int, on bool) *pkt.Packet {
		return &pkt.Packet{Kind: pkt.PortFC, Size: pkt.MinFrame, Src: -1, Dst: -1, FCQueue: int16(q), FCPort: int16(port), FCPause: on}
	}
	paused := func(port int) (qs []int) {
		for q := 0; q < 11; q++ {
			if n.Port(port).Paused(q) {
				qs = append(qs, q)
			}
		}
		return qs
	}
	// From the layer-1 switch (port 1, self 2), IHFQ group of its port 3: compressed 2, types 0 and 1.
	n.Receive(1, fr(0, 3, true))
	if got := paused(1); !reflect.DeepEqual(got, []int{2, 5}) {
		t.Fatalf("IHFQ pause: paused %v, want [2 5]", got)
	}
	clk.RunUntil(5 * us)
	if links[0].count(pkt.PortFC) != 1 || links[2].count(pkt.PortFC) != 0 {
		t.Fatalf("IHFQ relay: port0 %d port2 %d, want only down to layer 0", links[0].count(pkt.PortFC), links[2].count(pkt.PortFC))
	}
	if r := links[0].tap[0].p; r.FCVia() != 1 || r.FCPort != 3 || r.FCQueue != 0 {
		t.Fatalf("relayed frame %+v, want via 1, port 3, queue 0", r)
	}
	// From the layer-0 switch: an IHFQ-class frame has no lower layer to go to.
	n.Receive(0, fr(1, 0, true))
	clk.RunUntil(10 * us)
	if links[1].count(pkt.PortFC) != 0 || links[2].count(pkt.PortFC) != 0 {
		t.Fatal("an IHFQ-class frame from layer 0 was relayed")
	}
	// DDQ class from the layer-2 switch (self 3), port 0: type 2 queue 6, relayed to ports 0 and 1.
	n.Receive(2, fr(3, 0, true))
	if got := paused(2); !reflect.DeepEqual(got, []int{6}) {
		t.Fatalf("DDQ pause: paused %v, want [6]", got)
	}
	clk.RunUntil(15 * us)
	if links[0].count(pkt.PortFC) != 2 || links[1].count(pkt.PortFC) != 1 {
		t.Fatalf("DDQ relay: port0 %d port1 %d", links[0].count(pkt.PortFC), links[1].count(pkt.PortFC))
	}
	for _, r := range log.Pauses {
		if r.Queue == 9 {
			t.Fatal("RQ paused")
		}
		if r.Sent && r.Hops != 1 {
			t.Fatalf("relayed record %+v", r)
		}
	}
}
