package portfc_test

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/deadlock"
	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/switchsw"
)

const ms = clock.Millisecond

// The NDC(2,1) ring h0 -s0- h1 -s3- h3 -s1- h2 -s2- h0, every flow the same way round.
var (
	twoHop  = []string{"{src: h0, dst: h1", "{src: h1, dst: h3", "{src: h3, dst: h2", "{src: h2, dst: h0"}
	fourHop = []string{"{src: h0, dst: h3, via: [h1]", "{src: h1, dst: h2, via: [h3]", "{src: h3, dst: h0, via: [h2]", "{src: h2, dst: h1, via: [h0]"}
	sixHop  = []string{"{src: h0, dst: h2, via: [h1, h3]", "{src: h1, dst: h0, via: [h3, h2]", "{src: h3, dst: h1, via: [h2, h0]", "{src: h2, dst: h3, via: [h0, h1]"}
)

func flows(name string, list []string, size, at string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  - kind: flows\n    name: %s\n    list:\n", name)
	for _, f := range list {
		fmt.Fprintf(&b, "      - %s, size: %s, at: %s}\n", f, size, at)
	}
	return b.String()
}

func paths(r *run, class string) []route.Path {
	var ps []route.Path
	for _, fp := range r.lab.Flows {
		if fp.Class == class {
			ps = append(ps, fp.Path)
		}
	}
	return ps
}

