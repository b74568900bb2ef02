package nodes

import (
	"testing"

	"github.com/fabriclab/fabriclab/pkt"
)

func relayed(i int) *pkt.Packet {
	return &pkt.Packet{Kind: pkt.Data, Size: 1100, Src: 0, Dst: 9, Prio: 3, Flow: 7, PSN: uint32(i), ECN: pkt.ECT0,
		Route: []uint8{0, 1, 1, 0}, Hop: 2}
}

// TestNICMemoryPauseBound: a PortFC relay whose RQ fills (frames arrive faster than its port drains
// them) pauses its upstream at XOFF, out of every port; what can still arrive after the pause (each
// port's headroom) fits; the memory never holds more than its size; a frame past it is dropped and,
// under the lossless transport, reported; the resume goes out at XON once the RQ drains.
func TestNICMemoryPauseBound(t *testing.T) {
	c := node15()
	c.NICMem = NICMemConfig{Bytes: 200_000, Guard: GuardPause}
	n, clk, links, log := twoPort(t, c)
	xoff, xon := n.MemThresholds()
	frame := pkt.DataSize(1000, 8)
	bound := xoff + memHeadroom(c.Ports[0], frame) + memHeadroom(c.Ports[1], frame) + n.localCap(frame)
	if xoff <= 0 || xon >= xoff || bound > c.NICMem.Bytes {
		t.Fatalf("xoff %d xon %d: xoff + headroom + local queues = %d exceeds the %d B memory", xoff, xon, bound, c.NICMem.Bytes)
	}
	i := 0
	for ; ; i++ {
		n.Receive(0, relayed(i))
		if held, _, _ := n.MemHeld(); held >= xoff {
			break
		}
	}
	clk.RunUntil(us)
	for _, l := range links {
		fs := pfcOut(l)
		if len(fs) != 1 || fs[0].PauseQuanta[3] == 0 || fs[0].PauseMask&(1<<c.withControlPrio()) != 0 {
			t.Fatalf("pause frames out of a port: %+v, want one pausing every data priority", fs)
		}
	}
	// The headroom of the ingress port arrives after the pause: all of it fits.
	for b := int64(0); b < memHeadroom(c.Ports[0], frame); b += 1100 {
		i++
		n.Receive(0, relayed(i))
	}
	if _, peak, _ := n.MemHeld(); peak > c.NICMem.Bytes || len(log.Drops) != 0 {
		t.Fatalf("peak %d B of %d, %d drops within the headroom", peak, c.NICMem.Bytes, len(log.Drops))
	}
	// A sender that ignores the pause overruns the memory: dropped, never held, and reported.
	for k := 0; k < 200; k++ {
		i++
		n.Receive(0, relayed(i))
	}
	if _, peak, _ := n.MemHeld(); peak > c.NICMem.Bytes || len(log.Drops) == 0 || len(log.Violations) == 0 || !log.Drops[0].Lossless {
		t.Fatalf("overrun: peak %d of %d, %d drops, violations %v", peak, c.NICMem.Bytes, len(log.Drops), log.Violations)
	}
	clk.RunUntil(clk.Now() + 100*us)
	held, _, _ := n.MemHeld()
	fs := pfcOut(links[0])
	if held != 0 || len(fs) != 2 || fs[1].PauseQuanta[3] != 0 {
		t.Fatalf("drained: %d B held, frames out of port 0 %+v, want a resume", held, fs)
	}
	var sent int
	for _, r := range log.Pauses {
		if r.Sent && r.Hops == 0 {
			sent++
		}
	}
	if sent != 4 {
		t.Fatalf("%d guard pause/resume records, want a pause and a resume per port", sent)
	}
}

func (c Config) withControlPrio() uint8 {
	if c.ControlPrio == 0 {
		return DefaultControlPrio
	}
	return c.ControlPrio
}

// TestNICMemoryECN: on a lossy fabric the relay marks relayed data CE past KMax (none below KMin) and
// drops at its size, sending no pause.
func TestNICMemoryECN(t *testing.T) {
	c := node15()
	c.Transport = IRN
	c.NICMem = NICMemConfig{Bytes: 50_000, Guard: GuardECN, KMin: 10_000, KMax: 20_000, PMax: 0.2}
	n, clk, links, log := twoPort(t, c)
	for i := 0; i < 60; i++ {
		n.Receive(0, relayed(i))
	}
	clk.RunUntil(100 * us)
	var ce, first int
	for k, e := range links[1].data() {
		if e.p.ECN == pkt.CE {
			ce++
			if first == 0 {
				first = k
			}
		}
	}
	got := len(links[1].data())
	if ce == 0 || first < 9 || got+len(log.Drops) != 60 || len(log.Drops) == 0 || len(pfcOut(links[0])) != 0 {
		t.Fatalf("%d relayed, %d CE (first at %d), %d drops, %d pauses", got, ce, first, len(log.Drops), len(pfcOut(links[0])))
	}
	if log.Drops[0].Lossless || len(log.Violations) != 0 {
		t.Fatal("a lossy drop reported as a lossless violation")
	}
}

// TestNICMemoryTooSmall: a buffer below the headroom and the node's own queues is refused, naming the
// field.
func TestNICMemoryTooSmall(t *testing.T) {
	c := node15()
	c.NICMem = NICMemConfig{Bytes: 30_000, Guard: GuardPause}
	if _, err := New(c, nil, nil, nil); err == nil {
		t.Fatal("30 KB NIC memory accepted")
	}
}

// TestRelayWeights: the relay queue gets the weight under PrioLayout and PortFC's layout, and FIFO node
// queues (relay and local in one queue) get none.
func TestRelayWeights(t *testing.T) {
	w := relayWeights(PrioLayout{}, 0, 17, 4)
	if w[8] != 4 || w[15] != 4 || w[0] != 0 || w[16] != 0 {
		t.Fatalf("PrioLayout weights %v", w)
	}
	w = relayWeights(&PortFCLayout{N: 4, Self: []int{3, 3}}, 0, 8, 6)
	if w[6] != 6 || w[0] != 0 || w[5] != 0 {
		t.Fatalf("PortFC weights %v", w)
	}
	if relayWeights(FIFOLayout{}, 0, 17, 4) != nil || relayWeights(PrioLayout{}, 0, 17, 1) != nil {
		t.Fatal("weights where relay and local share a queue, or at weight 1")
	}
}
