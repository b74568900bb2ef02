package deadlock

import (
	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/switchsw/fc"
)

// ByPriority is PFC-style queueing: one lossless channel per (device, egress port, priority), the
// priority of each hop given by prio. Hosts are channels too: a relay host's egress queue is paused by
// its downstream switch and (relay_pfc ingress or pass-through) makes its upstream wait.
func ByPriority(prio func(p route.Path, hop int) int) Mapper {
	return func(_ *topo.Graph, p route.Path, hop int) (Channel, bool) {
		return Channel{Device: p.Nodes[hop], Port: int(p.Ports[hop]), Queue: prio(p, hop)}, true
	}
}

// PFC is one lossless priority for every frame at every hop (traditional PFC: "all traffic at both
// switches and nodes is placed in a single queue").
func PFC(prio int) Mapper {
	return ByPriority(func(route.Path, int) int { return prio })
}

// Lossless restricts m to the priorities/queues in set: channels outside it are lossy and break the
// dependency chain (a multi-priority scheme with some lossy classes).
func Lossless(m Mapper, set ...int) Mapper {
	ok := map[int]bool{}
	for _, q := range set {
		ok[q] = true
	}
	return func(g *topo.Graph, p route.Path, hop int) (Channel, bool) {
		ch, lossless := m(g, p, hop)
		return ch, lossless && (ch.Queue == Through || ok[ch.Queue])
	}
}

// PFCStarTag is PFC*'s priority for the frame of p at hop: base + min(PFCStarHops, P-1).
func PFCStarTag(g *topo.Graph, p route.Path, hop, P, base int) int {
	return base + min(PFCStarHops(g, p, hop), P-1)
}

// PFCStarHops is the number of switches the frame of p crossed before the device at hop: 0 at the
// sender and in the first switch, 1 in the relay after it and in the second switch, and so on
// (docs/portfc.md §4). It mirrors the engines: a switch raises the tag only for frames that arrive from
// another switch (switchsw/fc PFCStar.Classify), a relay raises it when it queues a frame it received
// from a switch (nodes.FIFOLayout), so the static verdict and the run agree. On NDC(n,1) the relays'
// queues then hold tag 1 and the senders' tag 0, and P = 2 leaves no cycle among four-hop paths.
func PFCStarHops(g *topo.Graph, p route.Path, hop int) int {
	n := 0
	for i := 0; i < hop; i++ {
		if g.Nodes[p.Nodes[i]].Kind == topo.Switch {
			n++
		}
	}
	return n
}

// PFCStarEverySwitch is PFC* as switch.pfcstar_raise: switches tags: every switch raises the tag,
// also for a frame from a host, and relays keep it, so the tag at a device is the number of switches up
// to and including it, capped at P-1 (switchsw/fc PFCStarConfig.EverySwitch, nodes.FIFOLayout.KeepTag).
func PFCStarEverySwitch(P, base int) Mapper {
	P = max(P, 1)
	return func(g *topo.Graph, p route.Path, hop int) (Channel, bool) {
		n := PFCStarHops(g, p, hop)
		if g.Nodes[p.Nodes[hop]].Kind == topo.Switch {
			n++
		}
		return Channel{Device: p.Nodes[hop], Port: int(p.Ports[hop]), Queue: base + min(n, P-1)}, true
	}
}

// PFCStar is PFC* with P lossless priorities base..base+P-1: the priority of a frame rises with each
// switch it crosses, capped at the last one (PFCStarTag).
func PFCStar(P, base int) Mapper {
	if P < 1 {
		P = 1
	}
	return func(g *topo.Graph, p route.Path, hop int) (Channel, bool) {
		return Channel{Device: p.Nodes[hop], Port: int(p.Ports[hop]), Queue: PFCStarTag(g, p, hop, P, base)}, true
	}
}

