package routing_test

import (
	"context"
	"fmt"
	"math"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/report"
)

// railSpec is the PortFC paper's Rail-only evaluation setting (§V-E): NDC(4,1) with the high-bandwidth
// domain (layer 0, inside a server) at 160 Gb/s and the rails at 100 Gb/s, PortFC, lossless transport
// (§V-A's 1 us links, 5 MB buffers, XOFF/XON 6/4 BDP). The paper does not say whether its §V-E runs
// used ATE; here ATE is compared with static bcube routing (HBD first for every 4-hop flow) on the same
// fabric. %s slots: seed, routing block, workload.
const railSpec = `
name: ate-rail
backend: virtual
seed: %d
topology: {family: ndc, n: 4, k: 1, rail: true, hbd_rate: 160Gbps, link: {rate: 100Gbps, delay: 1us}}
switch: {buffer: 5MB, flow_control: portfc, xoff: 6bdp, xon: 4bdp}
host: {transport: lossless, mtu: 1000}
routing: {%s}
workload: [%s]
duration: 50ms
`

type ateRun struct {
	flows, done       int
	fctAvg, fctP99    float64 // seconds
	end               float64 // seconds: the last completion
	hbdFirst, ndFirst int
	updates           int
	meanW             float64 // w^H at the end, averaged over the NICs that chose
	tOverPB           float64 // geometric mean of T^H / (p·B_H) over all Eq. 3 steps
	hbdBytes, rail    uint64  // bytes over all HBD and all rail links
	hotHBDShare       float64 // share of the hot receivers' arriving bytes that came over their HBD link
	hot               bool
	// Host h's window (runATEWindow): bit/s it sent on its HBD and rail ports, and the bit/s of flows
	// it was asked to start (its demand D).
	hbdRate, ndRate, demand float64
}

func runATE(seed int, routing, workload string, hot []int) ateRun {
	return runATEWindow(seed, routing, workload, -1, 0, 0, hot...)
}

// runATEWindow is runATE that also measures host h's two egress rates (HBD port, rail port) and its
// demand between from and to (h < 0: not).
func runATEWindow(seed int, routing, workload string, h int, from, to clock.Time, hot ...int) ateRun {
	y := fmt.Sprintf(railSpec, seed, routing, workload)
	l, f := fabric(y)
	var sent [2][2]uint64 // [at from, at to][port]
	if h >= 0 {
		nic := f.NICs[l.Graph.Hosts[h]]
		for i, t := range []clock.Time{from, to} {
			f.Clock.AfterFunc(t, func() { sent[i] = [2]uint64{nic.Port(0).SentBytes(), nic.Port(1).SentBytes()} })
		}
	}
	res := f.Run(context.Background())
	Expect(res.Deadlock.Detected).To(BeFalse())
	sum := report.Summarize(f.Log, report.Meta{Dilation: 1, Duration: res.End, Graph: l.Graph})
	g := l.Graph
	r := ateRun{flows: sum.Flows.Total, done: sum.Flows.Completed, fctAvg: sum.FCT.Avg, fctP99: sum.FCT.P99, end: res.End.Seconds()}
	Expect(sum.Drops.Lossless).To(BeZero(), "PortFC is lossless")
	var logT float64
	chose := 0
	for _, n := range g.Hosts {
		nic := f.NICs[n]
		s := nic.ATE()
		r.hbdFirst += s.HBDFirst
		r.ndFirst += s.NDFirst
		r.updates += s.Updates
		if s.HBDFirst+s.NDFirst > 0 {
			r.meanW += s.W
			chose++
		}
		a := nic.Config().ATE
		pb := a.P * float64(a.CapacityBytes)
		if a.Measure == "offered" {
			pb = a.P * nic.Config().Ports[a.HBDPort].RateBps
		}
		for _, pt := range s.Trace {
			logT += math.Log(pt.T / pb)
		}
	}
	if chose > 0 {
		r.meanW /= float64(chose)
	}
	if r.updates > 0 {
		r.tOverPB = math.Exp(logT / float64(r.updates))
	}
	// Every link's bytes by class, from both ends' egress ports.
	for _, n := range append(append([]int(nil), g.Hosts...), g.Switches...) {
		for p := range g.Nodes[n].Ports {
			var b uint64
			if nic, ok := f.NICs[n]; ok {
				b = nic.Port(p).SentBytes()
			} else {
				b = f.Switches[n].Port(p).SentBytes()
			}
			switch g.LinkAt(n, p).Class {
			case "hbd":
				r.hbdBytes += b
			case "rail":
				r.rail += b
			}
		}
	}
	// What reached the hot receivers, by the link it arrived on (the switch port facing them).
	var hb, all uint64
	for _, h := range hot {
		n := g.Hosts[h]
		for p := range g.Nodes[n].Ports {
			peer := g.Peer(n, p)
			b := f.Switches[peer.Node].Port(peer.Port).SentBytes()
			all += b
			if g.LinkAt(n, p).Class == "hbd" {
				hb += b
			}
		}
	}
	if all > 0 {
		r.hotHBDShare, r.hot = float64(hb)/float64(all), true
	}
	if h < 0 {
		return r
	}
	Expect(res.End).To(BeNumerically(">", to), "the run ended before the window closed")
	w := (to - from).Seconds()
	r.hbdRate, r.ndRate = float64(sent[1][0]-sent[0][0])*8/w, float64(sent[1][1]-sent[0][1])*8/w
	for _, fp := range l.Flows {
		if fp.Src == h && fp.At >= from && fp.At < to {
			r.demand += float64(fp.Size) * 8 / w
		}
	}
	return r
}

