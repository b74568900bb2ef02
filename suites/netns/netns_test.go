package netns_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/harness/portio"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/wire/dissect"
)

// idlePath runs at the suite's D=1000 (100 Mb/s links, under a second of wall time). It agreed with the
// virtual backend to 5.0-7.9% in FCT while the agent took frames at the moment it read them: a loop
// wake-up late by L delayed a frame's arrival at the switch, and on a path with no slack the egress
// schedule kept that slip to the end. Frames an agent sends itself now arrive at their scheduled time
// (agent port.arrival): 0.01-0.02%.
const idlePath = `
name: ns-idle-path
topology: {family: ndc, n: 2, k: 1, link: {rate: 100Gbps, delay: 1us}}
host: {transport: lossless, cc: none}
workload: [{kind: flows, list: [{src: h0, dst: h1, size: 10MB, at: 0s}]}]
duration: 10ms`

// incast runs at D=5000 (100 Gb/s links become 20 Mb/s): at D=1000 one agent had 3-31% of frames late
// on a loaded 2-core VM (eight senders' frames through one loop). The go-back-N RTO is 1 ms rather than the default 10 ms only to keep the wall
// time down (10 ms x 5000 = 50 s per timeout); both backends run the same spec.
//
// Lossy queues drop at HPCC's dynamic threshold (alpha); lossless ones pause at the static xoff: since
// switch.alpha also selects the dynamic PFC threshold (0472a59), alpha 0.125 let this incast's queue
// grow past xoff without a pause (0 pauses on both backends, 42 with the static threshold).
func incast(fc, transport string) string {
	alpha := ""
	if fc == "lossy" {
		alpha = ", alpha: 0.125"
	}
	return `
name: ns-incast-` + fc + `
dilation: 5000
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: ` + fc + alpha + `}
host: {transport: ` + transport + `, cc: dcqcn, rto: 1ms}
workload: [{kind: incast, senders: 8, size: 200KB, receiver: h0, at: 0s}]
duration: 100ms`
}