// PortFC is the PortFC queue allocation (PortFC paper §III-B, the paper's GetQIdx) for NDC(n,k):
//
//   - switch S, egress toward node X: DDQ (n-1) when X is the frame's destination, else IHFQ idx, idx
//     being the egress port e at the next switch S' (after relay X), compressed to n-1 values by
//     leaving out S”s port toward X: idx = e if e < port(S',X) else e-1 (PortFC paper §III-B);
//   - sending node, egress toward S: the queue of its type t = k+1-h (h: the switches the path crosses;
//     for k = 1 the four-hop queues a, 0..n-2, and the two-hop queues b, n-1..2n-3), t(n-1)+idx, idx
//     being S's egress port compressed by S's port toward the node;
//   - relay node: RQ. It is never paused, and the relay passes the pauses it receives to the switches
//     feeding it (Algorithm 3: the DDQ's; for k > 1 the IHFQ group's too, but only down to switches of
//     lower layers, nodes/portfc.go), so RQ is Through: the IHFQ before it waits on the queue after it.
//     Where no pause is passed back (k > 1, an IHFQ after the relay on a switch of a lower layer than the
//     one before) nothing waits: the RQ is a lossless channel nothing pauses, and a full buffer after
//     it would drop (a lossless violation the run reports), so the chain breaks there.
//
// For k > 1 a port's IHFQs are one channel, named by queue 0: the relayed IHFQ-class pause is decided on
// their sum (Algorithm 1), so a frame waiting on one of them waits on all. n is the radix of the switch
// concerned. Control queues carry no data and do not appear.
func PortFC() Mapper {
	return func(g *topo.Graph, p route.Path, hop int) (Channel, bool) {
		dev, port := p.Nodes[hop], int(p.Ports[hop])
		ch := Channel{Device: dev, Port: port}
		last := len(p.Nodes) - 1
		next := p.Nodes[hop+1]
		switch {
		case g.Nodes[dev].Kind == topo.Switch:
			n := len(g.Nodes[dev].Ports)
			if hop+1 == last {
				ch.Queue = n - 1
				return ch, true
			}
			if len(g.Nodes[next].Ports) > 2 {
				ch.Queue = 0 // the IHFQ group (k > 1)
				return ch, true
			}
			ch.Queue = PortFCIndex(g, next, int(p.Ports[hop+1]), portAt(p, hop+2))
			return ch, true
		case hop > 0:
			prev := p.Nodes[hop-1]
			if len(g.Nodes[dev].Ports) > 2 && hop+2 < last && g.Nodes[next].Layer < g.Nodes[prev].Layer {
				ch.Queue = PortFCRelayQueue(g, dev)
				return ch, false
			}
			ch.Queue = Through
			return ch, true
		default:
			sw := next
			n := len(g.Nodes[sw].Ports)
			h := (len(p.Nodes) - 1 - hop) / 2 // switches from here to the destination
			t := max(len(g.Nodes[dev].Ports)-h, 0)
			ch.Queue = t*(n-1) + PortFCIndex(g, dev, port, portAt(p, hop+1))
			return ch, true
		}
	}
}

// PortFCRelayQueue is the RQ's index at node x: (k+1)(n-1), after the local queues.
func PortFCRelayQueue(g *topo.Graph, x int) int {
	n := len(g.Nodes[g.Peer(x, 0).Node].Ports)
	return len(g.Nodes[x].Ports) * (n - 1)
}

func portAt(p route.Path, i int) int {
	if i < len(p.Ports) {
		return int(p.Ports[i])
	}
	return 0
}

// PortFCIndex is PortFC's n-1 compression: the egress port e at the switch on node x's port xPort,
// numbered without that switch's port back toward x (which a frame from x never takes). It is the
// engine's own rule (switchsw/fc.Compress), so analysis and classifier cannot drift apart.
func PortFCIndex(g *topo.Graph, x, xPort, e int) int {
	return fc.Compress(e, g.Peer(x, xPort).Port)
}
