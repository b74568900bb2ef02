package switchsw

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/fib"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/switchsw/fc"
	"github.com/fabriclab/fabriclab/units"
)

const (
	rate  = 100e9
	delay = clock.Microsecond
)

// host is a fake NIC: one egress port (8 data queues + a strict control queue) that obeys PFC the way
// the switch does, and a receive side that keeps what arrives.
type host struct {
	clk    *clock.Virtual
	eg     *egress.Port
	got    []*pkt.Packet
	gotAt  []clock.Time
	timers [8]clock.Timer
	pauses int
}

func newHost(t testing.TB, clk *clock.Virtual) *host {
	h := &host{clk: clk}
	var err error
	h.eg, err = egress.New(egress.Config{RateBps: rate, Queues: 9, Strict: []int{8}}, clk, nil, egress.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *host) receive(p *pkt.Packet) {
	if p.Kind != pkt.PFC {
		h.got = append(h.got, p)
		h.gotAt = append(h.gotAt, h.clk.Now())
		return
	}
	for c := 0; c < 8; c++ {
		if p.PauseMask&(1<<c) == 0 {
			continue
		}
		if h.timers[c] != nil {
			h.timers[c].Stop()
			h.timers[c] = nil
		}
		if q := p.PauseQuanta[c]; q > 0 {
			h.pauses++
			h.eg.Pause(c, true)
			c := c
			h.timers[c] = h.clk.AfterFunc(clock.Time(float64(q)*512*float64(clock.Second)/rate), func() { h.eg.Pause(c, false) })
		} else {
			h.eg.Pause(c, false)
		}
	}
}

// wire delivers frames to f after the propagation delay.
func wire(clk *clock.Virtual, d clock.Time, f func(*pkt.Packet)) egress.Link {
	return egress.LinkFunc(func(p *pkt.Packet) { clk.AfterFunc(d, func() { f(p) }) })
}

// star is one switch with a host on every port: host i on port i, FIB[i] = {i}.
type star struct {
	clk   *clock.Virtual
	sw    *Switch
	hosts []*host
	log   *records.Log
}

func baseConfig(n int) Config {
	cfg := Config{Device: 7, BufferBytes: 5_000_000, Seed: 1}
	for i := 0; i < n; i++ {
		cfg.Ports = append(cfg.Ports, PortConfig{RateBps: rate, Delay: delay, PeerIsHost: true, PeerHost: int32(i)})
		cfg.FIB = route(cfg.FIB, i, uint8(i))
	}
	return cfg
}

// route is t with dst routed to ports.
func route(t fib.Table, dst int, ports ...uint8) fib.Table {
	t, err := t.With(dst, ports)
	if err != nil {
		panic(err)
	}
	return t
}

func newStar(t testing.TB, cfg Config) *star { return newStarDelay(t, cfg, delay) }

func newStarDelay(t testing.TB, cfg Config, d clock.Time) *star {
	clk := clock.NewVirtual()
	st := &star{clk: clk, log: &records.Log{}}
	n := len(cfg.Ports)
	links := make([]egress.Link, n)
	for i := 0; i < n; i++ {
		h := newHost(t, clk)
		st.hosts = append(st.hosts, h)
		links[i] = wire(clk, d, h.receive)
	}
	sw, err := New(cfg, clk, links, st.log)
	if err != nil {
		t.Fatal(err)
	}
	st.sw = sw
	for i, h := range st.hosts {
		i := i
		h.eg.SetLink(wire(clk, d, func(p *pkt.Packet) { sw.Receive(i, p) }))
	}
	return st
}

func data(src, dst int32, flow uint32, psn uint32, size int32) *pkt.Packet {
	return &pkt.Packet{Kind: pkt.Data, Size: size, Src: src, Dst: dst, Flow: flow, SPort: uint16(flow),
		DPort: 4791, Proto: 17, Prio: 3, PSN: psn, ECN: pkt.ECT0}
}

// incast has senders 0..k-1 each queue n frames of 1000 B to host k at time 0, then runs to completion.
func (st *star) incast(k, n int) {
	for s := 0; s < k; s++ {
		for i := 0; i < n; i++ {
			st.hosts[s].eg.Enqueue(3, data(int32(s), int32(k), uint32(s), uint32(i), 1000))
		}
	}
	st.clk.RunUntil(clock.Second)
}

func TestForwardByFIBAndSourceRoute(t *testing.T) {
	st := newStar(t, baseConfig(3))
	st.hosts[0].eg.Enqueue(3, data(0, 2, 1, 0, 500))
	routed := data(0, 2, 2, 0, 500) // route says port 1 although the table says 2
	routed.Route, routed.Hop = []uint8{0, 1}, 1
	st.hosts[0].eg.Enqueue(3, routed)
	lost := data(0, 9, 3, 0, 500)
	st.hosts[0].eg.Enqueue(3, lost)
	st.clk.RunUntil(clock.Millisecond)
	if len(st.hosts[2].got) != 1 || st.hosts[2].got[0].Flow != 1 {
		t.Fatalf("FIB: host 2 got %d frames", len(st.hosts[2].got))
	}
	if len(st.hosts[1].got) != 1 || st.hosts[1].got[0].Flow != 2 || st.hosts[1].got[0].Hop != 2 {
		t.Fatalf("source route: host 1 got %+v", st.hosts[1].got)
	}
	if g := st.hosts[1].got[0].InPort; g != 0 {
		t.Fatalf("InPort %d, want 0", g)
	}
	c := st.sw.Counters()
	if c.NoRoute != 1 || len(st.log.Drops) != 1 || st.log.Drops[0].Reason != "no-route" || st.log.Drops[0].Lossless {
		t.Fatalf("no-route drop not counted: %+v %+v", c, st.log.Drops)
	}
}

func ecmpStar(t *testing.T, gap clock.Time) *star {
	cfg := baseConfig(5)
	cfg.FIB = route(cfg.FIB, 4, 1, 2, 3, 4) // four equal-cost ports toward "host 4"
	cfg.FlowletGap = gap
	return newStar(t, cfg)
}

func TestECMPSpreadsAndIsStablePerFlow(t *testing.T) {
	st := ecmpStar(t, 0)
	const flows = 400
	for f := 0; f < flows; f++ {
		for i := 0; i < 3; i++ {
			st.hosts[0].eg.Enqueue(3, data(0, 4, uint32(f), uint32(i), 200))
		}
	}
	st.clk.RunUntil(clock.Millisecond)
	portOf := map[uint32]int{}
	total := 0
	for port := 1; port <= 4; port++ {
		got := st.hosts[port].got
		total += len(got)
		if len(got) < flows*3/4/2 {
			t.Errorf("port %d got %d of %d frames: poor spread", port, len(got), flows*3)
		}
		for _, p := range got {
			if prev, ok := portOf[p.Flow]; ok && prev != port {
				t.Fatalf("flow %d split across ports %d and %d", p.Flow, prev, port)
			}
			portOf[p.Flow] = port
		}
	}
	if total != flows*3 {
		t.Fatalf("delivered %d of %d", total, flows*3)
	}
}

func TestFlowletsSwitchAfterGap(t *testing.T) {
	st := ecmpStar(t, 5*clock.Microsecond)
	// Bursts of 4 back-to-back frames (a flowlet each), 20 us apart: each burst stays on one port; bursts
	// move between ports.
	const bursts = 20
	for b := 0; b < bursts; b++ {
		at := clock.Time(b) * 20 * clock.Microsecond
		b := b
		st.clk.AfterFunc(at, func() {
			for i := 0; i < 4; i++ {
				st.hosts[0].eg.Enqueue(3, data(0, 4, 1, uint32(b*4+i), 1000))
			}
		})
	}
	st.clk.RunUntil(clock.Millisecond)
	portOfPSN := map[uint32]int{}
	for port := 1; port <= 4; port++ {
		for _, p := range st.hosts[port].got {
			portOfPSN[p.PSN] = port
		}
	}
	if len(portOfPSN) != bursts*4 {
		t.Fatalf("delivered %d of %d", len(portOfPSN), bursts*4)
	}
	used := map[int]bool{}
	for b := 0; b < bursts; b++ {
		first := portOfPSN[uint32(b*4)]
		used[first] = true
		for i := 1; i < 4; i++ {
			if portOfPSN[uint32(b*4+i)] != first {
				t.Fatalf("burst %d split across ports inside a flowlet", b)
			}
		}
	}
	if len(used) < 3 {
		t.Fatalf("flowlets used only ports %v over %d gaps", used, bursts)
	}
}

func TestControlBypassesPausedDataAndProbeDelay(t *testing.T) {
	cfg := baseConfig(3)
	cfg.FlowControl = fc.Config{Mode: "pfc"}
	st := newStar(t, cfg)
	// Host 2 pauses priority 3 on the switch's port 2.
	pause := &pkt.Packet{Kind: pkt.PFC, Size: pkt.MinFrame, Src: -1, Dst: -1, PauseMask: 1 << 3}
	pause.PauseQuanta[3] = 0xFFFF
	st.hosts[2].eg.Enqueue(8, pause)
	st.clk.RunUntil(5 * clock.Microsecond)
	if !st.sw.Port(2).Paused(3) {
		t.Fatal("PFC pause did not pause the egress priority")
	}
	for i := 0; i < 5; i++ {
		st.hosts[0].eg.Enqueue(3, data(0, 2, 1, uint32(i), 1000))
	}
	ack := &pkt.Packet{Kind: pkt.Ack, Size: pkt.AckSize, Src: 1, Dst: 2, Prio: 3}
	probe := &pkt.Packet{Kind: pkt.Probe, Size: 64, Src: 1, Dst: 2}
	st.hosts[1].eg.Enqueue(8, ack)
	st.clk.RunUntil(20 * clock.Microsecond)
	if len(st.hosts[2].got) != 1 || st.hosts[2].got[0] != ack {
		t.Fatalf("want only the ACK through a paused port, got %d frames", len(st.hosts[2].got))
	}
	// A probe queued behind a frame being serialized accumulates the wait.
	st.sw.Port(2).Pause(3, false)
	st.sw.Receive(1, probe)
	st.clk.RunUntil(40 * clock.Microsecond)
	if probe.ProbeDelay <= 0 || probe.ProbeDelay > clock.TxTime(1000, rate) {
		t.Fatalf("probe delay %v, want in (0, one 1000 B frame time]", probe.ProbeDelay)
	}
	c := st.sw.Counters()
	if c.Ports[2].PausesReceived != 1 {
		t.Fatalf("pauses received on port 2: %d", c.Ports[2].PausesReceived)
	}
	if len(st.log.Pauses) != 1 || st.log.Pauses[0].Sent || !st.log.Pauses[0].On || st.log.Pauses[0].Queue != 3 ||
		st.log.Pauses[0].Kind != records.Switch || st.log.Pauses[0].Device != 7 {
		t.Fatalf("pause records: %+v", st.log.Pauses)
	}
}

// With AcksWithData an ACK waits in the data queue behind the data ahead of it and is paused with it
// (htsim's switch FIFO), and leaves the buffer and pause counters as they were.
func TestAcksWithDataQueueBehindDataAndArePaused(t *testing.T) {
	cfg := baseConfig(3)
	cfg.FlowControl = fc.Config{Mode: "pfc"}
	cfg.AcksWithData, cfg.AckDataPrio = true, 3
	st := newStar(t, cfg)
	pause := &pkt.Packet{Kind: pkt.PFC, Size: pkt.MinFrame, Src: -1, Dst: -1, PauseMask: 1 << 3}
	pause.PauseQuanta[3] = 0xFFFF
	st.hosts[2].eg.Enqueue(8, pause)
	st.clk.RunUntil(5 * clock.Microsecond)
	for i := 0; i < 3; i++ {
		st.hosts[0].eg.Enqueue(3, data(0, 2, 1, uint32(i), 1000))
	}
	st.clk.RunUntil(10 * clock.Microsecond)
	ack := &pkt.Packet{Kind: pkt.Ack, Size: pkt.AckSize, Src: 1, Dst: 2, Prio: 7}
	st.hosts[1].eg.Enqueue(8, ack)
	st.clk.RunUntil(20 * clock.Microsecond)
	if n := len(st.hosts[2].got); n != 0 {
		t.Fatalf("%d frames through a paused port, want none (the ACK is paused with the data)", n)
	}
	if got, want := st.sw.Port(2).Bytes(3), 3*1000+pkt.AckSize; got != want {
		t.Fatalf("data queue holds %d bytes, want %d (three data frames and the ACK)", got, want)
	}
	used := st.sw.MMU().Used()
	st.sw.Port(2).Pause(3, false)
	st.clk.RunUntil(40 * clock.Microsecond)
	got := st.hosts[2].got
	if len(got) != 4 || got[3] != ack {
		t.Fatalf("want the three data frames, then the ACK; got %d frames", len(got))
	}
	if used != 3000 || st.sw.MMU().Used() != 0 {
		t.Fatalf("buffer used: %d before the drain (want 3000: the data alone), %d after (want 0)", used, st.sw.MMU().Used())
	}
}

func TestPFCPauseExpiresAfterQuanta(t *testing.T) {
	cfg := baseConfig(2)
	cfg.FlowControl = fc.Config{Mode: "pfc"}
	st := newStar(t, cfg)
	pause := &pkt.Packet{Kind: pkt.PFC, Size: pkt.MinFrame, Src: -1, Dst: -1, PauseMask: 1 << 3}
	pause.PauseQuanta[3] = 1000 // 512000 bits at 100G = 5.12 us
	st.sw.Receive(1, pause)
	if !st.sw.Port(1).Paused(3) {
		t.Fatal("not paused")
	}
	st.clk.RunUntil(5 * clock.Microsecond)
	if !st.sw.Port(1).Paused(3) {
		t.Fatal("resumed before the quanta ran out")
	}
	st.clk.RunUntil(6 * clock.Microsecond)
	if st.sw.Port(1).Paused(3) {
		t.Fatal("still paused after the quanta ran out")
	}
	if n := len(st.log.Pauses); n != 2 || st.log.Pauses[1].On {
		t.Fatalf("want pause then expiry-resume records, got %+v", st.log.Pauses)
	}
}

func TestLossyDropTail(t *testing.T) {
	cfg := baseConfig(5)
	cfg.QueueLimitBytes = 50_000
	st := newStar(t, cfg)
	st.incast(4, 100)
	c := st.sw.Counters()
	q := c.Ports[4].Queues[3]
	if q.Dropped == 0 || c.Dropped != q.Dropped || c.LosslessDrops != 0 {
		t.Fatalf("want drops at the congested queue, none lossless: %+v", c)
	}
	if int(q.Dropped)+len(st.hosts[4].got) != 400 {
		t.Fatalf("dropped %d + delivered %d != 400", q.Dropped, len(st.hosts[4].got))
	}
	if q.MaxBytes > 50_000 {
		t.Fatalf("queue reached %d B past its 50 KB limit", q.MaxBytes)
	}
	if len(st.log.Violations) != 0 || st.log.Drops[0].Lossless || st.log.Drops[0].Reason != "buffer" {
		t.Fatalf("lossy drops recorded as violations: %v %+v", st.log.Violations, st.log.Drops[0])
	}
	if c.Ports[4].PausesSent != 0 {
		t.Fatal("lossy mode sent pauses")
	}
	assertDrained(t, st)
}

func TestLossyDynamicThreshold(t *testing.T) {
	cfg := baseConfig(5)
	cfg.BufferBytes = 200_000
	cfg.Alpha = 1
	st := newStar(t, cfg)
	st.incast(4, 100)
	c := st.sw.Counters()
	q := c.Ports[4].Queues[3]
	// With alpha 1 a single queue settles where it holds half the shared buffer.
	if q.Dropped == 0 || q.MaxBytes > 101_000 || q.MaxBytes < 90_000 {
		t.Fatalf("dynamic threshold: dropped %d, max %d", q.Dropped, q.MaxBytes)
	}
	assertDrained(t, st)
}

func pfcConfig(n int) Config {
	cfg := baseConfig(n)
	cfg.FlowControl = fc.Config{Mode: "pfc", XOFF: units.Size{BDPs: 6}, XON: units.Size{BDPs: 4}}
	cfg.ECN = ECNConfig{Enabled: true, KMinBytes: 100_000, KMaxBytes: 400_000, PMax: 0.2}
	return cfg
}

func assertDrained(t *testing.T, st *star) {
	t.Helper()
	m := st.sw.MMU()
	if m.Used() != 0 || m.SharedUsed() != 0 {
		t.Fatalf("buffer not returned after the run: used %d shared %d", m.Used(), m.SharedUsed())
	}
}

func checkInOrder(t *testing.T, got []*pkt.Packet, senders, n int) {
	t.Helper()
	next := make([]uint32, senders)
	for _, p := range got {
		if p.PSN != next[p.Flow] {
			t.Fatalf("flow %d: psn %d, want %d", p.Flow, p.PSN, next[p.Flow])
		}
		next[p.Flow]++
	}
	for f, v := range next {
		if int(v) != n {
			t.Fatalf("flow %d delivered %d of %d", f, v, n)
		}
	}
}

func TestPFCIncastIsLossless(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"static-6bdp", func(*Config) {}},
		{"dynamic-alpha", func(c *Config) { c.FlowControl.XOFF, c.FlowControl.XON = units.Size{}, units.Size{} }},
		{"short-quanta-refresh", func(c *Config) { c.FlowControl.PauseQuanta = 200 }},
		{"small-buffer-dynamic", func(c *Config) {
			c.BufferBytes = 400_000
			c.Lossless = []bool{false, false, false, true, false, false, false, false}
			c.FlowControl.XOFF, c.FlowControl.XON = units.Size{}, units.Size{}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := pfcConfig(9)
			tc.mod(&cfg)
			st := newStar(t, cfg)
			st.incast(8, 300)
			c := st.sw.Counters()
			if c.Dropped != 0 || len(st.log.Violations) != 0 {
				t.Fatalf("lossless incast dropped %d: %v", c.Dropped, st.log.Violations)
			}
			checkInOrder(t, st.hosts[8].got, 8, 300)
			var sent, hostPauses int
			for i := 0; i < 8; i++ {
				sent += int(c.Ports[i].PausesSent)
				hostPauses += st.hosts[i].pauses
				if c.Ports[i].ResumesSent != c.Ports[i].PausesSent {
					t.Errorf("port %d: %d pauses, %d resumes", i, c.Ports[i].PausesSent, c.Ports[i].ResumesSent)
				}
			}
			if sent == 0 || hostPauses < sent {
				t.Fatalf("pauses sent %d, obeyed by hosts %d", sent, hostPauses)
			}
			if tc.name == "short-quanta-refresh" && c.Ports[0].RefreshesSent == 0 {
				t.Fatal("no refreshes with short quanta")
			}
			var logged int
			for _, p := range st.log.Pauses {
				if p.Sent && p.On {
					logged++
				}
			}
			if logged != sent {
				t.Fatalf("logged %d pauses, counted %d", logged, sent)
			}
			if c.Ports[8].Queues[3].MaxBytes == 0 || c.Ports[8].MaxBytes < int64(c.Ports[8].Queues[3].MaxBytes) {
				t.Fatalf("max depth counters: %+v", c.Ports[8])
			}
			assertDrained(t, st)
		})
	}
}

