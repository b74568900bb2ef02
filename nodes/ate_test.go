package nodes

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
)

func TestATEEq3StepClampAndSkip(t *testing.T) {
	c := ATEController{P: 0.9, B: 100, W: 1}
	if w := c.Update(200); math.Abs(w-0.45) > 1e-12 { // 1 x 0.9 x 100 / 200
		t.Fatalf("w after T=200: %g, want 0.45", w)
	}
	if w := c.Update(0); w != 0.45 || c.Skips != 1 || c.Updates != 1 {
		t.Fatalf("T=0 must skip and keep w: w=%g updates=%d skips=%d", w, c.Updates, c.Skips)
	}
	if w := c.Update(60); math.Abs(w-0.675) > 1e-12 { // 0.45 x 90 / 60: an underloaded HBD gets more
		t.Fatalf("w after T=60: %g, want 0.675", w)
	}
	if w := c.Update(10); w != 1 { // 0.675 x 9 would be 6.1: clamped
		t.Fatalf("w after T=10: %g, want the clamp at 1", w)
	}
	if w := c.Update(90); w != 1 { // T = p·B_H is the fixed point
		t.Fatalf("w at the fixed point moved to %g", w)
	}
	if w := c.Update(1e300); w < 0 || w > 1e-290 {
		t.Fatalf("w after an enormous T: %g, want (0, tiny]", w)
	}
}

// hbdModel is the HBD as the controller sees it: a node offers demand d; w of it goes HBD-first and
// T^H is what the HBD then carries, capped at its capacity b (rate reading), or the offered share
// uncapped (in-flight reading: a queue grows past capacity), with seeded ±noise.
func hbdModel(d, b, noise float64, capped bool, r *rand.Rand) func(w float64) float64 {
	return func(w float64) float64 {
		t := w * d
		if capped {
			t = min(t, b)
		}
		return t * (1 + noise*(2*r.Float64()-1))
	}
}

func TestATEConvergesToPBH(t *testing.T) {
	const p, b = 0.9, 100.0
	for _, tc := range []struct {
		name   string
		d      float64
		capped bool
		noise  float64
		steps  int // to within 1% of p·B_H (noise-free)
	}{
		{"demand 3 B_H, in-flight reading", 3 * b, false, 0, 1},
		{"demand 3 B_H, rate reading (capped at B_H)", 3 * b, true, 0, 12}, // w falls by p per step while T is capped
		{"demand 1.2 B_H, rate reading", 1.2 * b, true, 0, 4},
		{"demand 3 B_H, ±20% noise", 3 * b, false, 0.2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plant := hbdModel(tc.d, b, tc.noise, tc.capped, rand.New(rand.NewPCG(1, 2)))
			c := ATEController{P: p, B: b, W: 1}
			var ts []float64
			for i := 0; i < 200; i++ {
				tt := plant(c.W)
				ts = append(ts, tt)
				c.Update(tt)
			}
			if tc.noise == 0 {
				for i := tc.steps; i < len(ts); i++ {
					if math.Abs(ts[i]-p*b) > 0.01*p*b {
						t.Fatalf("T^H at step %d = %g, want p·B_H = %g (trace %v)", i, ts[i], p*b, ts[:min(len(ts), tc.steps+3)])
					}
				}
				if want := p * b / tc.d; math.Abs(c.W-want) > 1e-9 {
					t.Fatalf("w^H = %g, want p·B_H/D = %g (the overflow D - p·B_H goes to the ND)", c.W, want)
				}
				return
			}
			// With noise the controller cannot settle, but it must stay centred on p·B_H (geometric
			// mean over the last 150 steps) and not drift.
			var logSum float64
			for _, tt := range ts[50:] {
				logSum += math.Log(tt)
			}
			if g := math.Exp(logSum / float64(len(ts[50:]))); math.Abs(g-p*b) > 0.1*p*b {
				t.Fatalf("T^H geometric mean %g, want p·B_H = %g within 10%%", g, p*b)
			}
		})
	}
	// Below p·B_H the HBD takes all: w^H climbs to the clamp and stays.
	c := ATEController{P: p, B: b, W: 0.2}
	for i := 0; i < 50; i++ {
		c.Update(c.W * 0.5 * b)
	}
	if c.W != 1 {
		t.Fatalf("demand 0.5 B_H: w^H = %g, want 1", c.W)
	}
}

