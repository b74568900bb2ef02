package portfc_test

import (
	"context"
	"fmt"
	"math"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/harness/netns"
	_ "github.com/fabriclab/fabriclab/harness/netns/agent" // the netns spec re-executes this test binary as its agents
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/deadlock"
	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/report"
)

// PortFC on NDC(4,2): k = 2, three-port nodes, paths of up to six hops (docs/portfc.md §9). The quick
// specs are smoke; the rest run with
//
//	ginkgo --label-filter=ndc42 ./suites/portfc
//
// (the netns one needs root, and its own label: --label-filter='ndc42 && !netns' skips it).
var _ = Describe("PortFC on NDC(4,2)", Label("portfc", "ndc42"), func() {
	const topo42 = "n: 4, k: 2"
	// 27 of the 63 other hosts differ from h0 in all three digits: six-hop paths whose middle switch
	// takes relayed frames into its IHFQs, the case k = 1 never has.
	incast27 := "  - {kind: incast, name: incast, senders: 27, size: 1MB, at: 0s, receiver: h0}\n"

	// relayedIHFQ counts the IHFQ-class frames nodes relayed (node Sent records about a queue below
	// n-1), and how many went up a layer (a node's port l faces its layer-l switch).
	relayedIHFQ := func(r *run) (down, up int) {
		// A node records the frame it received (one record per queue it pauses) just before the copies it
		// relays, so the last received record of the node names the port a relayed copy came in by.
		lastIn := map[int32]int{}
		for _, p := range r.fab.Log.Pauses {
			if p.Kind != records.Host {
				continue
			}
			if !p.Sent {
				lastIn[p.Device] = int(p.Port)
				continue
			}
			if p.Queue < 3 {
				if int(p.Port) < lastIn[p.Device] {
					down++
				} else {
					up++
				}
			}
		}
		return down, up
	}

	It("has n+1 = 5 queues per switch port, (k+1)(n-1)+2 = 11 per node port, and no channel dependency cycle (static)", Label("smoke"), func() {
		f := build(topo42, "portfc", incast27, "1ms")
		l := f.Lab
		Expect(l.Switches[0].Config.DataQueues + 1).To(Equal(5))
		Expect(f.NICs[0].Port(0).NumQueues()).To(Equal(11))
		Expect(l.Hosts[0].Config.PortFC).To(Equal(nodes.PortFCConfig{N: 4, Self: []int{0, 0, 0}}))
		g := l.Graph
		var all, parallel []route.Path
		for a := range g.Hosts {
			for b := range g.Hosts {
				if a == b {
					continue
				}
				ps, err := l.Router.Paths(a, b)
				Expect(err).NotTo(HaveOccurred())
				all = append(all, ps[0])
				parallel = append(parallel, ps...)
			}
		}
		Expect(deadlock.Analyze(g, all, deadlock.PortFC()).HasCycle()).To(BeFalse(), "the lab's routes")
		Expect(deadlock.Analyze(g, parallel, deadlock.PortFC()).HasCycle()).To(BeFalse(), "BCube's parallel paths")
		// The same paths do hold cycles under PFC (one queue per priority): the check can find them.
		Expect(deadlock.Analyze(g, parallel, deadlock.PFC(3)).HasCycle()).To(BeTrue(), "PFC, BCube's parallel paths")
		claims.add("9 static CBD, NDC(4,2) all pairs", "deadlock-free (§III-F)",
			"PortFC: no cycle (lowest-first and parallel paths); PFC: cycles", "yes")
	})

	It("keeps a 27->1 incast of six-hop flows lossless, retransmission-free and deadlock-free, relaying IHFQ pauses down only", Label("smoke"), func() {
		r := execute(build(topo42, "portfc", incast27, "50ms"))
		Expect(r.res.AllDone).To(BeTrue())
		Expect(r.res.Deadlock.Detected).To(BeFalse())
		Expect(r.sum.Drops.Lossless + r.sum.Drops.Lossy).To(BeZero())
		Expect(r.retransmits()).To(BeZero())
		Expect(r.fab.Log.Violations).To(BeEmpty())
		down, up := relayedIHFQ(r)
		Expect(down).To(BeNumerically(">", 0), "no IHFQ-class frame was relayed: the incast did not exercise k > 1")
		Expect(up).To(BeZero())
		claims.add("9 NDC(4,2) 27->1 incast (six-hop)", "lossless, deadlock-free",
			fmt.Sprintf("%d/%d done, %d drops, %d pauses, %d IHFQ relays (all down)", r.sum.Flows.Completed, r.sum.Flows.Total,
				r.sum.Drops.Lossless, r.sum.Pauses.Sent, down), "yes")
	})

	// Seed 1 of the shipped experiment is the case that tells the readings apart (docs/portfc.md §9):
	// without IHFQ relays the middle switches overflow, relaying them up as well deadlocks.
	It("is lossless and deadlock-free on WebSearch at load 0.6 plus a 63->1 incast, over 5 seeds", func() {
		sums := runSeeds("portfc-ndc42", "portfc")
		var pauses float64
		for i, s := range sums {
			Expect(s.Deadlock.Detected).To(BeFalse(), "seed %d: %v", i+1, s.Deadlock.Cycle)
			Expect(s.Flows.Completed).To(Equal(s.Flows.Total), "seed %d", i+1)
			Expect(s.Drops.Lossless+s.Drops.Lossy).To(BeZero(), "seed %d", i+1)
			Expect(s.Retransmissions).To(BeZero(), "seed %d", i+1)
			pauses += float64(s.Pauses.Sent)
		}
		claims.add("9 NDC(4,2) WebSearch 0.6 + 63->1, 5 seeds", "lossless, deadlock-free",
			fmt.Sprintf("0 drops, 0 deadlocks, all flows done; %.0f pauses per seed", pauses/float64(len(sums))), "yes")
	})

	It("runs the 27->1 incast on the netns backend exactly as on the virtual one", Label("netns"), func() {
		if os.Geteuid() != 0 {
			Skip("the netns backend needs root: it creates network namespaces")
		}
		y := fmt.Sprintf(paper, topo42, "portfc", "  - {kind: incast, name: incast, senders: 27, size: 200KB, at: 0s, receiver: h0}\n", "5ms")
		s, err := spec.Parse([]byte(y))
		Expect(err).NotTo(HaveOccurred())
		s.Backend, s.Dilation = "netns", 5000
		l, err := lab.Build(s)
		Expect(err).NotTo(HaveOccurred())
		log, res, err := netns.Run(context.Background(), l, netns.RunOptions{Name: "portfc-ndc42"})
		Expect(err).NotTo(HaveOccurred())
		fid := res.Fidelity
		ns := report.Summarize(log, report.Meta{Dilation: res.Dilation, Duration: res.End, Graph: l.Graph, Fidelity: &fid, Deadlock: res.Deadlock})
		v := execute(build(topo42, "portfc", "  - {kind: incast, name: incast, senders: 27, size: 200KB, at: 0s, receiver: h0}\n", "5ms"))
		GinkgoWriter.Printf("netns NDC(4,2): %d/%d done, %d pauses (virtual %d), FCT avg %.6g s (virtual %.6g s); fidelity %v: %s\n",
			ns.Flows.Completed, ns.Flows.Total, ns.Pauses.Sent, v.sum.Pauses.Sent, ns.FCT.Avg, v.sum.FCT.Avg, fid.Faithful, fid.Reason)
		Expect(ns.Deadlock.Detected).To(BeFalse())
		Expect(ns.Flows.Completed).To(Equal(27))
		Expect(ns.Drops.Lossless + ns.Drops.Lossy).To(BeZero())
		Expect(ns.Retransmissions).To(BeZero())
		Expect(ns.Pauses.Sent).To(BeNumerically(">", 0))
		// The agents take every frame when due (the batched data path), so a busy machine makes the run
		// slower, not different: the same pauses and FCTs as the virtual backend.
		Expect(ns.Pauses.Sent).To(Equal(v.sum.Pauses.Sent))
		Expect(math.Abs(ns.FCT.Avg-v.sum.FCT.Avg) / v.sum.FCT.Avg).To(BeNumerically("<", 1e-9))
		claims.add("9 NDC(4,2) 27->1 incast on netns", "lossless, deadlock-free",
			fmt.Sprintf("%d/27 done, 0 drops, %d pauses = virtual's", ns.Flows.Completed, ns.Pauses.Sent), "yes")
	})
})