var _ = Describe("claim 1: the NDC(2,1) deadlock ring", Label("portfc"), func() {
	// The paper's ring (PortFC paper §V-F, Fig. 19): two-hop background flows from 0, four four-hop loop
	// flows from 1 ms. Flow sizes are ours (the paper gives none). Baselines run relay_pfc ingress
	// (fcKeys): under pass-through no device on this ring ever originates a pause (each switch has one
	// input and one output), so nothing could deadlock (docs/portfc.md §5).
	paperRing := flows("background", twoHop, "50MB", "0s") + flows("loop", fourHop, "20MB", "1ms")
	window := [2]clock.Time{3 * ms, 7 * ms}

	runRing := func(mode, workload string) *run {
		f := build("n: 2, k: 1", mode, workload, "20ms")
		f.StopOnDeadlock = false // keep running to show that nothing moves after detection
		return execute(f, window[0], window[1])
	}

	It("has a channel dependency cycle under PFC and none under PortFC or PFC* (static)", Label("smoke"), func() {
		f := build("n: 2, k: 1", "portfc", paperRing, "20ms")
		r := &run{lab: f.Lab}
		g, loop := f.Lab.Graph, paths(r, "loop")
		Expect(loop).To(HaveLen(4))
		pfc := deadlock.Analyze(g, loop, deadlock.PFC(3))
		Expect(pfc.Count()).To(Equal(1), "PFC: the ring")
		Expect(pfc.ByPriority[3][0]).To(HaveLen(8), pfc.ByPriority[3][0].String(g))
		Expect(deadlock.Analyze(g, loop, deadlock.PortFC()).HasCycle()).To(BeFalse())
		// PFC* as the engines tag (tag = switches crossed before the device): the relays' queues are at
		// tag 1, the senders' at tag 0, so P = 2 already breaks the ring.
		star2 := deadlock.Analyze(g, loop, deadlock.PFCStar(2, 3))
		star3 := deadlock.Analyze(g, loop, deadlock.PFCStar(3, 3))
		Expect(star2.HasCycle()).To(BeFalse(), "PFC* P=2")
		Expect(star3.HasCycle()).To(BeFalse(), "PFC* P=3")
		claims.add("1 static CBD, 4-hop ring", "PFC cycle, PortFC none",
			fmt.Sprintf("PFC %d cycle, PortFC 0, PFC* P=2 %d, P=3 %d", pfc.Count(), star2.Count(), star3.Count()), "yes")
	})

	It("PFC: the monitor names the cycle, loop and background throughput go to 0, the static check agrees", Label("smoke"), func() {
		r := runRing("pfc", paperRing)
		v := r.res.Deadlock
		claims.add("1 PFC deadlocks, 4-hop ring (paper's flows)", "throughput -> 0 (Fig. 19)",
			fmt.Sprintf("detected %v at %.2f ms, %d/%d flows done", v.Detected, v.At.Seconds()*1e3, r.sum.Flows.Completed, r.sum.Flows.Total),
			yes(v.Detected))
		Expect(v.Detected).To(BeTrue(), "no deadlock: %d pauses sent, %d/%d flows completed",
			r.sum.Pauses.Sent, r.sum.Flows.Completed, r.sum.Flows.Total)
		Expect(v.At).To(BeNumerically("<", window[0]))
		loopGP, bgGP := r.goodput("loop", window[0], window[1]), r.goodput("background", window[0], window[1])
		Expect(loopGP).To(BeZero())
		Expect(bgGP).To(BeZero())
		Expect(r.sum.Drops.Lossless).To(BeZero())
		all := append(paths(r, "loop"), paths(r, "background")...)
		st := deadlock.Analyze(r.lab.Graph, all, deadlock.PFC(3))
		Expect(st.HasCycle()).To(BeTrue())
		// The run-time cycle's switch queues are those of a static cycle.
		var sw []string
		for _, n := range v.Cycle {
			if strings.HasPrefix(n, "s") {
				sw = append(sw, n)
			}
		}
		Expect(sw).To(HaveLen(4))
		staticNames := strings.Join(st.Cycles()[0].Names(r.lab.Graph), " ")
		for _, n := range sw {
			Expect(staticNames).To(ContainSubstring(n))
		}
		claims.add("1 PFC throughput after the deadlock, 4-hop ring", "0 (Fig. 19)",
			fmt.Sprintf("loop %s, background %s (%v-%v)", gbps(loopGP), gbps(bgGP), window[0], window[1]), yes(loopGP == 0 && bgGP == 0))
	})

	It("PortFC and PFC* P=2: no deadlock, every flow finishes", Label("smoke"), func() {
		for _, mode := range []string{"portfc", "pfcstar"} {
			r := runRing(mode, paperRing)
			Expect(r.res.Deadlock.Detected).To(BeFalse(), "%s: %v", mode, r.res.Deadlock.Cycle)
			Expect(r.res.AllDone).To(BeTrue(), mode)
			Expect(r.sum.Drops.Lossless+r.sum.Drops.Lossy).To(BeZero(), mode)
			label := map[string]string{"portfc": "1 PortFC no deadlock, all flows done", "pfcstar": "1 PFC* P=2 no deadlock, all flows done"}[mode]
			claims.add(label, "deadlock-free", fmt.Sprintf("deadlock %v, %d/%d done, %d pauses",
				r.res.Deadlock.Detected, r.sum.Flows.Completed, r.sum.Flows.Total, r.sum.Pauses.Sent), yes(!r.res.Deadlock.Detected && r.res.AllDone))
		}
	})

	// Not smoke: fails on these engines. With PFC* deadlock-free (P=2), nothing on this ring congests
	// under either mode: each switch has one input and one output, and a PFC* relay queues relayed frames
	// at tag 1 apart from its own tag-0 frames (DRR between them), so no pause ever fires and there is no
	// HoLB for PortFC to remove. Both modes share every link three ways (docs/portfc.md §8).
	It("background throughput under PortFC is >= 1.5x PFC* (paper ~1.9x)", func() {
		p, s := runRing("portfc", paperRing), runRing("pfcstar", paperRing)
		Expect(s.res.Deadlock.Detected).To(BeFalse(), "the comparison is about HoLB, not deadlock")
		pg, sg := p.goodput("background", window[0], window[1]), s.goodput("background", window[0], window[1])
		Expect(pg).To(BeNumerically(">", 0))
		ok := pg >= 1.5*sg
		claims.add("1 background throughput PortFC / PFC*, 4-hop ring", "~1.9x (Fig. 19)",
			fmt.Sprintf("%s / %s = %.2fx (pauses %d / %d)", gbps(pg), gbps(sg), pg/sg, p.sum.Pauses.Sent, s.sum.Pauses.Sent), yes(ok))
		Expect(ok).To(BeTrue(), "PortFC %s vs PFC* %s", gbps(pg), gbps(sg))
	})

	// Our variant with a longer loop: four-hop background flows from 0 and six-hop loop flows (three
	// quarters of the ring, not minimal on NDC(n,1)) from 1 ms. PFC deadlocks here too.
	It("PFC also deadlocks the six-hop ring variant", func() {
		ring6 := flows("background", fourHop, "50MB", "0s") + flows("loop", sixHop, "20MB", "1ms")
		r := runRing("pfc", ring6)
		v := r.res.Deadlock
		claims.add("1 PFC deadlocks, ring variant (6-hop loop)", "throughput -> 0 (Fig. 19)",
			fmt.Sprintf("detected %v at %.2f ms", v.Detected, v.At.Seconds()*1e3), yes(v.Detected))
		Expect(v.Detected).To(BeTrue())
		Expect(r.goodput("loop", window[0], window[1])).To(BeZero())
	})
})