func TestATEConfigChecks(t *testing.T) {
	ports := []PortConfig{{RateBps: 400e9}, {RateBps: 100e9}}
	c := Config{Ports: ports, PathSelect: SelectATE, ATE: ATEConfig{CapacityBytes: 400_000}}
	got, err := c.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if got.ATE.P != DefaultATEP || got.ATE.W0 != 1 || got.ATE.Interval != 8*clock.Microsecond {
		t.Fatalf("defaults: %+v (want p 0.9, w0 1, interval 400 KB at 400 Gb/s = 8 us)", got.ATE)
	}
	for _, bad := range []ATEConfig{
		{P: 1, CapacityBytes: 1}, {P: -0.1, CapacityBytes: 1}, {CapacityBytes: 0}, {HBDPort: 2, CapacityBytes: 1},
		{CapacityBytes: 1, W0: 1.5}, {CapacityBytes: 1, Interval: -1},
	} {
		c.ATE = bad
		if _, err := c.WithDefaults(); err == nil {
			t.Errorf("ATE config %+v accepted", bad)
		}
	}
}

// ateNIC is a two-port NIC (port 0 HBD at 400 Gb/s, port 1 ND at 100 Gb/s) whose links lead nowhere:
// nothing is ever acknowledged, so what it sends on port 0 stays in flight.
func ateNIC(t *testing.T, seed uint64) (*NIC, *clock.Virtual) {
	clk := clock.NewVirtual()
	cfg := Config{Host: 0, Ports: []PortConfig{{RateBps: 400e9}, {RateBps: 100e9}}, Seed: seed,
		PathSelect: SelectATE, ATE: ATEConfig{CapacityBytes: 100_000}}
	links := []egress.Link{&tlink{clk: clk, to: sink{}, noTap: true}, &tlink{clk: clk, to: sink{}, noTap: true}}
	n, err := New(cfg, clk, links, &records.Log{})
	if err != nil {
		t.Fatal(err)
	}
	return n, clk
}

type sink struct{}

func (sink) Receive(int, *pkt.Packet) {}

func TestATEFirstHopFromInFlight(t *testing.T) {
	run := func(seed uint64) (ATEStats, []int) {
		n, clk := ateNIC(t, seed)
		hbd, nd := []uint8{0, 3}, []uint8{1, 2}
		var ports []int
		// A 2-hop HBD flow fills the HBD: 400 KB sent and never acknowledged is 4 x B_H in flight.
		if err := n.StartFlow(Flow{ID: 1, Dst: 5, Size: 400_000, Route: hbd}); err != nil {
			t.Fatal(err)
		}
		clk.RunUntil(20 * clock.Microsecond)
		for id := uint32(2); id < 202; id++ {
			f := Flow{ID: id, Dst: 9, Size: 1000, Route: hbd, Paths: [][]uint8{hbd, nd}}
			if err := n.StartFlow(f); err != nil {
				t.Fatal(err)
			}
			ports = append(ports, n.qps[id].port)
			clk.RunUntil(clk.Now() + 100*clock.Nanosecond)
		}
		return n.ATE(), ports
	}
	s, ports := run(7)
	if s.Updates < 1 || s.Trace[0].T < 400_000 {
		t.Fatalf("first update should read the 400 KB in flight: %+v", s)
	}
	// 0.9 x 100 KB / >= 400 KB: w^H <= 0.225 after the first step, lower after later ones.
	if s.Trace[0].W > 0.226 {
		t.Fatalf("w^H after reading 4 B_H in flight: %g, want <= 0.225", s.Trace[0].W)
	}
	hb := 0
	for _, p := range ports {
		if p == 0 {
			hb++
		}
	}
	if hb != s.HBDFirst || s.HBDFirst+s.NDFirst != 200 || s.NDFirst < 140 {
		t.Fatalf("flows by first hop: HBD %d (ports say %d), ND %d; want most on the ND while the HBD is overfull", s.HBDFirst, hb, s.NDFirst)
	}
	s2, ports2 := run(7)
	for i := range ports {
		if ports[i] != ports2[i] {
			t.Fatalf("same seed, different choice at flow %d", i+2)
		}
	}
	if s2.W != s.W {
		t.Fatalf("same seed, w^H %g vs %g", s.W, s2.W)
	}
}