func TestPFCHeadroomTooSmallIsAViolation(t *testing.T) {
	cfg := pfcConfig(9)
	cfg.FlowControl.HeadroomBytes = 3000
	st := newStar(t, cfg)
	st.incast(8, 300)
	c := st.sw.Counters()
	if c.LosslessDrops == 0 || len(st.log.Violations) != int(c.LosslessDrops) {
		t.Fatalf("want counted lossless violations, got %d drops, %d violations", c.LosslessDrops, len(st.log.Violations))
	}
	d := st.log.Drops[0]
	if !d.Lossless || d.Reason != "headroom" || d.Port != 8 || d.Queue != 3 {
		t.Fatalf("drop record %+v", d)
	}
	if !strings.Contains(st.log.Violations[0], "lossless drop") {
		t.Fatalf("violation text %q", st.log.Violations[0])
	}
	assertDrained(t, st)
}

func TestHeadroomFormula(t *testing.T) {
	// 100G, 1 us: 12500 B each way, 3 x 1500 B frames, a pause frame.
	if got := Headroom(100e9, clock.Microsecond, 1500); got != 2*12500+4500+64 {
		t.Fatalf("headroom %d", got)
	}
}

func TestECNFollowsRED(t *testing.T) {
	// Build a 1 MB standing queue behind a pause, then drain it: each frame is marked with the RED
	// probability of the bytes it leaves behind, known exactly here.
	const n, size = 1000, 1000
	var inBand, markedBand, expect float64
	for seed := int64(1); seed <= 10; seed++ {
		cfg := baseConfig(2)
		cfg.Seed = seed
		cfg.ECN = ECNConfig{Enabled: true, KMinBytes: 100_000, KMaxBytes: 400_000, PMax: 0.2}
		st := newStar(t, cfg)
		st.sw.Port(1).Pause(3, true)
		for i := 0; i < n; i++ {
			st.sw.Receive(0, data(0, 1, 1, uint32(i), size))
		}
		st.sw.Port(1).Pause(3, false)
		st.clk.RunUntil(clock.Second)
		got := st.hosts[1].got
		if len(got) != n {
			t.Fatalf("delivered %d", len(got))
		}
		for i, p := range got {
			left := (n - 1 - i) * size
			pr := st.sw.MarkProbability(left)
			marked := p.ECN == pkt.CE
			switch {
			case pr == 0 && marked, pr == 1 && !marked:
				t.Fatalf("frame leaving %d B: marked=%v, RED probability %g", left, marked, pr)
			case pr > 0 && pr < 1:
				inBand++
				expect += pr
				if marked {
					markedBand++
				}
			}
		}
		if c := st.sw.Counters(); c.Marked != c.Ports[1].Queues[3].Marked || c.Marked == 0 {
			t.Fatalf("mark counters %+v", c)
		}
	}
	sigma := math.Sqrt(expect)
	if math.Abs(markedBand-expect) > 4*sigma {
		t.Fatalf("marked %g of %g frames in (Kmin, Kmax], RED expects %.1f", markedBand, inBand, expect)
	}
}