var _ = Describe("claims 2, 3, 5: incast under PortFC", Label("portfc"), func() {
	cases := []struct {
		name, topo, recv string
		senders          int
		smoke            bool
	}{
		{"NDC(4,1) 8->1", "n: 4, k: 1", "h0", 8, true},
		{"NDC(8,1) 32->1", "n: 8, k: 1", "h0", 32, false},
	}
	for _, c := range cases {
		labels := Labels{}
		if c.smoke {
			labels = Labels{"smoke"}
		}
		It("is lossless and retransmission-free, pauses stay within 3 hops, queues stay short: "+c.name, labels, func() {
			w := fmt.Sprintf("  - {kind: incast, senders: %d, size: 1MB, at: 0s, receiver: %s}\n", c.senders, c.recv)
			r := execute(build(c.topo, "portfc", w, "50ms"))
			Expect(r.res.AllDone).To(BeTrue())
			drops, rtx := r.sum.Drops.Lossless+r.sum.Drops.Lossy, r.retransmits()
			claims.add("2 lossless, "+c.name, "0 drops, 0 retransmissions",
				fmt.Sprintf("%d drops, %d retransmissions", drops, rtx), yes(drops == 0 && rtx == 0))
			Expect(drops).To(BeZero())
			Expect(rtx).To(BeZero())
			Expect(r.fab.Log.Violations).To(BeEmpty())

			// Claim 3: switches originate, nodes only relay (once), switches never relay.
			var sent, hostOrig, switchRelay int
			maxHops := 0
			for _, p := range r.fab.Log.Pauses {
				if !p.Sent || !p.On {
					continue
				}
				sent++
				maxHops = max(maxHops, int(p.Hops))
				if p.Kind == records.Host && p.Hops == 0 {
					hostOrig++
				}
				if p.Kind == records.Switch && p.Hops > 0 {
					switchRelay++
				}
			}
			Expect(sent).To(BeNumerically(">", 0), "no pause was sent: the incast did not exercise PortFC")
			// A chain is B (switch) -> relayed once by a node -> A (switch) -> a (node): at most one relay
			// per frame and only switches originating keeps every chain within 3 NIC hops.
			bounded := hostOrig == 0 && switchRelay == 0 && maxHops <= 1
			claims.add("3 pause propagation, "+c.name, "<= 3 hops; nodes never originate",
				fmt.Sprintf("%d pauses, max relays %d, node-originated %d", sent, maxHops, hostOrig), yes(bounded))
			Expect(hostOrig).To(BeZero())
			Expect(switchRelay).To(BeZero())
			Expect(maxHops).To(BeNumerically("<=", 1))

		})

		// Claim 5: the bound is lab.PortFCQueueBound (X_off + (n-1) x 2 x PFC headroom: the relay queue
		// is never paused, so a DDQ pause needs a second link to stop what feeds it; docs/portfc.md §3).
		It("keeps every switch queue within X_off + (n-1) x 2 x headroom: "+c.name, labels, func() {
			w := fmt.Sprintf("  - {kind: incast, senders: %d, size: 1MB, at: 0s, receiver: %s}\n", c.senders, c.recv)
			r := execute(build(c.topo, "portfc", w, "50ms"))
			sw := r.lab.Switches[0].Config
			xoff := 6 * sw.Ports[0].BDP()
			head := switchsw.Headroom(sw.Ports[0].RateBps, sw.Ports[0].Delay, sw.MTU)
			bound := r.lab.PortFCQueueBound(0)
			Expect(bound).To(Equal(xoff + int64(len(sw.Ports)-1)*2*head))
			mq := r.maxSwitchQueue()
			claims.add("5 max switch queue PortFC, "+c.name, "<= X_off + headroom (Fig. 9)",
				fmt.Sprintf("%d B (bound %d = %d + %d x 2 x %d)", mq, bound, xoff, len(sw.Ports)-1, head), yes(int64(mq) <= bound))
			Expect(int64(mq)).To(BeNumerically("<=", bound))
		})
	}

	It("without flow control the same 32->1 incast queue reaches MB levels", func() {
		w := "  - {kind: incast, senders: 32, size: 1MB, at: 0s, receiver: h0}\n"
		r := execute(build("n: 8, k: 1", "lossy", w, "50ms"))
		mq := r.maxSwitchQueue()
		claims.add("5 max switch queue lossy, NDC(8,1) 32->1", "MB levels, loss (Fig. 9)",
			fmt.Sprintf("%d B, %d drops", mq, r.sum.Drops.Lossy), yes(mq >= 1000000))
		Expect(mq).To(BeNumerically(">=", 1000000))
	})
})