// Measuring assigned bytes, a burst of flows started at one instant splits: the HBD takes flows until
// their bytes reach about p·B_H, the rest go ND-first. Measuring bytes in flight, the same burst sees
// nothing and stays on the HBD.
func TestATEBurstAssignedVsInFlight(t *testing.T) {
	for _, measure := range []string{ATEInFlight, ATEAssigned} {
		clk := clock.NewVirtual()
		cfg := Config{Host: 0, Ports: []PortConfig{{RateBps: 400e9}, {RateBps: 100e9}}, Seed: 3,
			PathSelect: SelectATE, ATE: ATEConfig{CapacityBytes: 100_000, Measure: measure}}
		links := []egress.Link{&tlink{clk: clk, to: sink{}, noTap: true}, &tlink{clk: clk, to: sink{}, noTap: true}}
		n, err := New(cfg, clk, links, &records.Log{})
		if err != nil {
			t.Fatal(err)
		}
		hbd, nd := []uint8{0, 3}, []uint8{1, 2}
		for id := uint32(1); id <= 40; id++ { // 40 x 20 KB = 8 B_H offered at once
			if err := n.StartFlow(Flow{ID: id, Dst: 9, Size: 20_000, Route: hbd, Paths: [][]uint8{hbd, nd}}); err != nil {
				t.Fatal(err)
			}
		}
		s := n.ATE()
		t.Logf("%s: HBD-first %d, ND-first %d, w^H %.3g, %d updates, T^H %.0f B", measure, s.HBDFirst, s.NDFirst, s.W, s.Updates, n.hbdInFlight())
		switch measure {
		case ATEInFlight:
			if s.NDFirst != 0 {
				t.Fatalf("inflight: %d flows went ND-first with nothing sent yet", s.NDFirst)
			}
		case ATEAssigned:
			// p·B_H = 90 KB: 4-5 flows of 20 KB before the first step below 1, then few more.
			if s.HBDFirst < 4 || s.HBDFirst > 12 || n.hbdInFlight() > 3*90_000 {
				t.Fatalf("assigned: HBD-first %d flows (%.0f B), want the HBD filled to about p·B_H = 90 KB", s.HBDFirst, n.hbdInFlight())
			}
		}
	}
}

// Measuring the offered rate, a steady demand D = 1.5 x the HBD rate settles at w^H = p·B_H/D = 0.6
// within a few windows: T^H is w^H x D with no lag, so Eq. 3 is one step from anywhere.
func TestATEOfferedSteadyDemand(t *testing.T) {
	clk := clock.NewVirtual()
	cfg := Config{Host: 0, Ports: []PortConfig{{RateBps: 400e9}, {RateBps: 100e9}}, Seed: 5,
		PathSelect: SelectATE, ATE: ATEConfig{CapacityBytes: 100_000, Measure: ATEOffered}}
	links := []egress.Link{&tlink{clk: clk, to: sink{}, noTap: true}, &tlink{clk: clk, to: sink{}, noTap: true}}
	n, err := New(cfg, clk, links, &records.Log{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Config().ATE.Interval != 20*clock.Microsecond {
		t.Fatalf("offered window %v, want 10 base RTTs = 20 us", n.Config().ATE.Interval)
	}
	hbd, nd := []uint8{0, 3}, []uint8{1, 2}
	gap := clock.TxTime(10_000, 600e9) // 10 KB flows at 600 Gb/s = 1.5 x 400
	late := 0
	var before ATEStats
	for id := uint32(1); id <= 3000; id++ {
		if id == 1000 {
			before = n.ATE()
		}
		if err := n.StartFlow(Flow{ID: id, Dst: 9, Size: 10_000, Route: hbd, Paths: [][]uint8{hbd, nd}}); err != nil {
			t.Fatal(err)
		}
		if id >= 1000 && n.qps[id].port == 0 {
			late++
		}
		clk.RunUntil(clk.Now() + gap)
	}
	s := n.ATE()
	t.Logf("w^H %.3f after %d steps; HBD-first share of the last 2001 flows %.3f", s.W, s.Updates, float64(late)/2001)
	// Each window holds ~150 draws, so one window's w^H carries ~7% binomial noise; the share of flows
	// over many windows is the tight check.
	if math.Abs(s.W-0.6) > 0.1 || math.Abs(before.W-0.6) > 0.1 {
		t.Fatalf("w^H %.3f (at flow 1000: %.3f), want p·B_H/D = 0.6", s.W, before.W)
	}
	if f := float64(late) / 2001; math.Abs(f-0.6) > 0.05 {
		t.Fatalf("HBD-first share %.3f, want 0.6", f)
	}
}
