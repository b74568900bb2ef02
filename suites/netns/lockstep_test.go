package netns_test

import (
	"math"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/harness/netns"
)

// completedIDs are the flows a run completed, in id order.
func completedIDs(r *nsRun) []uint32 {
	var ids []uint32
	for _, f := range r.log.Flows {
		if f.Completed {
			ids = append(ids, f.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// near reports whether count a is within 1% of b, or within one of it (1% of 42 pauses is less than one
// pause).
func near(a, b float64) bool { return math.Abs(a-b) <= math.Max(0.01*b, 1) }

// fctSpread bounds the two runs' average FCT apart: 1%. Every frame is taken exactly when due (a
// cross-agent one by its stamp, one between an agent's own devices held by its port), and frames due at
// a device at the same instant in an order fixed by their ports (clock.ArrivalOrder), so the two
// runs measured identical on all four modes; before that tie-break the read order moved one agent's
// PortFC incast FCT by 2.0% from run to run.
const fctSpread = 0.01

// twoAgentsAsOne runs spec on one agent and on two in lockstep and holds the two to each other: both
// faithful, the same completed flows, pauses and drops within 1%, FCT within fctSpread, and no
// cross-agent frame late.
func twoAgentsAsOne(spec string) (one, two *nsRun) {
	one = runFaithful(spec, netns.RunOptions{Agents: 1})
	two = runFaithful(spec, netns.RunOptions{Agents: 2})
	m := two.res.Monitor
	GinkgoWriter.Printf("%s: 1 agent FCT %.5g s, pauses %d, drops %d+%d; 2 agents FCT %.5g s, pauses %d, drops %d+%d; %d cross-agent frames, %d late; split %s\n",
		one.lab.Spec.Name, one.sum.FCT.Avg, one.sum.Pauses.Sent, one.sum.Drops.Lossy, one.sum.Drops.Lossless,
		two.sum.FCT.Avg, two.sum.Pauses.Sent, two.sum.Drops.Lossy, two.sum.Drops.Lossless, m.CrossFrames, m.LateCross, two.res.Cut)
	Expect(two.res.Agents).To(Equal(2))
	Expect(m.CrossFrames).To(BeNumerically(">", 0), "no frame crossed between the agents: the split tested nothing")
	Expect(m.LateCross).To(BeZero(), "cross-agent frames read after their due time")
	Expect(m.LostCross + m.BadStamps).To(BeZero())
	Expect(completedIDs(two)).To(Equal(completedIDs(one)))
	Expect(within(two.sum.FCT.Avg, one.sum.FCT.Avg)).To(BeNumerically("<=", fctSpread), "FCT %.5g vs %.5g s", two.sum.FCT.Avg, one.sum.FCT.Avg)
	Expect(near(float64(two.sum.Pauses.Sent), float64(one.sum.Pauses.Sent))).To(BeTrue(), "pauses %d vs %d", two.sum.Pauses.Sent, one.sum.Pauses.Sent)
	for _, d := range [][2]int{{two.sum.Drops.Lossy, one.sum.Drops.Lossy}, {two.sum.Drops.Lossless, one.sum.Drops.Lossless}} {
		Expect(near(float64(d[0]), float64(d[1]))).To(BeTrue(), "drops %d vs %d", d[0], d[1])
	}
	return one, two
}

var _ = Describe("netns backend: two agents in lockstep run a lab as one agent does", Label("netns"), func() {
	for _, fc := range []string{"lossy", "pfc", "pfcstar", "portfc"} {
		transport, labels := "lossless", Labels{}
		if fc == "lossy" {
			transport = "gbn"
		}
		if fc == "pfc" {
			labels = Labels{"smoke"} // the cheapest: about 2.5 s a run
		}
		It("under "+fc+": an 8->1 incast across the cut", labels, func() {
			spec := incast(fc, transport)
			if fc == "portfc" {
				spec = strings.Replace(spec, ", alpha: 0.125", "", 1)
			}
			one, _ := twoAgentsAsOne(spec)
			if fc == "lossy" {
				Expect(one.sum.Drops.Lossy).To(BeNumerically(">", 0), "the lossy incast should drop")
			} else {
				Expect(one.sum.Pauses.Sent).To(BeNumerically(">", 0), "the lossless incast should pause")
			}
		})
	}

	It("finds the PFC ring's deadlock across agents (the coordinator merges their paused queues) and names the same cycle", Label("portfc"), func() {
		spec := strings.Replace(ring("pfc"), "flow_control: pfc,", "flow_control: pfc, relay_pfc: ingress,", 1)
		v := runVirtual(spec)
		Expect(v.Deadlock.Detected).To(BeTrue(), "the virtual backend should deadlock this ring")
		r := runFaithful(spec, netns.RunOptions{Agents: 2})
		GinkgoWriter.Printf("2 agents: deadlock %v at %.4g s, cycle %v; virtual at %.4g s, cycle %v\n",
			r.sum.Deadlock.Detected, r.sum.Deadlock.AtS, r.sum.Deadlock.Cycle, v.Deadlock.AtS, v.Deadlock.Cycle)
		Expect(r.res.Agents).To(Equal(2))
		Expect(r.res.DeadlockWatched).To(BeTrue())
		Expect(r.sum.Deadlock.Detected).To(BeTrue())
		Expect(r.sum.Deadlock.Cycle).To(ConsistOf(v.Deadlock.Cycle))
		Expect(r.res.Monitor.LateCross).To(BeZero())
		// Held at every monitor tick until the coordinator has judged it, no agent runs past the tick
		// that found the deadlock: the run has the virtual one's length and bytes (agents had run up to
		// a lockstep window on, flows still open delivering a few frames more).
		GinkgoWriter.Printf("run length %v s (virtual %v s), throughput %v b/s (virtual %v b/s)\n",
			r.sum.DurationS, v.DurationS, r.sum.ThroughputBps, v.ThroughputBps)
		Expect(within(r.sum.DurationS, v.DurationS)).To(BeNumerically("<", 1e-9))
		Expect(within(r.sum.ThroughputBps, v.ThroughputBps)).To(BeNumerically("<", 1e-9))
	})
})
