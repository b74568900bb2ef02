package routing_test

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/deadlock"
	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/report"
)

// envelopeSpec is the Fibre Channel paper's envelope experiment (Fibre Channel paper §3) on the
// virtual backend: one host per switch, PFC on one lossless priority with small thresholds, go-back-N
// lossless transport without congestion control (FC has none: credits only), and the four two-hop rim
// pairs h_i -> h_(i+2). The paper's buffer depth and load are [UNSPECIFIED]; ours are chosen small (XOFF a
// few frames above a BDP) and at overload (every rim link is offered 2x its rate), for
// a fast, deterministic deadlock. %s slots: routing algorithm, the flows' extra keys (path pins).
const envelopeSpec = `
name: envelope-runtime
backend: virtual
seed: 1
topology: {family: envelope, hosts_per_switch: 1, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: pfc, buffer: 1MB, xoff: 2bdp, xon: 1bdp, ecn: {enabled: false}}
host: {transport: lossless, cc: none, mtu: 1000}
routing: {algorithm: %s}
workload:
  - kind: flows
    name: rim
    list:
%s
duration: 5ms
`

// rimFlows lists h_i -> h_(i+2) for the four rim switches; pinned, each goes clockwise through its
// neighbour s_(i+1), the routing Fibre Channel paper §3 shows cyclic.
func rimFlows(pinned bool) string {
	var b strings.Builder
	for i := 0; i < 4; i++ {
		fmt.Fprintf(&b, "      - {src: %s, dst: %s, size: 4MB, at: 0s", h(i), h((i+2)%4))
		if pinned {
			fmt.Fprintf(&b, ", path: [%s, %s, %s, %s, %s]", h(i), s(i), s((i+1)%4), s((i+2)%4), h((i+2)%4))
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// planPaths is every path the flows may take: each flow's own and the candidates it is spread over.
func planPaths(fl []lab.FlowPlan) []route.Path {
	var ps []route.Path
	for _, fp := range fl {
		ps = append(append(ps, fp.Path), fp.Cands...)
	}
	return ps
}

type envelopeRun struct {
	lab *lab.Lab
	res virtual.Result
	sum *report.Summary
}

func runEnvelope(alg string, pinned bool) envelopeRun {
	y := fmt.Sprintf(envelopeSpec, alg, rimFlows(pinned))
	l, f := fabric(y)
	res := f.Run(context.Background())
	sum := report.Summarize(f.Log, report.Meta{Dilation: 1, Duration: res.End, Graph: l.Graph, Deadlock: res.Deadlock})
	return envelopeRun{lab: l, res: res, sum: sum}
}

var _ = Describe("envelope deadlock at run time (Fibre Channel paper §3)", Label("routing", "smoke"), func() {
	It("deadlocks under clockwise routing with PFC and small buffers; up*/down* and smart routing complete", func() {
		cw := runEnvelope("shortest", true)
		v := cw.res.Deadlock
		AddReportEntry("envelope clockwise", fmt.Sprintf("deadlock %v at %.1f us, cycle %v, %d/%d flows done, %d pauses sent",
			v.Detected, v.At.Seconds()*1e6, v.Cycle, cw.sum.Flows.Completed, cw.sum.Flows.Total, cw.sum.Pauses.Sent))
		// The routes really are the clockwise ones (a table fallback would hide the cycle).
		for _, fp := range cw.lab.Flows {
			Expect(fp.Route).To(HaveLen(4), fp.Path.Format(cw.lab.Graph))
		}
		Expect(v.Detected).To(BeTrue(), "no deadlock: %d pauses, %d/%d flows done", cw.sum.Pauses.Sent,
			cw.sum.Flows.Completed, cw.sum.Flows.Total)
		// "Very rapidly": within the monitor's stall time (1 ms of no departures) of the first stall.
		Expect(v.At.Seconds()).To(BeNumerically("<", 2e-3))
		Expect(cw.sum.Flows.Completed).To(BeNumerically("<", cw.sum.Flows.Total))
		Expect(cw.sum.Drops.Lossless).To(BeZero())
		// The run-time cycle goes round the rim: its switch queues are the four rim switches, which is the
		// static analysis's cycle for these paths.
		st := deadlock.Analyze(cw.lab.Graph, planPaths(cw.lab.Flows), deadlock.PFC(0))
		Expect(st.HasCycle()).To(BeTrue())
		staticNames := strings.Join(st.Cycles()[0].Names(cw.lab.Graph), " ")
		sw := map[string]bool{}
		for _, n := range v.Cycle {
			dev := strings.SplitN(n, ":", 2)[0]
			if strings.HasPrefix(dev, "s") {
				sw[dev] = true
				Expect(staticNames).To(ContainSubstring(dev))
			}
		}
		Expect(sw).To(HaveLen(4), "cycle %v", v.Cycle)
		Expect(sw).NotTo(HaveKey("s4"), "the hub carries no clockwise flow")

		for _, alg := range []string{"updown", "smart"} {
			r := runEnvelope(alg, false)
			AddReportEntry("envelope "+alg, fmt.Sprintf("deadlock %v, %d/%d flows done at %.1f us, lossless drops %d, %d pauses sent",
				r.res.Deadlock.Detected, r.sum.Flows.Completed, r.sum.Flows.Total, r.res.End.Seconds()*1e6,
				r.sum.Drops.Lossless, r.sum.Pauses.Sent))
			for _, fp := range r.lab.Flows {
				// Source-routed on the algorithm's paths, not forwarded by the shortest-path tables.
				Expect(fp.Route).To(Equal(fp.Path.Route()), alg)
				if len(fp.Cands) > 0 {
					Expect(fp.Paths[0]).To(Equal(fp.Route), alg)
				}
			}
			st := deadlock.Analyze(r.lab.Graph, planPaths(r.lab.Flows), deadlock.PFC(0))
			Expect(st.HasCycle()).To(BeFalse(), "%s paths", alg)
			Expect(r.res.Deadlock.Detected).To(BeFalse(), "%s: %v", alg, r.res.Deadlock.Cycle)
			Expect(r.res.AllDone).To(BeTrue(), alg)
			Expect(r.sum.Drops.Lossless).To(BeZero(), alg)
			// The same overload is really there: pauses flow, so completion is not for want of pressure;
			// unless the routing spread the rim flows onto paths that do not share a link (smart does, the
			// flows then finish at line rate: FCT within 10% of the ideal, which is the 2-hop path's).
			if r.sum.Pauses.Sent == 0 {
				Expect(r.sum.Slowdown.Max).To(BeNumerically("<", 1.1), "%s: no pauses, yet flows were slowed", alg)
			}
		}
	})
})
