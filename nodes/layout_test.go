package nodes

import (
	"slices"
	"testing"

	"github.com/fabriclab/fabriclab/pkt"
)

// TestFIFOLayoutSharedQueue: under pfc a node queues its own data and relayed data of a priority in one
// FIFO; with relay_pfc ingress its own flows may fill LocalBytes of it (2 x XOFF by default), relayed
// frames join behind them and count toward the ingress pause.
func TestFIFOLayoutSharedQueue(t *testing.T) {
	n, clk, _, _ := twoPort(t, relayNode(RelayIngress))
	if _, ok := n.layout.(FIFOLayout); !ok {
		t.Fatalf("pfc node layout %T, want FIFOLayout", n.layout)
	}
	n.Receive(1, relayPFCFrame(3, 0xFFFF)) // the downstream switch stops priority 3 on port 1
	if err := n.StartFlow(Flow{ID: 1, Dst: 9, Size: 1_000_000, Route: []uint8{1, 1}}); err != nil {
		t.Fatal(err)
	}
	clk.RunUntil(us)
	port := n.Port(1)
	local := port.Bytes(3)
	if local < 40_000 || local > 40_000+DefaultMTU+100 {
		t.Fatalf("local data held %d bytes, want LocalBytes 2 x 20000 (and at most one frame over)", local)
	}
	for i := 0; i < 20; i++ {
		n.Receive(0, &pkt.Packet{Kind: pkt.Data, Size: 1100, Src: 0, Dst: 9, Prio: 3, Flow: 7, PSN: uint32(i),
			Route: []uint8{0, 1, 1, 0}, Hop: 2})
	}
	if got := port.Bytes(3) - local; got != 20*1100 {
		t.Fatalf("relayed frames added %d bytes to the shared queue, want %d", got, 20*1100)
	}
	for q := 0; q < port.NumQueues(); q++ {
		if q != 3 && port.Bytes(q) != 0 {
			t.Fatalf("queue %d holds %d bytes: local and relayed data must share queue 3", q, port.Bytes(q))
		}
	}
	if _, paused := n.IngressBytes(0, 3); !paused {
		t.Fatal("22 KB of relayed data held from port 0 did not pause it (XOFF 20 KB)")
	}
}

// TestFIFOLayoutShallowWithoutIngress: without ingress PFC (pass-through) a node keeps QueueDepth local
// frames in the shared queue, as every other NIC does.
func TestFIFOLayoutShallowWithoutIngress(t *testing.T) {
	n, clk, _, _ := twoPort(t, relayNode(RelayPassThrough))
	n.Receive(1, relayPFCFrame(3, 0xFFFF))
	if err := n.StartFlow(Flow{ID: 1, Dst: 9, Size: 1_000_000, Route: []uint8{1, 1}}); err != nil {
		t.Fatal(err)
	}
	clk.RunUntil(us)
	if f := n.Port(1).Frames(3); f != DefaultQueueDepth {
		t.Fatalf("%d local frames queued, want %d", f, DefaultQueueDepth)
	}
}

// TestFIFOLayoutPFCStarRelayRaisesTag: a PFC* relay queues a frame it got from a switch one tag up
// (it crossed that switch) and sends it with that priority, while the ingress group it is charged to,
// and released from, stays the arrival priority the upstream switch queued it at.
func TestFIFOLayoutPFCStarRelayRaisesTag(t *testing.T) {
	c := relayNode(RelayIngress)
	c.FlowControl, c.PFCStar = FCPFCStar, PFCStarConfig{Tags: 2, Base: 3}
	n, clk, links, _ := twoPort(t, c)
	n.Receive(1, relayPFCFrame(4, 0xFFFF)) // tag 1 stopped on port 1: relayed frames pile up there
	for i := 0; i < 20; i++ {
		n.Receive(0, &pkt.Packet{Kind: pkt.Data, Size: 1100, Src: 0, Dst: 9, Prio: 3, Flow: 7, PSN: uint32(i),
			Route: []uint8{0, 1, 1, 0}, Hop: 2})
	}
	if b := n.Port(1).Bytes(4); b != 20*1100 {
		t.Fatalf("tag-1 queue holds %d bytes, want all 20 relayed frames", b)
	}
	if b, paused := n.IngressBytes(0, 3); b != 20*1100 || !paused {
		t.Fatalf("arrival group (port 0, prio 3): %d bytes, paused %v", b, paused)
	}
	n.Receive(1, relayPFCFrame(4, 0))
	clk.RunUntil(20 * us)
	if b, paused := n.IngressBytes(0, 3); b != 0 || paused {
		t.Fatalf("after drain: group holds %d bytes, paused %v", b, paused)
	}
	for _, e := range links[1].data() {
		if e.p.Prio != 4 {
			t.Fatalf("relayed frame left with priority %d, want 4 (tag 1)", e.p.Prio)
		}
	}
}

// TestFIFOLayoutKeepTag: a PFC* relay raises a relayed frame's tag unless KeepTag (the switches raise
// it instead); a pass-through pause then names the same priority upstream, not the one below.
func TestFIFOLayoutKeepTag(t *testing.T) {
	for _, tc := range []struct {
		keep     bool
		want     uint8
		upstream []int
	}{{false, 4, []int{3, 4}}, {true, 3, []int{4}}} {
		l := FIFOLayout{Tags: 2, Base: 3, KeepTag: tc.keep}
		p := &pkt.Packet{Kind: pkt.Data, Prio: 3}
		if q := l.Relay(0, p); p.Prio != tc.want || q != int(tc.want) {
			t.Errorf("KeepTag %v: relayed prio 3 queued at %d as prio %d, want %d", tc.keep, q, p.Prio, tc.want)
		}
		if ups := upstreamPrios(l, 4); !slices.Equal(ups, tc.upstream) {
			t.Errorf("KeepTag %v: pause of prio 4 goes upstream as %v, want %v", tc.keep, ups, tc.upstream)
		}
	}
}