func (r ateRun) String() string {
	s := fmt.Sprintf("%d/%d flows, FCT avg %.1f us p99 %.1f us, last done %.0f us", r.done, r.flows, r.fctAvg*1e6, r.fctP99*1e6, r.end*1e6)
	if r.hbdFirst+r.ndFirst > 0 {
		s += fmt.Sprintf("; 4-hop flows HBD-first %d ND-first %d (%.0f%% moved), w^H at end %.2f, %d Eq. 3 steps, T^H/(p·B_H) geo-mean %.2f",
			r.hbdFirst, r.ndFirst, 100*float64(r.ndFirst)/float64(r.hbdFirst+r.ndFirst), r.meanW, r.updates, r.tOverPB)
	}
	s += fmt.Sprintf("; HBD links %.1f MB, rail links %.1f MB", float64(r.hbdBytes)/1e6, float64(r.rail)/1e6)
	if r.hot {
		s += fmt.Sprintf("; hot receivers got %.0f%% over their HBD link", 100*r.hotHBDShare)
	}
	return s
}

var _ = Describe("ATE (PortFC Alg. 5) on a Rail-only NDC(4,1), HBD 160 Gb/s, rails 100 Gb/s", Label("routing"), func() {
	// ate's three readings of T^H (nodes/ate.go): bytes in flight (the default), bytes assigned and not
	// yet acknowledged (Alg. 5's loop), and the rate of bytes put on the HBD over a window.
	algs := []struct{ name, routing string }{
		{"bcube", "algorithm: bcube"},
		{"ate", "algorithm: ate"}, // p 0.9
		{"ate assigned", "algorithm: ate, measure: assigned"},
		{"ate offered", "algorithm: ate, measure: offered"},
	}

	It("moves 4-hop flows ND-first under skewed (many-to-few) Poisson load and lowers the average FCT versus bcube", func() {
		// MoE dispatch's shape without its barriers: every host sends to two hot experts (h5, h10, in
		// different servers and rails), Poisson arrivals of Hadoop-sized flows at 0.5 of a 100 Gb/s
		// link per host. With bcube every 4-hop flow arrives over the receiver's rail link (HBD first,
		// rail last), so the hot receivers' rail links are the bottleneck and their HBD links idle.
		hot := []int{5, 10}
		var pairs []string
		for s := 0; s < 16; s++ {
			for _, d := range hot {
				if s != d {
					pairs = append(pairs, fmt.Sprintf("{src: h%d, dst: h%d}", s, d))
				}
			}
		}
		wl := fmt.Sprintf("{kind: poisson, cdf: hadoop, load: 0.5, duration: 2ms, pairs: [%s]}", strings.Join(pairs, ", "))
		red := map[string][]float64{}
		minShift := map[string]float64{"ate": 0, "ate assigned": 0.3, "ate offered": 0}
		for seed := 1; seed <= 2; seed++ {
			res := map[string]ateRun{}
			for _, a := range algs {
				r := runATE(seed, a.routing, wl, hot)
				Expect(r.done).To(Equal(r.flows), "%s seed %d: %s", a.name, seed, r)
				res[a.name] = r
				AddReportEntry(fmt.Sprintf("many-to-few seed %d %s", seed, a.name), r.String())
			}
			b := res["bcube"]
			for _, a := range algs[1:] {
				r := res[a.name]
				red[a.name] = append(red[a.name], 1-r.fctAvg/b.fctAvg)
				// ATE moves which node's HBD a 4-hop flow crosses, not how many HBD and rail links it
				// uses: both paths are two HBD and two rail link traversals, so the byte totals per class
				// must not move.
				Expect(float64(r.hbdBytes)).To(BeNumerically("~", float64(b.hbdBytes), 0.01*float64(b.hbdBytes)), a.name)
				Expect(float64(r.rail)).To(BeNumerically("~", float64(b.rail), 0.01*float64(b.rail)), a.name)
				// The mechanism: ND-first flows arrive over the receiver's HBD link. Reading bytes in
				// flight, ATE moves few flows (it acts on peaks only: T^H is mostly below p·B_H); counting
				// assigned bytes it moves most of them.
				Expect(r.ndFirst).To(BeNumerically(">", 0), a.name)
				Expect(r.hotHBDShare).To(BeNumerically(">", b.hotHBDShare+minShift[a.name]), "%s seed %d: %s vs bcube %s", a.name, seed, r, b)
				Expect(r.fctAvg).To(BeNumerically("<", b.fctAvg), "%s seed %d: avg FCT not below bcube's: %s vs %s", a.name, seed, r, b)
			}
		}
		mean := func(xs []float64) float64 {
			s := 0.0
			for _, x := range xs {
				s += x
			}
			return s / float64(len(xs))
		}
		AddReportEntry("many-to-few avg FCT reduction vs bcube (seeds 1-2)", fmt.Sprintf("ate (in flight) %.1f%% %v; ate assigned %.1f%% %v; ate offered %.1f%% %v",
			100*mean(red["ate"]), pct(red["ate"]), 100*mean(red["ate assigned"]), pct(red["ate assigned"]), 100*mean(red["ate offered"]), pct(red["ate offered"])))
		Expect(mean(red["ate"])).To(BeNumerically(">=", 0.10))
		Expect(mean(red["ate assigned"])).To(BeNumerically(">=", 0.40))
		Expect(mean(red["ate offered"])).To(BeNumerically(">=", 0.05))
	})

	It("holds one node's HBD first hop near p of its rate and sends the overflow ND-first (demand ~1.2 x B_H)", func() {
		// The paper's convergence claim (§III-F, Eq. 3): with a demand D above p·B_H the HBD settles at
		// p·B_H and D - p·B_H goes to the ND. h0 alone offers about 1.2 x 160 Gb/s (two Poisson streams
		// at 0.96 of 100 Gb/s) to the nine hosts it reaches in 4 hops, so nothing else loads its ports.
		// bcube sends all of it HBD first: the HBD port is the bottleneck and h0's backlog grows.
		var pairs []string
		for d := 0; d < 16; d++ {
			if d%4 != 0 && d/4 != 0 {
				pairs = append(pairs, fmt.Sprintf("{src: h0, dst: h%d}", d))
			}
		}
		from, to := clock.Millisecond, 3*clock.Millisecond
		for _, sizes := range []string{
			// Light-tailed sizes (Pareto shape 8 around 50 KB, capped at 200 KB): a demand that is
			// steady at the scale of ATE's update period, the situation Eq. 3's analysis assumes.
			"cdf: pareto, shape: 8, mean: 50KB, cap: 200KB",
			// Hadoop: most bytes in a few multi-MB flows that hold the HBD for milliseconds.
			"cdf: hadoop",
		} {
			one := fmt.Sprintf("{kind: poisson, %s, load: 0.96, duration: 3ms, pairs: [%s]}", sizes, strings.Join(pairs, ", "))
			wl := one + ", " + strings.Replace(one, "{kind: poisson,", "{kind: poisson, name: more,", 1)
			res := map[string]ateRun{}
			for _, a := range algs {
				r := runATEWindow(1, a.routing, wl, 0, from, to)
				Expect(r.done).To(Equal(r.flows), "%s: %s", a.name, r)
				res[a.name] = r
				AddReportEntry(fmt.Sprintf("one node, %s, %s", sizes, a.name), fmt.Sprintf("%s; over %v-%v h0 offers %.1f Gb/s (%.2f x B_H), sends %.1f Gb/s on its HBD port (%.2f of 160) and %.1f Gb/s on its rail port",
					r, from, to, r.demand/1e9, r.demand/160e9, r.hbdRate/1e9, r.hbdRate/160e9, r.ndRate/1e9))
			}
			if !strings.Contains(sizes, "pareto") {
				// Reported, not asserted (see the entries): here T^H stays at or above p·B_H while
				// any multi-MB flow holds the HBD, so Eq. 3, an integrator stepped once per RTT,
				// drives w^H to about 0 within a few hundred microseconds and, with no HBD-only flows
				// at h0, the T^H = 0 skip rule keeps it there: ATE then sends everything on the rail
				// and is slower than bcube. That is a property of Eq. 3 with this reading of T^H.
				continue
			}
			b, in := res["bcube"], res["ate"]
			Expect(b.demand).To(BeNumerically(">", 1.15*160e9), "the demand must exceed B_H, not only p·B_H")
			Expect(b.hbdRate).To(BeNumerically(">", 0.99*160e9), "bcube: the HBD port is the bottleneck")
			Expect(b.ndRate).To(BeNumerically("<", 1e9), "bcube: the rail port is idle")
			// ATE (bytes in flight, the default): the HBD near p·B_H, the rest on the rail.
			Expect(in.hbdRate/160e9).To(BeNumerically("~", 0.9, 0.05), "ate: %s", in)
			Expect(in.ndRate).To(BeNumerically("~", in.demand-in.hbdRate, 0.1*in.demand), "ate: the overflow goes to the ND")
			Expect(in.tOverPB).To(BeNumerically("~", 1, 0.2), "ate: T^H should sit at p·B_H")
			Expect(in.fctAvg).To(BeNumerically("<", 0.2*b.fctAvg), "ate: no backlog, bcube's grows")
		}
	})

	It("cannot act at MoE barriers when T^H is bytes in flight: every draw happens before anything is sent", Label("smoke"), func() {
		// The paper's §V-E workload: per layer, dispatch to Zipf-skewed experts, combine after the whole
		// dispatch, the next layer after the whole combine (traffic.MixtureOfExperts). Every flow starts
		// at a barrier, when the NIC has nothing in flight.
		wl := "{kind: moe, experts: 16, top_k: 2, tokens: 1024, token_size: 4KB, zipf: 1.0, layers: 2}"
		res := map[string]ateRun{}
		for _, a := range algs {
			r := runATE(1, a.routing, wl, nil)
			Expect(r.done).To(Equal(r.flows), "%s: %s", a.name, r)
			res[a.name] = r
			AddReportEntry("moe "+a.name, r.String())
		}
		b, in, as, of := res["bcube"], res["ate"], res["ate assigned"], res["ate offered"]
		Expect(in.ndFirst).To(BeZero(), "in flight: %s", in)
		Expect(in.hbdFirst).To(BeNumerically(">", 0))
		Expect(in.fctAvg).To(Equal(b.fctAvg), "ate that moves nothing must be bcube exactly")
		Expect(in.end).To(Equal(b.end))
		// Counting assigned bytes, ATE does act inside the barrier's burst (it fills the HBD to about
		// p·B_H of outstanding bytes and sends the rest ND-first); whether that helps is measured, not
		// asserted: it did not here (see the report entries).
		Expect(as.ndFirst).To(BeNumerically(">", 0), "assigned: %s", as)
		AddReportEntry("moe avg FCT vs bcube", fmt.Sprintf("ate (in flight) %+.1f%%, ate assigned %+.1f%%, ate offered %+.1f%%; last completion %+.1f%% / %+.1f%% / %+.1f%%",
			100*(in.fctAvg/b.fctAvg-1), 100*(as.fctAvg/b.fctAvg-1), 100*(of.fctAvg/b.fctAvg-1), 100*(in.end/b.end-1), 100*(as.end/b.end-1), 100*(of.end/b.end-1)))
	})
})

func pct(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.1f%%", 100*x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