func TestMaxDepthCounters(t *testing.T) {
	st := newStar(t, baseConfig(2))
	st.sw.Port(1).Pause(3, true)
	for i := 0; i < 10; i++ {
		st.sw.Receive(0, data(0, 1, 1, uint32(i), 1000))
	}
	st.sw.Port(1).Pause(3, false)
	st.clk.RunUntil(clock.Millisecond)
	c := st.sw.Counters()
	q := c.Ports[1].Queues[3]
	if q.MaxBytes != 10_000 || c.Ports[1].MaxBytes != 10_000 || q.Enqueued != 10 || q.Dequeued != 10 || q.Bytes != 0 {
		t.Fatalf("queue counters %+v port max %d", q, c.Ports[1].MaxBytes)
	}
	st.sw.Flush()
	rc := st.log.Counters[0]
	if rc.Device != 7 || rc.RxFrames != 10 || rc.TxFrames != 10 || rc.MaxQueue[1] != 10_000 {
		t.Fatalf("flushed counters %+v", rc)
	}
}

func TestDeterministic(t *testing.T) {
	run := func() (Counters, *records.Log) {
		cfg := pfcConfig(9)
		cfg.FIB = route(cfg.FIB, 8, 8)
		cfg.SampleEvery = 10 * clock.Microsecond
		st := newStar(t, cfg)
		st.incast(8, 200)
		st.sw.Stop()
		st.sw.Flush()
		return st.sw.Counters(), st.log
	}
	c1, l1 := run()
	c2, l2 := run()
	if !reflect.DeepEqual(c1, c2) || !reflect.DeepEqual(l1, l2) {
		t.Fatal("two identical runs differ")
	}
	if len(l1.Samples) == 0 || c1.Marked == 0 {
		t.Fatalf("run too quiet to compare: %d samples, %d marks", len(l1.Samples), c1.Marked)
	}
}