var _ = Describe("netns backend: the engines on real frames", Label("netns"), func() {

	It("carries one flow on an idle path and agrees with the virtual backend within 5%", Label("smoke"), func() {
		v := runVirtual(idlePath)
		r := runFaithful(idlePath, netns.RunOptions{})
		Expect(r.sum.Flows.Completed).To(Equal(1))
		GinkgoWriter.Printf("FCT netns %.4g s, virtual %.4g s (%.2f%%); throughput netns %.4g, virtual %.4g Gb/s\n",
			r.sum.FCT.Avg, v.FCT.Avg, 100*within(r.sum.FCT.Avg, v.FCT.Avg), r.sum.ThroughputBps/1e9, v.ThroughputBps/1e9)
		Expect(within(r.sum.FCT.Avg, v.FCT.Avg)).To(BeNumerically("<", 0.05))
		Expect(within(r.sum.ThroughputBps, v.ThroughputBps)).To(BeNumerically("<", 0.05))
		Expect(r.sum.Drops.Lossless + r.sum.Drops.Lossy).To(BeZero())
	})

	// Which flows of a lossy incast time out depends on the exact drop pattern, so average FCT is not
	// compared across backends here (it is bimodal: ~0.1 ms or ~1 RTO); drops, retransmissions and
	// completion are. (The ~50 s runs of earlier tries were flows waiting out a dilated 10 ms RTO
	// because every go-back-N NAK failed to encode; see wire.Check.)
	It("drops and retransmits an 8->1 incast under lossy + go-back-N, and still completes", Label("smoke"), func() {
		spec := incast("lossy", "gbn")
		v := runVirtual(spec)
		r := runFaithful(spec, netns.RunOptions{})
		GinkgoWriter.Printf("lossy+gbn: drops %d (virtual %d), retransmissions %d (virtual %d), FCT avg %.4g s (virtual %.4g s)\n",
			r.sum.Drops.Lossy, v.Drops.Lossy, r.sum.Retransmissions, v.Retransmissions, r.sum.FCT.Avg, v.FCT.Avg)
		Expect(r.sum.Flows.Completed).To(Equal(8))
		Expect(r.sum.Drops.Lossy).To(BeNumerically(">", 0))
		Expect(r.sum.Retransmissions).To(BeNumerically(">", 0))
	})

	It("keeps an 8->1 incast lossless under PFC, with pauses in pfc.txt and on the wire, close to the virtual backend", Label("smoke"), func() {
		spec := incast("pfc", "lossless")
		v := runVirtual(spec)
		r := runFaithful(spec, netns.RunOptions{Pcap: "all"})
		GinkgoWriter.Printf("pfc: pauses sent %d; FCT avg netns %.4g s, virtual %.4g s (%.2f%%)\n",
			r.sum.Pauses.Sent, r.sum.FCT.Avg, v.FCT.Avg, 100*within(r.sum.FCT.Avg, v.FCT.Avg))
		Expect(r.sum.Flows.Completed).To(Equal(8))
		Expect(r.sum.Drops.Lossless + r.sum.Drops.Lossy).To(BeZero())
		Expect(r.sum.Violations).To(BeEmpty())
		Expect(r.sum.Pauses.Sent).To(BeNumerically(">", 0))
		Expect(lines(filepath.Join(r.dir, "pfc.txt"))).To(BeNumerically(">", 0))
		Expect(within(r.sum.FCT.Avg, v.FCT.Avg)).To(BeNumerically("<", 0.05))
		Expect(within(r.sum.ThroughputBps, v.ThroughputBps)).To(BeNumerically("<", 0.05))

		// The pauses are real 802.1Qbb frames: gopacket finds them in the captures.
		pfc := countInCaptures(r.dir, dissect.LayerTypePFC)
		GinkgoWriter.Printf("PFC frames in the captures: %d\n", pfc)
		Expect(pfc).To(BeNumerically(">", 0))
	})

	It("counts lossless violations on real frames when headroom is below the computed need", func() {
		// The go-back-N RTO that recovers the drops is 1 ms (5 s of wall time at D=5000), as in incast.
		spec := `
name: ns-tight-headroom
dilation: 5000
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: pfc, headroom: 2KB}
host: {transport: lossless, cc: none, rto: 1ms}
workload: [{kind: incast, senders: 8, size: 200KB, receiver: h0, at: 0s}]
duration: 20ms`
		v := runVirtual(spec)
		r := runFaithful(spec, netns.RunOptions{})
		GinkgoWriter.Printf("headroom 2KB: lossless drops %d (virtual %d), violations %d\n", r.sum.Drops.Lossless, v.Drops.Lossless, len(r.sum.Violations))
		Expect(r.sum.Drops.Lossless).To(BeNumerically(">", 0))
		Expect(r.sum.Violations).NotTo(BeEmpty())
	})

	It("shares one port fairly among four DCQCN flows, as on the virtual backend", func() {
		spec := `
name: ns-dcqcn
dilation: 2000
topology: {family: ring, n: 3, hosts_per_switch: 5, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: pfc}
host: {transport: lossless, cc: dcqcn}
workload:
  - kind: flows
    list:
      - {src: h1, dst: h0, size: 4MB, at: 0s}
      - {src: h2, dst: h0, size: 4MB, at: 0s}
      - {src: h3, dst: h0, size: 4MB, at: 0s}
      - {src: h4, dst: h0, size: 4MB, at: 0s}
duration: 20ms`
		v := runVirtual(spec)
		r := runFaithful(spec, netns.RunOptions{})
		var sum, sq float64
		var gps []float64
		for _, f := range r.log.Flows {
			Expect(f.Completed).To(BeTrue())
			gp := float64(f.Size) * 8 / (f.FCT().Seconds() / r.res.Dilation)
			gps = append(gps, gp/1e9)
			sum += gp
			sq += gp * gp
		}
		jain := sum * sum / (float64(len(gps)) * sq)
		GinkgoWriter.Printf("per-flow goodput (Gb/s) %.2f, Jain %.4f; FCT avg netns %.4g s, virtual %.4g s (%.2f%%)\n",
			gps, jain, r.sum.FCT.Avg, v.FCT.Avg, 100*within(r.sum.FCT.Avg, v.FCT.Avg))
		Expect(jain).To(BeNumerically(">=", 0.95))
		Expect(within(r.sum.FCT.Avg, v.FCT.Avg)).To(BeNumerically("<", 0.05))
		Expect(r.sum.Drops.Lossless).To(BeZero())
	})

	// D=10: 10 Gb/s links, about a million frames a second per link, far past an AF_PACKET agent on
	// two cores.
	const overload = `
name: ns-overload
dilation: 10
topology: {family: ndc, n: 2, k: 1, link: {rate: 100Gbps, delay: 1us}}
host: {transport: lossless, cc: none}
workload: [{kind: flows, list: [{src: h0, dst: h1, size: 10MB, at: 0s}]}]
duration: 5ms`

	It("keeps the schedule of a run the machine cannot keep up with in real time: slower, not different", Label("smoke"), func() {
		// One agent hosts every device, so every frame is written when it departs and taken by its
		// engine exactly when due (the batched data path): the run takes longer than its dilated length
		// and gives the schedule-keeping run's results.
		v := runVirtual(overload)
		r := runNetns(overload, netns.RunOptions{})
		Expect(r.res.Wall.Seconds()).To(BeNumerically(">", 1.5*r.res.End.Seconds()), "the machine kept up: no overload")
		Expect(r.sum.Fidelity.Faithful).To(BeTrue(), r.sum.Fidelity.Reason)
		Expect(within(r.sum.FCT.Avg, v.FCT.Avg)).To(BeNumerically("<", 0.01))
	})

	It("reports a run the machine cannot keep up with as unfaithful where frames are taken late (legacy data path)", Label("smoke"), func() {
		// The data path of 26274ad writes a frame when it is due and its peer takes it when read: behind
		// the wall clock, frames are taken late, and the verdict must say so.
		os.Setenv(portio.DatapathEnv, "legacy")
		defer os.Unsetenv(portio.DatapathEnv)
		r := runNetns(overload, netns.RunOptions{})
		Expect(r.sum.Fidelity.Faithful).To(BeFalse())
		Expect(r.sum.Fidelity.Reason).To(ContainSubstring("could not keep up"))
	})

	It("fails clearly when an agent is killed mid-run, and leaves nothing behind", Label("smoke"), func() {
		l := buildLab(incast("pfc", "lossless"), "netns")
		var killed []string
		_, _, err := netns.Run(context.Background(), l, netns.RunOptions{Name: "nskill", Agents: 2,
			OnAgents: func(pids map[int][]string) {
				for pid, devs := range pids {
					killed = devs
					go func() {
						time.Sleep(200 * time.Millisecond)
						syscall.Kill(pid, syscall.SIGKILL)
					}()
					break
				}
			}})
		Expect(err).To(HaveOccurred())
		GinkgoWriter.Printf("error: %v\n", err)
		Expect(err.Error()).To(ContainSubstring("died"))
		Expect(err.Error()).To(ContainSubstring(strings.Join(killed, ",")))
		_, statErr := os.Stat(filepath.Join(nslink.StateRoot, "nskill"))
		Expect(os.IsNotExist(statErr)).To(BeTrue(), "the state directory is still there")
		left, _ := filepath.Glob(filepath.Join(nslink.NetnsDir, "fl-nskill-*"))
		Expect(left).To(BeEmpty())
		// `lab down` on a lab that is gone has nothing of ours to remove, and says so.
		Expect(nslink.Down("nskill")).To(MatchError(ContainSubstring("no state file")))
	})
})

