package workloads_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/netns"
	_ "github.com/fabriclab/fabriclab/harness/netns/agent" // the agent runs inside this test binary
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/report"
	"github.com/fabriclab/fabriclab/traffic"
)

type run struct {
	lab *lab.Lab
	log *records.Log
	res virtual.Result
	sum *report.Summary
	rec map[uint32]records.Flow
}

// runYAML does what `lab run` does through the Go API.
func runYAML(yaml string) *run {
	s, err := spec.Parse([]byte(yaml))
	Expect(err).NotTo(HaveOccurred())
	l, err := lab.Build(s)
	Expect(err).NotTo(HaveOccurred())
	f, err := virtual.New(l)
	Expect(err).NotTo(HaveOccurred())
	res := f.Run(context.Background())
	r := &run{lab: l, log: f.Log, res: res, rec: map[uint32]records.Flow{},
		sum: report.Summarize(f.Log, report.Meta{Dilation: 1, Duration: res.End, Graph: l.Graph})}
	for _, fr := range f.Log.Flows {
		r.rec[fr.ID] = fr
	}
	return r
}

func (r *run) allDone() {
	ExpectWithOffset(1, r.sum.Flows.Total).To(Equal(len(r.lab.Flows)), "every scheduled flow has a record")
	ExpectWithOffset(1, r.sum.Flows.Completed).To(Equal(r.sum.Flows.Total), "every flow completes")
	ExpectWithOffset(1, r.sum.Violations).To(BeEmpty())
}

func (r *run) class(c string) []lab.FlowPlan {
	var out []lab.FlowPlan
	for _, f := range r.lab.Flows {
		if f.Class == c {
			out = append(out, f)
		}
	}
	return out
}

const ndc41 = `topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: pfc}
host: {transport: lossless}
`

