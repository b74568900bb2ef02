package netns_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/harness/netns"
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
