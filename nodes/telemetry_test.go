package nodes

import (
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

func TestTelemetryBetterRule(t *testing.T) {
	c := Config{PathSelect: SelectTelemetry}
	if err := c.checkPathSelect(); err != nil {
		t.Fatal(err)
	}
	mtu := clock.TxTime(pkt.DataSize(1000, 5), 100e9)
	s := &pathSel{cfg: &c.Telemetry, tMTU: mtu}
	margin := 75 * mtu
	for _, tc := range []struct {
		alt, cur clock.Time
		want     bool
	}{
		{0, margin + 1, true},             // far less, and by more than 75 MTU times
		{0, margin, false},                // the margin is strict
		{10 * margin, 12 * margin, false}, // 2 x 75 MTU times less, but not below 0.8 x cur
		{7 * margin, 10 * margin, true},   // both
		{margin, margin / 2, false},       // worse
		{margin / 4, margin / 2, false},   // ratio holds, difference too small
		{0, 0, false},                     // nothing measured yet
	} {
		if got := s.better(tc.alt, tc.cur); got != tc.want {
			t.Errorf("better(%v, %v) = %v, want %v", tc.alt, tc.cur, got, tc.want)
		}
	}
}

func TestTelemetryConfigErrors(t *testing.T) {
	base := Config{Ports: []PortConfig{{RateBps: 100e9}}}
	for _, tc := range []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.PathSelect = "adaptive" }, "path_select"},
		{func(c *Config) { c.PathSelect = SelectUGAL; c.Telemetry.Ratio = 1.5 }, "telemetry"},
		{func(c *Config) { c.PathSelect = SelectTelemetry; c.Telemetry.Wait = 0.5 }, "telemetry.wait"},
	} {
		c := base
		tc.mut(&c)
		if _, err := c.WithDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error naming %s, got %v", tc.want, err)
		}
	}
}

// A flow with two candidate routes between back-to-back NICs, whose link plays the fabric: frames on the
// first route (data and PTMs) pick up 200 us of queueing delay, on the second none. Telemetry moves the
// flow after its opening round, UGAL too (minimal is more than T worse); probes are answered with the
// forward delay; the flow completes; without PathSelect it stays.
func TestTelemetryMovesOffTheDelayedPath(t *testing.T) {
	for _, sel := range []string{SelectTelemetry, SelectUGAL, SelectUGALPeriodic, ""} {
		ca := baseCfg(0, 100e9, clock.Microsecond)
		ca.Transport, ca.PathSelect = IRN, sel
		cb := baseCfg(1, 100e9, clock.Microsecond)
		pr := newPair(t, ca, cb, clock.Microsecond)
		slow, fast := []uint8{0}, []uint8{0}
		pr.ab.filter = func(p *pkt.Packet) bool {
			if len(p.Route) > 0 && &p.Route[0] == &slow[0] && (p.Kind == pkt.Data || p.Kind == pkt.Probe) {
				p.ProbeDelay += 200 * clock.Microsecond
			}
			return true
		}
		if err := pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 2_000_000, Route: slow, Paths: [][]uint8{slow, fast}}); err != nil {
			t.Fatal(err)
		}
		pr.run(t, 50*clock.Microsecond)
		st, ok := pr.a.FlowState(1)
		if !ok {
			t.Fatalf("%q: flow done too early to look at", sel)
		}
		want := 1
		if sel == "" {
			want = 0
		}
		if st.Path != want || (st.Reroutes > 0) != (want == 1) {
			t.Fatalf("%q: on path %d after %d reroutes, want path %d", sel, st.Path, st.Reroutes, want)
		}
		if sel != "" && (pr.a.Stats().TxProbe == 0 || pr.b.Stats().RxProbe == 0 || pr.a.Stats().RxProbe == 0) {
			t.Fatalf("%q: probes sent %d, answered %d, replies back %d", sel, pr.a.Stats().TxProbe,
				pr.b.Stats().RxProbe, pr.a.Stats().RxProbe)
		}
		pr.run(t, 10*clock.Millisecond)
		if f := pr.flow(t, 1); !f.Completed {
			t.Fatalf("%q: flow did not complete", sel)
		}
	}
	// Candidates that leave by another port, or a Route that is not the first candidate, are refused.
	pr := newPair(t, baseCfg(0, 100e9, clock.Microsecond), baseCfg(1, 100e9, clock.Microsecond), clock.Microsecond)
	if err := pr.a.StartFlow(Flow{ID: 2, Dst: 1, Size: 1000, Route: []uint8{0}, Paths: [][]uint8{{0}, {1}}}); err == nil {
		t.Fatal("a candidate out of another port was accepted")
	}
	if err := pr.a.StartFlow(Flow{ID: 3, Dst: 1, Size: 1000, Route: []uint8{0, 1}, Paths: [][]uint8{{0}}}); err == nil {
		t.Fatal("Route other than Paths[0] was accepted")
	}
}

// A go-back-N reroute under PaperWait idles for the old path's latency minus the new one's and does not
// wait for the old path's acknowledgements; without it the sender also drains (drainTo) the packets in
// flight on the old path.
func TestTelemetryPaperWait(t *testing.T) {
	for _, paper := range []bool{false, true} {
		ca := baseCfg(0, 100e9, clock.Microsecond)
		ca.Transport, ca.PathSelect = GBN, SelectTelemetry
		ca.Telemetry.PaperWait = paper
		pr := newPair(t, ca, baseCfg(1, 100e9, clock.Microsecond), clock.Microsecond)
		old, alt := []uint8{0}, []uint8{0}
		if err := pr.a.StartFlow(Flow{ID: 1, Dst: 1, Size: 2_000_000, Route: old, Paths: [][]uint8{old, alt}}); err != nil {
			t.Fatal(err)
		}
		pr.run(t, 5*clock.Microsecond)
		q := pr.a.qps[1]
		if q == nil || q.sel == nil || q.sndNxt <= q.sndUna {
			t.Fatalf("paper %v: no flow with packets in flight to reroute", paper)
		}
		s := q.sel
		s.curDelay, s.idleUntil = 30*clock.Microsecond, 0
		now := pr.a.clk.Now()
		s.reroute(1, 10*clock.Microsecond)
		if paper && (s.idleUntil != now+20*clock.Microsecond || s.drainTo != 0) {
			t.Errorf("paper wait: idle until %v (want now %v + 20 us), drainTo %d (want 0)", s.idleUntil, now, s.drainTo)
		}
		if !paper && s.drainTo == 0 {
			t.Errorf("drain wait: drainTo 0 with packets in flight")
		}
	}
}
