package pins_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/virtual"
)

// Each scenario exercises one mechanism on the smallest fabric that shows it, and pins its numbers
// (common: flows, FCTs, drops, retransmissions, marks, CNPs, pause/resume counts by direction, relay
// depth and queue, first pause and last resume times; plus what extra adds). Each runs in well under a
// second of CPU.
var scenarios = []scenario{
	{
		// PFC: 8 senders into h0 on NDC(4,1) at the static 6 BDP XOFF; no congestion control, so only
		// pauses hold the incast back: pause/resume counts and timing.
		name: "pfc-incast",
		yaml: `
name: pin-pfc-incast
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: pfc}
host: {transport: lossless, cc: none}
workload: [{kind: incast, senders: 8, size: 1MB, receiver: h0, at: 0s}]
duration: 20ms`,
	},
	{
		// PortFC: the same incast plus cross traffic on NDC(4,1) with source routes; pauses relayed by
		// the nodes (hops 1) and the IHFQ/DDQ queue indices they name.
		name: "portfc-propagation",
		yaml: `
name: pin-portfc
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: portfc}
host: {transport: lossless, cc: none}
routing: {algorithm: bcube}
workload:
  - {kind: incast, senders: 8, size: 1MB, receiver: h0, at: 0s}
  - kind: flows
    list:
      - {src: h5, dst: h10, size: 2MB, at: 0s}
      - {src: h6, dst: h15, size: 2MB, at: 0s}
      - {src: h9, dst: h3, size: 2MB, at: 0s}
duration: 20ms`,
	},
	{
		// PFC*: tags (lossless priorities) raised per hop class; pauses per queue are the tags paused.
		name: "pfcstar-tags",
		yaml: `
name: pin-pfcstar
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: pfcstar}
host: {transport: lossless, cc: none}
routing: {algorithm: bcube}
workload:
  - {kind: incast, senders: 8, size: 1MB, receiver: h0, at: 0s}
  - kind: flows
    list:
      - {src: h5, dst: h10, size: 2MB, at: 0s}
      - {src: h6, dst: h15, size: 2MB, at: 0s}
duration: 20ms`,
	},
	{
		// DCQCN: two flows into h0 through one 100 Gb/s port, a short one joining a long one 200 us in,
		// at the default profile's parameters (rate_ai, rate_hai from the spec's defaults): the rate
		// cuts while they share the port, then the long flow's recovery through fast recovery,
		// additive and hyper increase once it is alone; each flow's bytes per 20 us over the first 4 ms,
		// ECN marks and CNPs.
		name:     "dcqcn-two-flows",
		meterBin: 20 * clock.Microsecond,
		yaml: `
name: pin-dcqcn
topology: {family: ring, n: 3, hosts_per_switch: 3}
switch: {flow_control: pfc}
host: {transport: lossless, cc: dcqcn}
workload:
  - kind: flows
    list:
      - {src: h1, dst: h0, size: 30MB, at: 0s}
      - {src: h2, dst: h0, size: 3MB, at: 200us}
duration: 20ms`,
		extra: func(f *virtual.Fabric, fp fingerprint) { flowRates(f, fp, 200) },
	},
	{
		// DCTCP: two long flows into one port with step marking at K = 40 KB: the queue's peak and how
		// many 10 us samples sit above and below K.
		name:   "dctcp-queue",
		sample: 10 * clock.Microsecond,
		yaml: `
name: pin-dctcp
topology: {family: ring, n: 3, hosts_per_switch: 3}
switch: {flow_control: lossy, ecn: {kmin: 40KB, kmax: 41KB, pmax: 1}}
host: {transport: gbn, cc: dctcp}
workload:
  - kind: flows
    list:
      - {src: h1, dst: h0, size: 10MB, at: 0s}
      - {src: h2, dst: h0, size: 10MB, at: 100us}
duration: 20ms`,
		extra: func(f *virtual.Fabric, fp fingerprint) { queuePeaks(f, fp, 40_000) },
	},
	{
		// IRN loss recovery: a lossy 8->1 incast with a shallow per-queue limit, selective retransmission.
		name: "irn-recovery",
		yaml: `
name: pin-irn
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: lossy, alpha: 0.125}
host: {transport: irn, cc: dcqcn}
workload: [{kind: incast, senders: 8, size: 1MB, receiver: h0, at: 0s}]
duration: 50ms`,
	},
	{
		// ECMP: four flows per host pair across pods of a k=4 fat-tree (each flow its own source port),
		// routed by the switches' per-flow hash over their equal-cost uplinks; the bytes each
		// switch-to-switch port carried (the spread per uplink) and how many uplinks each edge and
		// aggregation switch used. A hash that ignores the source port puts a pair's four flows on
		// one path.
		name: "ecmp-fattree",
		yaml: `
name: pin-ecmp
topology: {family: fattree, k: 4}
switch: {flow_control: pfc}
host: {transport: lossless, cc: none}
routing: {algorithm: shortest}
workload:
  - kind: flows
    list:
      - {src: h0, dst: h8, size: 100KB, at: 0s}
      - {src: h0, dst: h8, size: 100KB, at: 0s}
      - {src: h0, dst: h8, size: 100KB, at: 0s}
      - {src: h0, dst: h8, size: 100KB, at: 0s}
      - {src: h1, dst: h12, size: 100KB, at: 0s}
      - {src: h1, dst: h12, size: 100KB, at: 0s}
      - {src: h1, dst: h12, size: 100KB, at: 0s}
      - {src: h1, dst: h12, size: 100KB, at: 0s}
      - {src: h4, dst: h9, size: 100KB, at: 0s}
      - {src: h4, dst: h9, size: 100KB, at: 0s}
      - {src: h4, dst: h9, size: 100KB, at: 0s}
      - {src: h4, dst: h9, size: 100KB, at: 0s}
duration: 20ms`,
		extra: uplinkSpread,
	},
	{
		// Go-back-N loss recovery on the same incast.
		name: "gbn-recovery",
		yaml: `
name: pin-gbn
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: lossy, alpha: 0.125}
host: {transport: gbn, cc: dcqcn}
workload: [{kind: incast, senders: 8, size: 1MB, receiver: h0, at: 0s}]
duration: 50ms`,
	},
	{
		// ECN marking: RED between kmin and kmax on a 4->1 incast under DCQCN, PFC keeping it lossless.
		name: "ecn-marking",
		yaml: `
name: pin-ecn
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: pfc, ecn: {kmin: 20KB, kmax: 200KB, pmax: 0.5}}
host: {transport: lossless, cc: dcqcn}
workload: [{kind: incast, senders: 4, size: 1MB, receiver: h0, at: 0s}]
duration: 20ms`,
	},
}

var _ = Describe("engine pins", Label("pins", "smoke"), func() {
	for _, sc := range scenarios {
		It("reproduces "+sc.name, func() {
			_, fp := sc.run()
			Expect(fp["flows.completed"]).To(BeNumerically(">", 0), "%s: no flow completed", sc.name)
			pin(sc, fp)
		})
	}
})