// A rerouted table takes effect for the next frame; one naming a port the switch lacks (a live "fib"
// request arrives as JSON) is refused and the old table stays.
func TestSetFIB(t *testing.T) {
	st := newStar(t, baseConfig(3))
	if err := st.sw.SetFIB(route(fib.Table{}, 2, 1)); err != nil {
		t.Fatal(err)
	}
	st.hosts[0].eg.Enqueue(3, data(0, 2, 1, 0, 500))
	st.clk.RunUntil(clock.Millisecond)
	if len(st.hosts[1].got) != 1 || len(st.hosts[2].got) != 0 {
		t.Fatalf("toward h2 by the new table: h1 got %d, h2 got %d", len(st.hosts[1].got), len(st.hosts[2].got))
	}
	if err := st.sw.SetFIB(route(fib.Table{}, 2, 3)); err == nil || !strings.Contains(err.Error(), "fib[2]: port 3") {
		t.Fatalf("table naming port 3 of 3: %v", err)
	}
	if got := st.sw.cfg.FIB.Ports(2); string(got) != "\x01" {
		t.Fatalf("refused table replaced the old one: h2 now on %v", got)
	}
}

func TestConfigErrors(t *testing.T) {
	clk := clock.NewVirtual()
	for _, tc := range []struct {
		want string
		mod  func(*Config)
	}{
		{"buffer_bytes", func(c *Config) { c.BufferBytes = 0 }},
		{"unknown mode", func(c *Config) { c.FlowControl.Mode = "magic" }},
		{"fib[1]", func(c *Config) { c.FIB = route(c.FIB, 1, 9) }},
		{"no shared space", func(c *Config) { c.FlowControl.Mode = "pfc"; c.BufferBytes = 50_000 }},
		{"refresh", func(c *Config) { c.FlowControl.Mode = "pfc"; c.FlowControl.Refresh = clock.Second }},
		{"ecn", func(c *Config) { c.ECN = ECNConfig{Enabled: true, KMinBytes: 10, KMaxBytes: 5, PMax: 0.2} }},
	} {
		cfg := baseConfig(2)
		tc.mod(&cfg)
		_, err := New(cfg, clk, nil, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want error mentioning %q, got %v", tc.want, err)
		}
	}
}

