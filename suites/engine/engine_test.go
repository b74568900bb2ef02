package engine_test

import (
	"context"
	"fmt"
	"math"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/report"
)

var _ = Describe("switch and NIC engines", Label("engine"), func() {

	It("carries one flow on an idle path at line rate", Label("smoke"), func() {
		// h0 -> s0 -> h1 on NDC(2,1): two 100 Gb/s, 1 us links.
		r := runSpec(`
name: idle-path
topology: {family: ndc, n: 2, k: 1, link: {rate: 100Gbps, delay: 1us}}
host: {transport: lossless, cc: none}
workload: [{kind: flows, list: [{src: h0, dst: h1, size: 10MB, at: 0s}]}]
duration: 10ms`)
		Expect(r.sum.Flows.Completed).To(Equal(1))
		f := r.fab.Log.Flows[0]
		const rate = 100e9
		payload := r.lab.Spec.Host.MTU
		npk := (10_000_000 + payload - 1) / payload
		wire := float64(npk * pkt.DataSize(payload, 2))
		// The analytical FCT: all wire bytes at line rate, plus the path latency (propagation there and
		// back, one store-and-forward of the first frame at the switch, the ACK's serialization).
		latency := 2*2*clock.Microsecond + clock.TxTime(pkt.DataSize(payload, 2), rate) + 2*clock.TxTime(pkt.AckSize, rate)
		want := clock.FromSeconds(wire*8/rate) + latency
		fct := f.FCT()
		GinkgoWriter.Printf("FCT %v, size/rate + path latency %v (%.3f%%)\n", fct, want, 100*math.Abs(float64(fct-want))/float64(want))
		Expect(math.Abs(float64(fct-want)) / float64(want)).To(BeNumerically("<", 0.01))
		// Line-rate throughput: wire bytes over the time the bottleneck link was needed.
		tput := wire * 8 / (fct - latency).Seconds()
		GinkgoWriter.Printf("wire throughput %.3f Gb/s of 100 (goodput %.3f Gb/s)\n", tput/1e9, 80e6/fct.Seconds()/1e9)
		Expect(tput / rate).To(BeNumerically(">=", 0.99))
		Expect(r.sum.Slowdown.Max).To(BeNumerically("<", 1.01))
	})

	Describe("8->1 incast on NDC(4,1), 1 MB each", func() {
		incast := func(fc, transport string) string {
			return fmt.Sprintf(`
name: incast-%[1]s-%[2]s
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: %[1]s, alpha: 0.125}
host: {transport: %[2]s, cc: dcqcn}
workload: [{kind: incast, senders: 8, size: 1MB, receiver: h0, at: 0s}]
duration: 100ms`, fc, transport)
		}

		It("drops and retransmits under lossy + go-back-N, and still completes", Label("smoke"), func() {
			// alpha 1/8 is the Broadcom-style dynamic queue limit HPCC uses; a single queue may not take
			// the whole 5 MB buffer, as in a real shared-buffer switch.
			r := runSpec(incast("lossy", "gbn"))
			GinkgoWriter.Printf("lossy+gbn: drops %d, retransmissions %d, FCT p99 %.3g s\n", r.sum.Drops.Lossy, r.sum.Retransmissions, r.sum.FCT.P99)
			Expect(r.sum.Flows.Completed).To(Equal(8))
			Expect(r.sum.Drops.Lossy).To(BeNumerically(">", 0))
			Expect(r.sum.Drops.Lossless).To(BeZero())
			Expect(r.sum.Retransmissions).To(BeNumerically(">", 0))
		})

		It("is lossless under PFC, with pauses logged", Label("smoke"), func() {
			r := runSpec(incast("pfc", "lossless"))
			GinkgoWriter.Printf("pfc: pauses sent %d received %d, FCT p99 %.3g s\n", r.sum.Pauses.Sent, r.sum.Pauses.Received, r.sum.FCT.P99)
			Expect(r.sum.Flows.Completed).To(Equal(8))
			Expect(r.sum.Drops.Lossless + r.sum.Drops.Lossy).To(BeZero())
			Expect(r.sum.Violations).To(BeEmpty())
			Expect(r.sum.Retransmissions).To(BeZero())
			Expect(r.sum.Pauses.Sent).To(BeNumerically(">", 0))
			var pfc bytesBuffer
			Expect(report.WritePFC(&pfc, r.fab.Log, meta(r.fab, r.res))).To(Succeed())
			Expect(pfc.lines()).To(BeNumerically(">", 0), "pfc.txt has no pause lines")
		})

		It("pauses by HPCC's dynamic threshold when alpha is set, by static XOFF otherwise", Label("smoke"), func() {
			// The spec always carries an XOFF (6 BDP by default); alpha must still select the dynamic
			// threshold (alpha x free shared buffer), so the three runs pause differently.
			pauses := map[string]int{}
			for _, a := range []string{"", ", alpha: 0.125", ", alpha: 0.01"} {
				r := runSpec(fmt.Sprintf(`
name: incast-alpha
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: pfc%s}
host: {transport: lossless, cc: none}
workload: [{kind: incast, senders: 8, size: 1MB, receiver: h0, at: 0s}]
duration: 100ms`, a))
				Expect(r.sum.Flows.Completed).To(Equal(8))
				Expect(r.sum.Drops.Lossless + r.sum.Drops.Lossy).To(BeZero())
				Expect(r.sum.Violations).To(BeEmpty())
				pauses[a] = r.sum.Pauses.Sent
			}
			GinkgoWriter.Printf("pauses sent: static 6 BDP %d, alpha 0.125 %d, alpha 0.01 %d\n", pauses[""], pauses[", alpha: 0.125"], pauses[", alpha: 0.01"])
			Expect(pauses[", alpha: 0.125"]).NotTo(Equal(pauses[""]), "alpha 0.125 paused like the static XOFF")
			// A lower threshold pauses more often.
			Expect(pauses[", alpha: 0.01"]).To(BeNumerically(">", pauses[", alpha: 0.125"]))
		})

		It("counts lossless violations when headroom is below the computed need", Label("smoke"), func() {
			// 2 KB of headroom cannot absorb a 1 us link's worth of frames in flight after a pause.
			tight := runSpec(`
name: tight-headroom
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: pfc, headroom: 2KB}
host: {transport: lossless, cc: none}
workload: [{kind: incast, senders: 8, size: 1MB, receiver: h0, at: 0s}]
duration: 100ms`)
			GinkgoWriter.Printf("headroom 2KB: lossless drops %d, violations %d\n", tight.sum.Drops.Lossless, len(tight.sum.Violations))
			Expect(tight.sum.Drops.Lossless).To(BeNumerically(">", 0))
			Expect(tight.sum.Violations).NotTo(BeEmpty())
		})
	})

	It("converges DCQCN flows sharing one port to a fair share", func() {
		// Four senders on one switch (ring of 3 switches, 5 hosts each) into h0: one 100 Gb/s port is the
		// bottleneck. Starts are staggered so fairness has to be reached, not inherited.
		f := build(`
name: dcqcn-fairness
topology: {family: ring, n: 3, hosts_per_switch: 5}
switch: {flow_control: pfc}
host: {transport: lossless, cc: dcqcn}
workload:
  - kind: flows
    list:
      - {src: h1, dst: h0, size: 200MB, at: 0s}
      - {src: h2, dst: h0, size: 200MB, at: 200us}
      - {src: h3, dst: h0, size: 200MB, at: 400us}
      - {src: h4, dst: h0, size: 200MB, at: 600us}
duration: 100ms`)
		sndUna := func() []float64 {
			var out []float64
			for _, fp := range f.Lab.Flows {
				st, ok := f.NICs[fp.SrcNode].FlowState(fp.ID)
				Expect(ok).To(BeTrue(), "flow %d finished before the measurement window ended", fp.ID)
				out = append(out, float64(st.SndUna))
			}
			return out
		}
		// Converge for 10 ms, then measure each flow's delivered packets over 10 ms.
		f.Clock.RunUntil(10 * clock.Millisecond)
		a := sndUna()
		f.Clock.RunUntil(20 * clock.Millisecond)
		b := sndUna()
		var sum, sq float64
		rates := make([]float64, len(a))
		for i := range a {
			rates[i] = (b[i] - a[i]) * float64(f.Lab.Spec.Host.MTU) * 8 / 10e-3
			sum += rates[i]
			sq += rates[i] * rates[i]
		}
		jain := sum * sum / (float64(len(rates)) * sq)
		GinkgoWriter.Printf("per-flow goodput (Gb/s): %.2f %.2f %.2f %.2f; Jain %.4f; total %.1f Gb/s\n",
			rates[0]/1e9, rates[1]/1e9, rates[2]/1e9, rates[3]/1e9, jain, sum/1e9)
		Expect(jain).To(BeNumerically(">=", 0.95))
		Expect(sum).To(BeNumerically(">", 0.8*100e9*1000/float64(pkt.DataSize(1000, 0))), "the bottleneck should stay busy")
	})

	It("is deterministic: the same spec twice gives identical fct.txt", Label("smoke"), func() {
		spec := `
name: determinism
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: pfc}
host: {transport: lossless, cc: dcqcn}
workload:
  - {kind: incast, senders: 6, size: 500KB, at: 0s}
  - {kind: incast, senders: 4, size: 200KB, at: 50us}
duration: 20ms`
		a, b := runSpec(spec), runSpec(spec)
		Expect(a.sum.Flows.Completed).To(Equal(10))
		Expect(fctTxt(a)).To(Equal(fctTxt(b)))
		Expect(a.res.Events).To(Equal(b.res.Events))
	})

	It("stops at the spec's duration when flows cannot finish, and Ctrl-C keeps partial results", func() {
		f := build(`
name: cut-short
topology: {family: ndc, n: 2, k: 1}
workload: [{kind: flows, list: [{src: h0, dst: h3, size: 1GB, at: 0s}]}]
duration: 1ms`)
		res := f.Run(context.Background())
		Expect(res.TimedOut).To(BeTrue())
		Expect(res.AllDone).To(BeFalse())
		sum := report.Summarize(f.Log, meta(f, res))
		Expect(sum.Flows.Total).To(Equal(1))
		Expect(sum.Flows.Completed).To(BeZero())

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		g := build(`
name: cancelled
topology: {family: ndc, n: 2, k: 1}
workload: [{kind: flows, list: [{src: h0, dst: h3, size: 1GB, at: 0s}]}]
duration: 1s`)
		Expect(g.Run(ctx).Cancelled).To(BeTrue())
	})
})

type bytesBuffer struct{ b []byte }

func (w *bytesBuffer) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
func (w *bytesBuffer) lines() int {
	n := 0
	for _, c := range w.b {
		if c == '\n' {
			n++
		}
	}
	return n
}