// ring is the PortFC paper's NDC(2,1) deadlock ring (lab/experiments/portfc-ring.yaml, docs/portfc.md
// §7 claim 1) at D=5000: two-hop background flows, then four four-hop loop flows from 1 ms. The
// baselines queue at relays under ingress PFC, the configuration that deadlocks.
func ring(fc string) string {
	return `
name: ns-ring-` + fc + `
dilation: 5000
topology: {family: ndc, n: 2, k: 1, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: ` + fc + `, buffer: 5MB, xoff: 6bdp, xon: 4bdp, ecn: {kmin: 100KB, kmax: 400KB, pmax: 0.2}}
host: {transport: lossless, cc: dcqcn, mtu: 1000}
routing: {algorithm: bcube}
workload:
  - {kind: flows, name: background, list: [{src: h0, dst: h1, size: 10MB, at: 0s}, {src: h1, dst: h3, size: 10MB, at: 0s},
      {src: h3, dst: h2, size: 10MB, at: 0s}, {src: h2, dst: h0, size: 10MB, at: 0s}]}
  - {kind: flows, name: loop, list: [{src: h0, dst: h3, size: 5MB, at: 1ms, via: [h1]}, {src: h1, dst: h2, size: 5MB, at: 1ms, via: [h3]},
      {src: h3, dst: h0, size: 5MB, at: 1ms, via: [h2]}, {src: h2, dst: h1, size: 5MB, at: 1ms, via: [h0]}]}
duration: 6ms`
}

