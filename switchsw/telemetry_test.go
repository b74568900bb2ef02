package switchsw

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

// A path test message measures the data queue of its priority (which it bypasses in the strict queue),
// a data frame its own residence, and a probe reply nothing: what telemetry routing compares.
func TestTelemetryDelays(t *testing.T) {
	st := newStar(t, baseConfig(3))
	// Two senders, ten 1000 B frames each, to host 2 at once: a queue builds at port 2.
	var frames []*pkt.Packet
	for s := 0; s < 2; s++ {
		for i := 0; i < 10; i++ {
			d := data(int32(s), 2, uint32(s), uint32(i), 1000)
			frames = append(frames, d)
			st.hosts[s].eg.Enqueue(3, d)
		}
	}
	st.clk.RunUntil(1700 * clock.Nanosecond) // both bursts arrived (1 us link), half drained
	backlog := st.sw.Port(2).Bytes(3)
	if backlog < 5000 {
		t.Fatalf("backlog %d B, want a queue", backlog)
	}
	ptm := &pkt.Packet{Kind: pkt.Probe, Size: 64, Src: 1, Dst: 2, Prio: 3}
	ptr := &pkt.Packet{Kind: pkt.Probe, Size: 64, Src: 1, Dst: 2, Prio: 3, Last: true, ProbeDelay: 7}
	other := &pkt.Packet{Kind: pkt.Probe, Size: 64, Src: 1, Dst: 2, Prio: 5}
	st.sw.Receive(1, ptm)
	st.sw.Receive(1, ptr)
	st.sw.Receive(1, other)
	st.clk.RunUntil(clock.Millisecond)
	want := clock.TxTime(backlog, rate)
	if ptm.ProbeDelay < want || ptm.ProbeDelay > want+2*clock.TxTime(1000, rate) {
		t.Fatalf("PTM delay %v, want the %d B backlog's %v (plus at most the frame in service)", ptm.ProbeDelay, backlog, want)
	}
	if ptr.ProbeDelay != 7 {
		t.Fatalf("probe reply delay changed to %v", ptr.ProbeDelay)
	}
	if other.ProbeDelay > 2*clock.TxTime(1000, rate) {
		t.Fatalf("priority-5 probe saw %v: it measured another priority's queue", other.ProbeDelay)
	}
	// Twenty frames arrive over ten frame times and leave over twenty: the last waits about ten.
	var most clock.Time
	for _, f := range frames {
		most = max(most, f.ProbeDelay)
	}
	if most < clock.TxTime(9*1000, rate) || most > clock.TxTime(11*1000, rate) {
		t.Fatalf("largest data residence %v, want about 10 frame times", most)
	}
}
