package nodes

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

func relayNode(mode string) Config {
	c := Config{Device: 5, Host: 5, Relay: true, RTO: clock.Second, FlowControl: FCPFC,
		RelayPFC: RelayPFCConfig{Mode: mode, XOFFBytes: 20_000, XONBytes: 10_000}}
	c.Ports = []PortConfig{{RateBps: g100, Delay: us}, {RateBps: g100, Delay: us}}
	return c
}

func relayPFCFrame(prio int, quanta uint16) *pkt.Packet {
	f := &pkt.Packet{Kind: pkt.PFC, Size: pkt.MinFrame, Src: -1, Dst: -1, PauseMask: 1 << uint(prio)}
	f.PauseQuanta[prio] = quanta
	return f
}

func pfcOut(l *tlink) (out []pkt.Packet) {
	for _, e := range l.tap {
		if e.p.Kind == pkt.PFC {
			out = append(out, e.p)
		}
	}
	return out
}

// TestRelayPassThrough: a pause from the switch on port 1 pauses the node's own priority-4 queues there
// (one FIFO for local and relayed data under pfc) and goes out of port 0 unchanged; so does the resume.
func TestRelayPassThrough(t *testing.T) {
	n, clk, links, log := twoPort(t, relayNode(RelayPassThrough))
	n.Receive(1, relayPFCFrame(4, 1000))
	relayQ := n.layout.Relay(1, &pkt.Packet{Prio: 4})
	if relayQ != 4 || !n.Port(1).Paused(4) || n.Port(0).Paused(4) {
		t.Fatal("own queues not paused on the receiving port only")
	}
	clk.RunUntil(2 * us)
	n.Receive(1, relayPFCFrame(4, 0))
	clk.RunUntil(4 * us)
	fs := pfcOut(links[0])
	if len(fs) != 2 || fs[0].PauseMask != 1<<4 || fs[0].PauseQuanta[4] != 1000 || fs[1].PauseQuanta[4] != 0 {
		t.Fatalf("forwarded %+v", fs)
	}
	if len(pfcOut(links[1])) != 0 || n.Port(1).Paused(4) {
		t.Fatal("pause bounced back, or resume not applied")
	}
	var hops []int8
	for _, r := range log.Pauses {
		if r.Sent {
			hops = append(hops, r.Hops)
		}
	}
	if len(hops) != 2 || hops[0] != 1 || hops[1] != 1 {
		t.Fatalf("sent records hops %v, want [1 1]", hops)
	}
}

// TestRelayIngressPFC: relayed bytes held from port 0 pause port 0's upstream at XOFF and resume it at
// XON; frames for the node itself do not count.
func TestRelayIngressPFC(t *testing.T) {
	n, clk, links, _ := twoPort(t, relayNode(RelayIngress))
	n.Receive(1, relayPFCFrame(3, 0xFFFF)) // the downstream switch stops us: relayed frames pile up
	size := 1100
	for i := 0; i < 30; i++ {
		n.Receive(0, &pkt.Packet{Kind: pkt.Data, Size: int32(size), Src: 0, Dst: 9, Prio: 3, Flow: 7, PSN: uint32(i),
			Route: []uint8{0, 1, 1, 0}, Hop: 2})
		b, paused := n.IngressBytes(0, 3)
		if int(b) != (i+1)*size || paused != (b >= 20_000) {
			t.Fatalf("frame %d: %d bytes, paused %v", i, b, paused)
		}
	}
	clk.RunUntil(5 * us)
	fs := pfcOut(links[0])
	if len(fs) != 1 || fs[0].PauseMask != 1<<3 || fs[0].PauseQuanta[3] == 0 {
		t.Fatalf("pauses out of the ingress port: %+v", fs)
	}
	n.Receive(1, relayPFCFrame(3, 0))
	clk.RunUntil(20 * us)
	fs = pfcOut(links[0])
	if b, paused := n.IngressBytes(0, 3); b != 0 || paused || len(fs) != 2 || fs[1].PauseQuanta[3] != 0 {
		t.Fatalf("after drain: %d bytes paused %v, frames %+v", b, paused, fs)
	}
	if got := len(links[1].data()); got != 30 {
		t.Fatalf("relayed %d of 30", got)
	}
}

// TestRelayPassThroughPFCStar: a PFC* relay queues relayed frames one tag up, so a pause it receives
// for its tag-1 queue is forwarded for the tags its upstream switches send those frames on (both
// tags, at the cap P-1 = 1); a pause of tag 0, which holds no relayed frames, is not forwarded.
func TestRelayPassThroughPFCStar(t *testing.T) {
	c := relayNode(RelayPassThrough)
	c.FlowControl, c.PFCStar = FCPFCStar, PFCStarConfig{Tags: 2, Base: 3}
	n, clk, links, _ := twoPort(t, c)
	n.Receive(1, relayPFCFrame(3, 1000))
	clk.RunUntil(2 * us)
	if fs := pfcOut(links[0]); len(fs) != 0 {
		t.Fatalf("tag-0 pause forwarded: %+v", fs)
	}
	n.Receive(1, relayPFCFrame(4, 1000))
	clk.RunUntil(4 * us)
	var mask uint8
	for _, f := range pfcOut(links[0]) {
		mask |= f.PauseMask
	}
	if mask != 1<<3|1<<4 || !n.Port(1).Paused(4) {
		t.Fatalf("forwarded mask %08b, want priorities 3 and 4", mask)
	}
}