func BenchmarkForward(b *testing.B) {
	cfg := pfcConfig(2)
	clk := clock.NewVirtual()
	var sink egress.LinkFunc = func(*pkt.Packet) {}
	sw, err := New(cfg, clk, []egress.Link{sink, sink}, nil)
	if err != nil {
		b.Fatal(err)
	}
	p := data(0, 1, 1, 0, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sw.Receive(0, p)
		clk.Step()
	}
}

// The default headroom must hold at long delays too, and not be wildly loose: the worst case in a
// line-rate incast should use a good part of it.
func TestHeadroomBoundIsTight(t *testing.T) {
	for _, d := range []clock.Time{clock.Microsecond, 10 * clock.Microsecond} {
		cfg := pfcConfig(9)
		cfg.BufferBytes = 20_000_000
		for i := range cfg.Ports {
			cfg.Ports[i].Delay = d
		}
		st := newStarDelay(t, cfg, d)
		st.incast(8, 2000)
		c := st.sw.Counters()
		if c.Dropped != 0 {
			t.Fatalf("delay %v: %d drops: %v", d, c.Dropped, st.log.Violations[:1])
		}
		used, bound := st.sw.MMU().MaxHeadroomUsed(), Headroom(rate, d, 1500)
		t.Logf("delay %v: headroom used %d of %d", d, used, bound)
		if used > bound || used < bound/2 {
			t.Fatalf("delay %v: headroom used %d, bound %d", d, used, bound)
		}
	}
}