var _ = Describe("netns backend: deadlock and PortFC on real frames", Label("netns", "portfc"), func() {
	It("the run-time monitor names the PFC ring's cycle, as on the virtual backend", func() {
		spec := strings.Replace(ring("pfc"), "flow_control: pfc,", "flow_control: pfc, relay_pfc: ingress,", 1)
		v := runVirtual(spec)
		Expect(v.Deadlock.Detected).To(BeTrue(), "the virtual backend should deadlock this ring")
		r := runFaithful(spec, netns.RunOptions{})
		GinkgoWriter.Printf("netns deadlock %v at %.3g s, cycle %v; virtual at %.3g s, cycle %v\n",
			r.sum.Deadlock.Detected, r.sum.Deadlock.AtS, r.sum.Deadlock.Cycle, v.Deadlock.AtS, v.Deadlock.Cycle)
		Expect(r.sum.Deadlock.Detected).To(BeTrue())
		Expect(r.sum.Deadlock.Cycle).To(ConsistOf(v.Deadlock.Cycle))
		Expect(r.sum.Drops.Lossless).To(BeZero())
		// The run ends at the monitor tick that found the deadlock, nothing after it, as on the virtual
		// backend: the same length and the same bytes delivered (it had ended where the loop was when
		// the backend's stop came, a few frames more or less every time).
		GinkgoWriter.Printf("run length %v s (virtual %v s), throughput %v b/s (virtual %v b/s)\n",
			r.sum.DurationS, v.DurationS, r.sum.ThroughputBps, v.ThroughputBps)
		Expect(within(r.sum.DurationS, v.DurationS)).To(BeNumerically("<", 1e-9))
		Expect(within(r.sum.ThroughputBps, v.ThroughputBps)).To(BeNumerically("<", 1e-9))
	})

	It("PortFC carries the same ring to completion, losslessly, without retransmissions", func() {
		r := runFaithful(ring("portfc"), netns.RunOptions{})
		Expect(r.sum.Deadlock.Detected).To(BeFalse())
		Expect(r.sum.Flows.Completed).To(Equal(r.sum.Flows.Total))
		Expect(r.sum.Drops.Lossless + r.sum.Drops.Lossy).To(BeZero())
		Expect(r.sum.Retransmissions).To(BeZero())
	})

	It("PortFC keeps an 8->1 incast lossless and retransmission-free, with PortFC frames on the wire", Label("smoke"), func() {
		// PortFC thresholds are static: the spec refuses alpha with portfc.
		spec := strings.Replace(incast("portfc", "lossless"), ", alpha: 0.125", "", 1)
		r := runFaithful(spec, netns.RunOptions{Pcap: "all"})
		v := runVirtual(spec)
		GinkgoWriter.Printf("portfc incast: pauses sent %d (virtual %d), FCT avg %.4g s (virtual %.4g s)\n",
			r.sum.Pauses.Sent, v.Pauses.Sent, r.sum.FCT.Avg, v.FCT.Avg)
		Expect(r.sum.Flows.Completed).To(Equal(8))
		Expect(r.sum.Drops.Lossless + r.sum.Drops.Lossy).To(BeZero())
		Expect(r.sum.Retransmissions).To(BeZero())
		Expect(r.sum.Pauses.Sent).To(BeNumerically(">", 0))
		Expect(within(r.sum.FCT.Avg, v.FCT.Avg)).To(BeNumerically("<", 0.05))
		n := countInCaptures(r.dir, dissect.LayerTypePortFC)
		GinkgoWriter.Printf("PortFC frames in the captures: %d\n", n)
		Expect(n).To(BeNumerically(">", 0))
	})
})

// countInCaptures counts the frames of a run's pcaps (DIR/pcap/*.pcap) in which gopacket finds layer t,
// failing the spec if there are no captures or one does not read.
func countInCaptures(dir string, t gopacket.LayerType) int {
	pcaps, _ := filepath.Glob(filepath.Join(dir, "pcap", "*.pcap"))
	ExpectWithOffset(1, pcaps).NotTo(BeEmpty())
	n := 0
	for _, path := range pcaps {
		f, err := os.Open(path)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		rd, err := pcapgo.NewReader(f)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		for {
			data, _, err := rd.ReadPacketData()
			if errors.Is(err, io.EOF) {
				break
			}
			ExpectWithOffset(1, err).NotTo(HaveOccurred())
			if gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default).Layer(t) != nil {
				n++
			}
		}
		f.Close()
	}
	return n
}
