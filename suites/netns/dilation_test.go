package netns_test

import (
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/harness/portio"
)

// ugalSpec: two 2 MB flows fill group 0's minimal path to group 1, then four 500 KB flows start and
// UGAL chooses, per flow, between minimal and a Valiant path by their probed delays and the threshold.
// On the virtual backend the threshold acts: FCT avg 249 us at 1-50 KB, 237 us at 200 KB, 346 us at 1 MB.
// Undilated on netns (before every engine time was dilated) 200 KB behaved like a threshold D times
// smaller: 249 us, 5.1% from virtual, on a run marked faithful.
func ugalSpec(threshold string) string {
	return `
name: ns-ugal
dilation: 5000
topology: {family: dragonfly, p: 2, a: 2, h: 1, link: {rate: 100Gbps, delay: 1us}}
routing: {algorithm: ugal, threshold: ` + threshold + `, seed: 1}
switch: {flow_control: pfc}
host: {transport: lossless, cc: none}
workload:
  - {kind: flows, list: [{src: h0, dst: h4, size: 2MB, at: 0s}, {src: h1, dst: h5, size: 2MB, at: 0s},
      {src: h2, dst: h6, size: 500KB, at: 30us}, {src: h3, dst: h7, size: 500KB, at: 40us},
      {src: h0, dst: h5, size: 500KB, at: 50us}, {src: h1, dst: h4, size: 500KB, at: 60us}]}
duration: 1ms`
}

var _ = Describe("netns backend: every engine time and rate is dilated", Label("netns"), func() {
	It("UGAL with a threshold agrees with the virtual backend", func() {
		v := runVirtual(ugalSpec("200KB"))
		small := runVirtual(ugalSpec("1KB"))
		Expect(within(small.FCT.Avg, v.FCT.Avg)).To(BeNumerically(">", 0.02), "the threshold does not act in this spec")
		r := runFaithful(ugalSpec("200KB"), netns.RunOptions{})
		GinkgoWriter.Printf("UGAL 200KB: FCT avg netns %.4g s, virtual %.4g s (%.2f%%); virtual at 1KB %.4g s\n",
			r.sum.FCT.Avg, v.FCT.Avg, 100*within(r.sum.FCT.Avg, v.FCT.Avg), small.FCT.Avg)
		Expect(r.sum.Flows.Completed).To(Equal(6))
		Expect(within(r.sum.FCT.Avg, v.FCT.Avg)).To(BeNumerically("<", 0.02))
		// The same engines on the same schedule: the virtual run's one violation (a lossless PSN resent,
		// the engines' own matter) shows here too, and nothing else.
		Expect(strings.Join(r.sum.Violations, "\n")).To(Equal(strings.Join(v.Violations, "\n")))
	})
})

// distortedLossy is a 15->1 lossy go-back-N incast at D=150. With catch-up steps of 10 us (the agent's
// floor until it was lowered to 1 us) one agent takes every frame within a serialization time of its
// schedule, so the lateness rule passes the run, yet the steps' timing errors add up where the drop
// threshold and the retransmission timers decide: 9537-11371 drops against 6554 on the virtual backend,
// about twice the retransmissions. Before the cross-check such runs were marked faithful (at D=200:
// 9966 drops vs 6554, +13.5% FCT, "faithful"). With the 1 us floor the same lab drops 6562.
const distortedLossy = `
name: ns-lossy-distorted
dilation: 150
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: lossy, alpha: 0.125}
host: {transport: gbn, cc: none, rto: 1ms}
workload: [{kind: incast, senders: 15, size: 500KB, receiver: h0, at: 0s}]
duration: 100ms`

var _ = Describe("netns backend: the fidelity verdict catches distortion", Label("netns"), func() {
	It("reports a distorted lossy run unfaithful even when every frame was taken on time", func() {
		// The distortion comes from coarse catch-up steps, which only the legacy data path has (a frame
		// written when due, taken at the end of the step that read it, within a frame time); the batched
		// one holds each frame until it is due, whatever the step.
		os.Setenv(portio.DatapathEnv, "legacy")
		defer os.Unsetenv(portio.DatapathEnv)
		v := runVirtual(distortedLossy)
		for attempt := 1; ; attempt++ {
			r := runNetns(distortedLossy, netns.RunOptions{MinCatchUpStep: 10 * clock.Microsecond})
			lateness := netns.Verdict(r.res.Monitor, netns.DefaultFidelityBound)
			GinkgoWriter.Printf("attempt %d: drops %d (virtual %d), retransmissions %d (virtual %d); lateness alone: %v; verdict %v\n",
				attempt, r.sum.Drops.Lossy, v.Drops.Lossy, r.sum.Retransmissions, v.Retransmissions, lateness.Faithful, r.sum.Fidelity.Faithful)
			if !lateness.Faithful && attempt < faithfulAttempts {
				continue // the machine was busy: this attempt does not isolate what the cross-check adds
			}
			Expect(lateness.Faithful).To(BeTrue(), "no attempt kept every frame on time: %s", lateness.Reason)
			Expect(r.sum.Drops.Lossy).To(BeNumerically(">", 1.25*float64(v.Drops.Lossy)), "this run was not distorted")
			Expect(r.sum.Fidelity.Faithful).To(BeFalse())
			Expect(r.sum.Fidelity.Reason).To(ContainSubstring("distorted"))
			Expect(r.sum.Fidelity.Reason).To(ContainSubstring("flows differ"))
			Expect(r.sum.Fidelity.Differing).NotTo(BeEmpty())
			return
		}
	})

	It("keeps the same lab faithful with the default catch-up steps", func() {
		v := runVirtual(distortedLossy)
		r := runFaithful(distortedLossy, netns.RunOptions{})
		GinkgoWriter.Printf("drops %d (virtual %d), retransmissions %d (virtual %d), FCT avg %.4g s (virtual %.4g s)\n",
			r.sum.Drops.Lossy, v.Drops.Lossy, r.sum.Retransmissions, v.Retransmissions, r.sum.FCT.Avg, v.FCT.Avg)
		Expect(within(float64(r.sum.Drops.Lossy), float64(v.Drops.Lossy))).To(BeNumerically("<", 0.05))
		Expect(r.sum.Flows.Completed).To(Equal(15))
	})
})