func TestConfigIsPlainJSON(t *testing.T) {
	cfg := pfcConfig(3)
	cfg.FlowletGap = 5 * clock.Microsecond
	cfg.Lossless = []bool{false, false, false, true, false, false, false, false}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"fib":{"sets":[[],[0],[1],[2]],"idx":[1,2,3]}`) {
		t.Fatalf("fib not written as numbers: %s", b)
	}
	var back Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, back) {
		t.Fatalf("JSON round trip changed the config:\n%+v\n%+v", cfg, back)
	}
}

// A class-up turn moves a frame one priority up on the way out and nowhere else; the ingress group that
// pauses the sender stays the arrival priority's.
func TestClassUpTurn(t *testing.T) {
	cfg := baseConfig(3)
	cfg.FlowControl = fc.Config{Mode: "pfc"}
	cfg.ClassUp = []Turn{{In: 0, Out: 2}}
	st := newStar(t, cfg)
	st.hosts[0].eg.Enqueue(3, data(0, 2, 1, 0, 500)) // turn 0 -> 2: raised
	st.hosts[0].eg.Enqueue(3, data(0, 1, 2, 0, 500)) // 0 -> 1: not a turn
	st.hosts[1].eg.Enqueue(3, data(1, 2, 3, 0, 500)) // 1 -> 2: not a turn
	st.clk.RunUntil(clock.Millisecond)
	prio := func(h int) []uint8 {
		var ps []uint8
		for _, p := range st.hosts[h].got {
			ps = append(ps, p.Prio)
		}
		return ps
	}
	if got := prio(2); len(got) != 2 || !(got[0] == 4 && got[1] == 3 || got[0] == 3 && got[1] == 4) {
		t.Fatalf("host 2 got priorities %v, want one raised to 4 (from port 0) and one kept at 3 (from port 1)", got)
	}
	for _, p := range st.hosts[2].got {
		if (p.Flow == 1) != (p.Prio == 4) {
			t.Fatalf("flow %d arrived with priority %d", p.Flow, p.Prio)
		}
	}
	if got := prio(1); len(got) != 1 || got[0] != 3 {
		t.Fatalf("host 1 got priorities %v, want [3]", got)
	}
	if st.sw.Port(2).Stats(4).Dequeued != 1 || st.sw.Port(2).Stats(3).Dequeued != 1 {
		t.Fatalf("port 2 dequeued %d frames from queue 4 and %d from queue 3, want 1 and 1",
			st.sw.Port(2).Stats(4).Dequeued, st.sw.Port(2).Stats(3).Dequeued)
	}
	bad := baseConfig(3)
	bad.ClassUp = []Turn{{In: 1, Out: 1}}
	if _, err := New(bad, clock.NewVirtual(), nil, nil); err == nil || !strings.Contains(err.Error(), "class_up[0]") {
		t.Fatalf("a U-turn class_up was accepted or the error does not name the field: %v", err)
	}
}

// TestPFCAlphaOverridesStaticXOFF: a set Alpha selects HPCC's dynamic threshold even when XOFF is set too
// (the spec layer always fills XOFF), so alpha changes when and how often ports pause. Before, XOFF
// being set silently switched alpha off and the three runs below were identical.
func TestPFCAlphaOverridesStaticXOFF(t *testing.T) {
	type outcome struct {
		pauses   uint64
		first    clock.Time
		maxQueue int
	}
	run := func(alpha float64) outcome {
		cfg := pfcConfig(9)
		cfg.FlowControl.Alpha = alpha
		st := newStar(t, cfg)
		st.incast(8, 300)
		c := st.sw.Counters()
		if c.Dropped != 0 || len(st.log.Violations) != 0 {
			t.Fatalf("alpha %g: lossless incast dropped %d: %v", alpha, c.Dropped, st.log.Violations)
		}
		checkInOrder(t, st.hosts[8].got, 8, 300)
		o := outcome{first: -1, maxQueue: c.Ports[8].Queues[3].MaxBytes}
		for i := 0; i < 8; i++ {
			o.pauses += c.Ports[i].PausesSent
		}
		for _, p := range st.log.Pauses {
			if p.Sent && p.On && (o.first < 0 || p.At < o.first) {
				o.first = p.At
			}
		}
		assertDrained(t, st)
		return o
	}
	static, loose, tight := run(0), run(0.125), run(0.01)
	t.Logf("static 6 BDP: %+v; alpha 0.125: %+v; alpha 0.01: %+v", static, loose, tight)
	if tight.pauses == 0 || loose.pauses == 0 {
		t.Fatalf("no pauses: alpha 0.125 %+v, alpha 0.01 %+v", loose, tight)
	}
	if tight == loose || loose == static {
		t.Fatalf("alpha does not act: static %+v, alpha 0.125 %+v, alpha 0.01 %+v", static, loose, tight)
	}
	// A smaller alpha is a lower threshold: ports pause earlier.
	if tight.first >= loose.first {
		t.Errorf("alpha 0.01 paused first at %v, not before alpha 0.125 (%v)", tight.first, loose.first)
	}
}

// TestRoutesMatchFIB: route's per-destination entries (a one-port set's port in place) pick the port
// the table itself gives, for sets of none, one and several ports, through SetFIB, and with a table of
// more sets than the entries can index (route then reads the table).
func TestRoutesMatchFIB(t *testing.T) {
	sw, err := New(baseConfig(4), clock.NewVirtual(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	byTable := func(p *pkt.Packet) int {
		set := sw.fib.Ports(int(p.Dst))
		switch len(set) {
		case 0:
			return -1
		case 1:
			return int(set[0])
		}
		return int(set[fmix32(p.FlowHash(sw.salt))%uint32(len(set))])
	}
	check := func(name string, dsts int) {
		for d := -1; d <= dsts; d++ {
			for flow := uint32(0); flow < 8; flow++ {
				p := data(0, int32(d), flow, 0, 1000)
				p.SPort = uint16(flow * 7919)
				if got, want := sw.route(p), byTable(p); got != want {
					t.Fatalf("%s: dst %d flow %d: port %d, table %d", name, d, flow, got, want)
				}
			}
		}
	}
	var tb fib.Table
	tb = route(tb, 0, 3)
	tb = route(tb, 1, 0, 1, 2)
	tb = route(tb, 3, 2, 3)
	tb = route(tb, 5, 1)
	if err := sw.SetFIB(tb); err != nil {
		t.Fatal(err)
	}
	if sw.routes == nil {
		t.Fatal("a table of 4 sets left route without its entries")
	}
	check("small table", 6)
	var sets [][]uint8
	for i := 0; len(sets) <= routeOne; i++ {
		if a, b := uint8(i%4), uint8(i/4%4); a != b || i%16 == 0 {
			sets = append(sets, []uint8{a, b, uint8(i / 16 % 4), uint8(i / 64 % 4), uint8(i / 256 % 4), uint8(i / 1024 % 4), uint8(i / 4096 % 4), uint8(i / 16384 % 4)})
		}
	}
	wide, err := fib.FromSets(sets)
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.SetFIB(wide); err != nil {
		t.Fatal(err)
	}
	if sw.routes != nil || len(wide.Sets) <= routeOne {
		t.Fatalf("a table of %d sets: entries %v", len(wide.Sets), sw.routes != nil)
	}
	check("wide table", 200)
}