var _ = Describe("claim 4: victim isolation", Label("portfc"), func() {
	// NDC(4,1): 8 incast senders to h0 take four-hop paths; h5 and h6 relay through h4 and s4 (layer
	// first). The victim h7 -> h8 shares s1's port toward h4 and h4's relay with them, then leaves s4
	// toward the idle h8.
	incast := "  - {kind: incast, senders: 8, size: 1MB, at: 0s, receiver: h0}\n"
	incastList := "  - kind: flows\n    name: incast\n    list:\n"
	for _, h := range []string{"h5", "h6", "h9", "h10", "h11", "h13", "h14", "h15"} {
		incastList += fmt.Sprintf("      - {src: %s, dst: h0, size: 1MB, at: 0s}\n", h)
	}
	_ = incast
	victim := "  - kind: flows\n    name: victim\n    list:\n      - {src: h7, dst: h8, size: 2MB, at: 0s, via: [h4]}\n"

	victimTput := func(r *run) float64 {
		for _, fp := range r.lab.Flows {
			if fp.Class == "victim" {
				fct := r.fct(fp.ID)
				Expect(fct).To(BeNumerically(">", 0), "victim did not finish")
				return float64(fp.Size) * 8 / fct.Seconds()
			}
		}
		Fail("no victim flow")
		return 0
	}

	// Not smoke: fails on these engines, and the engines follow the paper's algorithms here (the next
	// spec pins down why; docs/portfc.md §8). A known failure must not gate CI. The victim shares s1's
	// link toward h4 with two incast flows whose bottleneck (s4 toward h0, 8 senders) leaves them 25 Gb/s
	// there, so its max-min fair share is 75% of the line; the suite asks for 90% of its alone rate.
	It("keeps >= 90% of its alone throughput under PortFC, less under PFC", func() {
		alone := victimTput(execute(build("n: 4, k: 1", "portfc", victim, "50ms")))
		p := victimTput(execute(build("n: 4, k: 1", "portfc", incastList+victim, "50ms")))
		aloneP := victimTput(execute(build("n: 4, k: 1", "pfc", victim, "50ms")))
		q := victimTput(execute(build("n: 4, k: 1", "pfc", incastList+victim, "50ms")))
		// Max-min: h5 and h6 get 2 of the 8 incast senders' shares of s4's port toward h0 on s1's link.
		fair := 1 - 2.0/8
		claims.add("4 victim next to 8->1 incast, PortFC", ">= fair share (Fig. 4); 90% asked",
			fmt.Sprintf("%s of %s alone (%.0f%%; fair share %.0f%%)", gbps(p), gbps(alone), 100*p/alone, 100*fair), yes(p >= 0.9*alone))
		claims.add("4 victim next to 8->1 incast, PFC", "victim paused (Fig. 4)",
			fmt.Sprintf("%s of %s alone (%.0f%%)", gbps(q), gbps(aloneP), 100*q/aloneP), yes(q < 0.9*aloneP && q < p))
		Expect(p).To(BeNumerically(">=", 0.9*alone))
		Expect(q).To(BeNumerically("<", 0.9*aloneP))
		Expect(q).To(BeNumerically("<", p))
	})

	// Why the victim loses under PortFC, as the paper's algorithms prescribe: the victim has its own IHFQ
	// at s1 (it leaves s4 toward h8, the incast toward h0), and Algorithm 4 pauses only the incast's IHFQ.
	// But Algorithm 1 compares the SUM of a port's IHFQs with X_off, and the incast's paused IHFQ alone
	// holds about X_off, so s1 keeps sending IHFQ-class pauses for its port toward h4; Algorithm 3 then
	// pauses a[that port] at every node on s1, and the victim's source h7 holds the victim in exactly that
	// queue (node four-hop queues are indexed by the first switch's port, not the final one).
	It("PortFC pauses the victim at its source through the IHFQ sum (Algorithms 1 and 3)", Label("smoke"), func() {
		f := build("n: 4, k: 1", "portfc", incastList+victim, "50ms")
		g := f.Lab.Graph
		var vp route.Path
		var inc []route.Path
		for _, fp := range f.Lab.Flows {
			if fp.Class == "victim" {
				vp = fp.Path
			}
		}
		for _, fp := range f.Lab.Flows {
			if fp.Class == "incast" && fp.Path.Nodes[1] == vp.Nodes[1] {
				inc = append(inc, fp.Path)
			}
		}
		Expect(inc).To(HaveLen(2), "h5 and h6 cross the victim's first switch")
		Expect(g.Nodes[vp.Nodes[2]].Name).To(Equal("h4"))
		src, sw, swPort := vp.Nodes[0], vp.Nodes[1], int(vp.Ports[1])
		vq, _ := deadlock.PortFC()(g, vp, 1)
		iq, _ := deadlock.PortFC()(g, inc[0], 1)
		Expect(vq.Queue).NotTo(Equal(iq.Queue), "victim and incast have their own IHFQs at %s", g.Nodes[sw].Name)
		// Sample every microsecond while the victim runs.
		var pausedSamples, samples int
		var incastBytes, victimBytes int64
		var tick func()
		tick = func() {
			vid := f.Lab.Flows[len(f.Lab.Flows)-1].ID
			if _, ok := f.NICs[src].FlowState(vid); !ok {
				return
			}
			samples++
			port := f.Switches[sw].Port(swPort)
			if f.NICs[src].Port(int(vp.Ports[0])).Paused(0) {
				pausedSamples++
				incastBytes += int64(port.Bytes(iq.Queue))
				victimBytes += int64(port.Bytes(vq.Queue))
			}
			f.Clock.AfterFunc(clock.Microsecond, tick)
		}
		f.Clock.AfterFunc(0, tick)
		r := execute(f)
		Expect(f.Lab.Flows[len(f.Lab.Flows)-1].Class).To(Equal("victim"))
		// Every pause the victim's source received is IHFQ-class from s1 (node queue a[0..n-2], on the
		// port toward s1), none relayed (DDQ-class pauses would pause b-queues).
		var got int
		for _, p := range r.fab.Log.Pauses {
			if int(p.Device) == src && !p.Sent && p.On {
				got++
				Expect(int(p.Port)).To(Equal(int(vp.Ports[0])))
				Expect(int(p.Queue)).To(BeNumerically("<", 3), "an a-queue of NDC(4,1)")
			}
		}
		Expect(got).To(BeNumerically(">", 0))
		frac := float64(pausedSamples) / float64(samples)
		share := float64(incastBytes) / float64(incastBytes+victimBytes)
		claims.add("4 why: victim's source queue paused by the IHFQ sum", "HoLB-free (§III-F)",
			fmt.Sprintf("h7 a[0] paused %.0f%% of the victim's life; incast IHFQ %.0f%% of the sum then", 100*frac, 100*share),
			"paper's Alg 1+3")
		Expect(frac).To(BeNumerically(">", 0.3))
		Expect(share).To(BeNumerically(">", 0.8), "the incast's IHFQ, not the victim's, fills the sum")
	})
})
