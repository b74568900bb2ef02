package routing_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/report"
)

// DF-KSP with two lossless priorities on FC+ (FC+ paper §III-D): a path moves up one class where it turns
// down-then-up in the virtual layers, and the switch applies that from (in-port, out-port) alone.
var _ = Describe("DF-KSP lossless classes in the switches", Label("routing", "smoke"), func() {
	It("raises the class at the down-up turns of every path flows are spread over: each switch sends exactly the class-1 frames the paths say", func() {
		s, err := spec.Parse([]byte(`
name: dfksp-classes
topology: {family: fcplus, switches: 8, s: 6, seed: 1, hosts_per_switch: 2}
switch: {flow_control: pfc}
host: {transport: lossless}
routing: {algorithm: dfksp, k: 4, lossless_priorities: 2}
workload: [{kind: all-to-all, size: 200KB, at: 0s}]
duration: 10ms
`))
		Expect(err).NotTo(HaveOccurred())
		l, err := lab.Build(s)
		Expect(err).NotTo(HaveOccurred())
		rising := 0 // candidate paths that change class somewhere
		spread := 0
		for _, f := range l.Flows {
			if len(f.Cands) == 0 { // a pair with one path (both hosts on one switch)
				Expect(f.Path.Nodes).To(HaveLen(3), "flow %d has no candidates but crosses switches", f.ID)
				continue
			}
			spread++
			Expect(f.Cands).To(HaveLen(4), "flow %d: spread over the pair's k paths", f.ID)
			for _, p := range f.Cands {
				if p.Prio[len(p.Prio)-1] > 0 {
					rising++
				}
			}
		}
		withTurns := map[int]bool{}
		for _, sw := range l.Switches {
			if len(sw.Config.ClassUp) > 0 {
				withTurns[sw.Node] = true
				Expect(sw.Config.Lossless[nodes.DefaultDataPrio+1]).To(BeTrue(), "class 1 must be lossless")
			}
		}
		Expect(rising).To(BeNumerically(">", 0), "no path of this workload turns down-then-up: the spec tests nothing")
		Expect(withTurns).NotTo(BeEmpty())

		f, err := virtual.New(l)
		Expect(err).NotTo(HaveOccurred())
		res := f.Run(context.Background())
		sum := report.Summarize(f.Log, report.Meta{Dilation: 1, Duration: res.End, Graph: l.Graph, Deadlock: res.Deadlock})
		// Every data packet of a flow leaves each switch of the path it was spread onto (spread: flow, one
		// path per flow, recorded in PathBytes) in the class that path gives that hop (lossless transport:
		// no retransmission adds packets), so the class-1 frames each switch sends are known exactly.
		plan := map[uint32]lab.FlowPlan{}
		for _, fl := range l.Flows {
			plan[fl.ID] = fl
		}
		want := map[int]uint64{}
		usedIdx := map[int]bool{}
		for _, rec := range f.Log.Flows {
			fl := plan[rec.ID]
			if len(fl.Cands) == 0 {
				continue // one switch: no class turn
			}
			npkts := uint64((fl.Size + nodes.DefaultMTU - 1) / nodes.DefaultMTU)
			on := -1
			for i, b := range rec.PathBytes {
				if b > 0 {
					Expect(on).To(Equal(-1), "flow %d: spread: flow puts a flow on one path, got bytes %v", rec.ID, rec.PathBytes)
					on = i
				}
			}
			Expect(on).To(BeNumerically(">=", 0), "flow %d sent nothing on its candidates", rec.ID)
			usedIdx[on] = true
			p := fl.Cands[on]
			for i := 1; i < len(p.Ports); i++ {
				if p.Prio[i] == 1 {
					want[p.Nodes[i]] += npkts
				}
			}
		}
		Expect(len(usedIdx)).To(BeNumerically(">", 1), "every flow took the same candidate index: nothing spread")
		got := map[int]uint64{}
		for n, sw := range f.Switches {
			for p := 0; p < sw.NumPorts(); p++ {
				if c := sw.Port(p).Stats(nodes.DefaultDataPrio + 1).Dequeued; c > 0 {
					got[n] += c
				}
			}
		}
		AddReportEntry("classes", fmt.Sprintf("%d candidate paths of %d spread flows (of %d) rise a class; %d of %d switches have a class-up turn; class-1 frames per switch %v; flows %d/%d, lossless drops %d",
			rising, spread, len(l.Flows), len(withTurns), len(l.Switches), got, sum.Flows.Completed, sum.Flows.Total, sum.Drops.Lossless))
		Expect(sum.Flows.Completed).To(Equal(sum.Flows.Total))
		Expect(sum.Drops.Lossless).To(BeZero())
		Expect(sum.Retransmissions).To(BeZero())
		Expect(sum.Deadlock.Detected).To(BeFalse())
		Expect(got).To(Equal(want), "class-1 frames sent per switch (graph node -> frames), measured vs from the paths")
	})
})