var _ = Describe("workload kinds end to end", Label("workloads"), func() {
	It("poisson: WebSearch arrivals at a load reach every host and complete", Label("smoke"), func() {
		r := runYAML("name: w-poisson\n" + ndc41 + `workload: [{kind: poisson, cdf: websearch, load: 0.3, duration: 1ms}]
duration: 30ms
`)
		r.allDone()
		Expect(len(r.lab.Flows)).To(BeNumerically(">", 10))
		srcs := map[int]bool{}
		for _, f := range r.lab.Flows {
			srcs[f.Src] = true
			Expect(f.At).To(BeNumerically("<", clock.Millisecond))
		}
		Expect(len(srcs)).To(BeNumerically(">=", 8), "arrivals come from most of the 16 hosts")
		Expect(r.sum.Classes).To(HaveKey("poisson"))
	})

	It("poisson over listed pairs and a Pareto size distribution", Label("smoke"), func() {
		r := runYAML("name: w-pairs\n" + ndc41 + `workload:
  - {kind: poisson, cdf: pareto, load: 0.2, duration: 500us, pairs: [{src: h0, dst: h5}, {src: h3, dst: h12}]}
duration: 20ms
`)
		r.allDone()
		Expect(r.lab.Flows).NotTo(BeEmpty())
		for _, f := range r.lab.Flows {
			Expect([][2]int{{0, 5}, {3, 12}}).To(ContainElement([2]int{f.Src, f.Dst}))
		}
	})

	It("incast: count and interval repeat the same N->1", Label("smoke"), func() {
		r := runYAML("name: w-incast\n" + ndc41 + `workload: [{kind: incast, senders: 4, size: 100KB, receiver: h7, count: 3, interval: 200us}]
duration: 20ms
`)
		r.allDone()
		Expect(r.lab.Flows).To(HaveLen(12))
		at := map[clock.Time]int{}
		for _, f := range r.lab.Flows {
			Expect(f.Dst).To(Equal(7))
			at[f.At]++
		}
		Expect(at).To(Equal(map[clock.Time]int{0: 4, 200 * clock.Microsecond: 4, 400 * clock.Microsecond: 4}))
	})

	It("incast: Poisson-arriving incasts at a load share", Label("smoke"), func() {
		r := runYAML("name: w-pincast\n" + ndc41 + `workload: [{kind: incast, senders: 6, size: 50KB, load: 0.05, duration: 2ms}]
duration: 30ms
`)
		r.allDone()
		Expect(len(r.lab.Flows) % 6).To(Equal(0))
		Expect(len(r.lab.Flows)).To(BeNumerically(">=", 12), "several events in 2 ms at 5%% of 16 x 100 Gb/s")
	})

	It("permutation: every chosen host sends once and receives once", Label("smoke"), func() {
		r := runYAML(`name: w-perm
topology: {family: fattree, k: 4}
host: {transport: irn}
workload: [{kind: permutation, size: 200KB, fraction: 0.5}]
duration: 20ms
`)
		r.allDone()
		Expect(r.lab.Flows).To(HaveLen(8))
		in, out := map[int]int{}, map[int]int{}
		for _, f := range r.lab.Flows {
			in[f.Dst]++
			out[f.Src]++
		}
		Expect(in).To(HaveLen(8))
		Expect(out).To(HaveLen(8))
	})

	It("all-to-all among a fraction of hosts, with Poisson arrivals", Label("smoke"), func() {
		r := runYAML(`name: w-a2a
topology: {family: ring, n: 6, hosts_per_switch: 2}
host: {transport: irn}
workload:
  - {kind: all-to-all, name: once, size: 20KB, fraction: 0.5}
  - {kind: all-to-all, name: arrivals, cdf: hadoop, load: 0.2, duration: 200us}
duration: 20ms
`)
		r.allDone()
		Expect(r.class("once")).To(HaveLen(6 * 5))
		Expect(r.class("arrivals")).NotTo(BeEmpty())
	})

	It("adv1 and adv2 follow the Dragonfly groups", Label("smoke"), func() {
		r := runYAML(`name: w-adv
topology: {family: dragonfly, p: 1, a: 2, h: 1}
host: {transport: irn}
workload:
  - {kind: adv1, size: 50KB}
  - {kind: adv2, size: 50KB}
duration: 20ms
`)
		r.allDone()
		g := r.lab.Graph
		group := func(h int) int { return g.Nodes[g.Hosts[h]].Group }
		groups := map[int]bool{}
		for h := range g.Hosts {
			groups[group(h)] = true
		}
		n := len(groups)
		for _, f := range r.class("adv1") {
			Expect(group(f.Dst)).To(Equal((group(f.Src)+1)%n), "adv1 sends to the next group")
		}
		targets := map[int]bool{}
		for _, f := range r.class("adv2") {
			targets[group(f.Dst)] = true
			Expect(group(f.Src)).NotTo(Equal(group(f.Dst)))
		}
		Expect(targets).To(HaveLen(1), "adv2 sends everything into one group")
	})

	It("ps: each round's broadcast starts only after all its pushes complete", Label("smoke"), func() {
		r := runYAML("name: w-ps\n" + ndc41 + `workload: [{kind: ps, server: h0, workers: 6, push_size: 500KB, broadcast_size: 200KB, rounds: 2}]
duration: 50ms
`)
		r.allDone()
		pushes, bcasts := r.class("ps-push"), r.class("ps-bcast")
		Expect(pushes).To(HaveLen(12))
		Expect(bcasts).To(HaveLen(12))
		for _, b := range bcasts {
			Expect(b.After).To(HaveLen(6))
			var last clock.Time
			for _, a := range b.After {
				Expect(r.rec[a].Class).To(Equal("ps-push"))
				last = max(last, r.rec[a].Finish)
			}
			Expect(r.rec[b.ID].Start).To(BeNumerically(">=", last), "broadcast %d starts after its round's last push", b.ID)
		}
		// The second round's push of a worker waits for that worker's broadcast.
		second := 0
		for _, p := range pushes {
			if len(p.After) > 0 {
				second++
				Expect(r.rec[p.ID].Start).To(BeNumerically(">=", r.rec[p.After[0]].Finish))
			}
		}
		Expect(second).To(Equal(6))
	})

	It("moe: dispatch to skewed experts, combine after the layer's dispatch, layers in order", Label("smoke"), func() {
		r := runYAML(`name: w-moe
topology: {family: ndc, n: 4, k: 1, rail: "true", hbd_rate: 160Gbps}
switch: {flow_control: pfc}
host: {transport: lossless}
workload: [{kind: moe, experts: 8, top_k: 2, tokens: 256, token_size: 4KB, zipf: 1.0, layers: 2}]
duration: 50ms
`)
		r.allDone()
		disp, comb := r.class("moe-dispatch"), r.class("moe-combine")
		Expect(disp).NotTo(BeEmpty())
		Expect(comb).To(HaveLen(len(disp)))
		for _, c := range comb {
			for _, a := range c.After {
				Expect(r.rec[c.ID].Start).To(BeNumerically(">=", r.rec[a].Finish))
			}
		}
		var bytes int64
		for _, d := range disp {
			bytes += d.Size
		}
		Expect(bytes).To(BeNumerically("<=", int64(2*256*2*4000)))
		Expect(bytes).To(BeNumerically(">", int64(256*2*4000)), "most tokens leave their host")
	})

	It("trace: HPCC flow.txt and htsim .cm files replay as written", Label("smoke"), func() {
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "flow.txt"), []byte("3\n0 5 3 100 100000 0.000001\n2 9 3 100 20000 0.0001\n7 1 3 100 5000 0.0002\n"), 0o644)).To(Succeed())
		// Current csg-htsim: start in picoseconds (5 us).
		Expect(os.WriteFile(filepath.Join(dir, "chain.cm"), []byte("Nodes 16\nConnections 2\nTriggers 1\n1->2 id 1 start 5000000 size 30000 send_done_trigger 1\n2->3 id 2 trigger 1 size 30000\ntrigger id 1 oneshot\n"), 0o644)).To(Succeed())
		r := runYAML(fmt.Sprintf("name: w-trace\n"+ndc41+`workload:
  - {kind: trace, name: hpcc, format: hpcc, path: %s}
  - {kind: trace, name: htsim, format: htsim, path: %s, start: 1ms}
duration: 20ms
`, filepath.Join(dir, "flow.txt"), filepath.Join(dir, "chain.cm")))
		r.allDone()
		h := r.class("hpcc")
		Expect(h).To(HaveLen(3))
		Expect(h[1].Src).To(Equal(2))
		Expect(h[1].At).To(Equal(100 * clock.Microsecond))
		c := r.class("htsim")
		Expect(c).To(HaveLen(2))
		first, second := c[0], c[1]
		if len(first.After) > 0 {
			first, second = second, first
		}
		Expect(second.After).To(Equal([]uint32{first.ID}))
		Expect(r.rec[second.ID].Start).To(BeNumerically(">=", r.rec[first.ID].Finish))
		Expect(r.rec[first.ID].Start).To(Equal(clock.Millisecond + 5*clock.Microsecond))

		var b strings.Builder
		s := make(traffic.Schedule, len(r.lab.Flows))
		for i, f := range r.lab.Flows {
			s[i] = f.Flow
		}
		Expect(traffic.WriteHPCC(&b, s)).To(Succeed())
		Expect(b.String()).To(HavePrefix("5\n"))
	})

	It("names the field when a workload cannot be built", Label("smoke"), func() {
		s, err := spec.Parse([]byte("name: w-bad\n" + ndc41 + `workload: [{kind: adv1, size: 1KB}]
duration: 1ms
`))
		Expect(err).NotTo(HaveOccurred())
		_, err = lab.Build(s)
		Expect(err).To(MatchError(ContainSubstring("workload[0]")))
		s, err = spec.Parse([]byte("name: w-bad2\n" + ndc41 + `workload: [{kind: trace, format: hpcc, path: /nonexistent/flow.txt}]
duration: 1ms
`))
		Expect(err).NotTo(HaveOccurred())
		_, err = lab.Build(s)
		Expect(err).To(MatchError(ContainSubstring("workload[0].path")))
	})

	// The same generator output must reach real agents intact: every scheduled flow runs, with the
	// schedule's endpoints and sizes, and completes. Completion and counts do not depend on how well
	// the machine keeps time (go-back-N recovers what a stall drops), so this asserts them even on an
	// unfaithful run; rates are the netns suite's business.
	It("runs a Poisson WebSearch workload on the netns backend, every scheduled flow intact", Label("netns", "smoke"), func() {
		if os.Geteuid() != 0 {
			Fail("this spec needs root: the netns backend creates network namespaces (sudo bash scripts/test.sh)")
		}
		s, err := spec.Parse([]byte(`name: w-netns
backend: netns
dilation: 1000
seed: 3
topology: {family: ndc, n: 2, k: 1}
switch: {flow_control: pfc}
host: {transport: lossless}
workload: [{kind: poisson, cdf: websearch, load: 0.3, duration: 1ms}]
duration: 20ms
`))
		Expect(err).NotTo(HaveOccurred())
		l, err := lab.Build(s)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(l.Flows)).To(BeNumerically(">=", 4), "the schedule should have a few flows")
		log, res, err := netns.Run(context.Background(), l, netns.RunOptions{})
		Expect(err).NotTo(HaveOccurred())
		sum := report.Summarize(log, report.Meta{Dilation: res.Dilation, Duration: res.End, Graph: l.Graph, Fidelity: &res.Fidelity})
		AddReportEntry("netns workload", fmt.Sprintf("%d flows, %d completed, FCT avg %.4g s, fidelity %v (%s)",
			sum.Flows.Total, sum.Flows.Completed, sum.FCT.Avg, res.Fidelity.Faithful, res.Fidelity.Reason))
		got := map[uint32]records.Flow{}
		for _, f := range log.Flows {
			got[f.ID] = f
		}
		for _, f := range l.Flows {
			r, ok := got[f.ID]
			Expect(ok).To(BeTrue(), "flow %d has no record", f.ID)
			Expect([]int64{int64(r.Src), int64(r.Dst), r.Size}).To(Equal([]int64{int64(f.Src), int64(f.Dst), f.Size}), "flow %d: src, dst, size", f.ID)
			Expect(r.Completed).To(BeTrue(), "flow %d did not complete", f.ID)
		}
		// PFC keeps this lossless unless an agent stalled past what headroom covers, which the fidelity
		// verdict then names (harness/netns stallVerdict); on a faithful run a lossless drop is a bug.
		if res.Fidelity.Faithful {
			Expect(sum.Drops.Lossless).To(BeZero())
			Expect(sum.Violations).To(BeEmpty())
		}
	})
})
