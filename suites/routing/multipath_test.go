package routing_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/report"
)

// multipathSpec: a permutation of long flows on a 16-switch FC+ expander under KSP-K, spread by the
// NICs (routing.spread). %d: k; %s: spread; %s: transport.
const multipathSpec = `
name: ksp-spread
seed: 3
topology: {family: fcplus, switches: 16, s: 6, seed: 1, hosts_per_switch: 2, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: pfc}
host: {transport: %s}
routing: {algorithm: ksp, k: %d, spread: %s}
workload: [{kind: permutation, size: 500KB, at: 0s}]
duration: 20ms
`

func runSpread(k int, spread, transport string) (*report.Summary, int) {
	GinkgoHelper()
	l, f := fabric(fmt.Sprintf(multipathSpec, transport, k, spread))
	cands := 0
	for _, fl := range l.Flows {
		cands = max(cands, len(fl.Cands))
	}
	res := f.Run(context.Background())
	sum := report.Summarize(f.Log, report.Meta{Dilation: 1, Duration: res.End, Graph: l.Graph, Deadlock: res.Deadlock})
	Expect(sum.Flows.Completed).To(Equal(sum.Flows.Total), "k=%d spread=%s", k, spread)
	Expect(sum.Drops.Lossless).To(BeZero())
	return sum, cands
}

// Multipath at run time (issue 16): before, every source-routed multipath router sent a flow on its
// first path, and KSP-1 and KSP-8 gave byte-identical runs.
var _ = Describe("multipath routings spread traffic over the K paths of a pair", Label("routing", "smoke"), func() {
	It("KSP-1 runs on one path per flow; KSP-8 spread per flow uses all 8 candidate indices and changes FCT", func() {
		one, c1 := runSpread(1, "flow", "lossless")
		eight, c8 := runSpread(8, "flow", "lossless")
		Expect(c1).To(BeZero(), "KSP-1 flows have no candidates")
		Expect(one.Paths).To(BeNil())
		Expect(c8).To(Equal(8))
		Expect(eight.Paths).NotTo(BeNil())
		used := 0
		for _, b := range eight.Paths.BytesByPath {
			if b > 0 {
				used++
			}
		}
		AddReportEntry("ksp", fmt.Sprintf("KSP-1 FCT avg %.2f us p99 %.2f us; KSP-8 (flow) FCT avg %.2f us p99 %.2f us, bytes by path index %v, paths/flow %.2f of %.2f",
			one.FCT.Avg*1e6, one.FCT.P99*1e6, eight.FCT.Avg*1e6, eight.FCT.P99*1e6, eight.Paths.BytesByPath, eight.Paths.Used, eight.Paths.Candidates))
		Expect(used).To(Equal(8), "flows hashed onto every candidate index: %v", eight.Paths.BytesByPath)
		Expect(eight.Paths.Used).To(BeNumerically("==", 1), "spread: flow keeps a flow on one path")
		Expect(eight.FCT.Avg).NotTo(Equal(one.FCT.Avg))
	})

	It("KSP-8 spread per packet puts every flow on all 8 paths in equal shares (IRN)", func() {
		sum, _ := runSpread(8, "packet", "irn")
		AddReportEntry("packet", fmt.Sprintf("paths/flow %.2f of %.2f, busiest path's share %.3f, bytes by path %v, FCT avg %.2f us, retransmissions %d",
			sum.Paths.Used, sum.Paths.Candidates, sum.Paths.MaxShare, sum.Paths.BytesByPath, sum.FCT.Avg*1e6, sum.Retransmissions))
		Expect(sum.Paths.Used).To(BeNumerically("==", 8))
		// 1/8 each by PSN; IRN's retransmissions of reordered packets (counted on their path) add a little.
		Expect(sum.Paths.MaxShare).To(BeNumerically("<", 0.2), "round robin: about 1/8 each")
	})
})
