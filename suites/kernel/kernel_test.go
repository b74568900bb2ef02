package kernel_test

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/harness/bench"
	"github.com/fabriclab/fabriclab/harness/kernelhost"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
)

// chain is h0 - s0 - s1 - h1 (a 3-switch ring with one host each: h0 -> h1 crosses two Go switches),
// 100 Gb/s links at dilation 2000 = 50 Mb/s, 9000-byte MTU: ~700 frames/s per direction. A run is
// faithful when its verdict is and the agents' timers are late by less than half a frame on average
// (bench.KernelResult.Faithful; the figures below were measured with the former in-process forwarder,
// which had the same timer rule), so the dilation
// sets how much load the machine may carry: at dilation 200 (500 Mb/s, half a frame 72 us) the goodput
// spec failed 3 of 3 times at load average 12-15 on 2 cores (timers 83-110 us late, or 88.5% goodput on
// a run judged faithful); at 1000 it failed 1 of 6 (89.3%); at 2000 (half a frame 721 us) it passed 3
// of 3 at load 12-17, 95.8-98.6% of the link, timers 109-341 us late. So 2000 is the floor; a machine
// whose agent forwards far fewer frames (the Vagrant VM under QEMU's emulator) gets more (dilated).
func chain(ctx context.Context, cc, switchExtra string, size string) *lab.Lab {
	y := fmt.Sprintf(`name: kchain
backend: netns
dilation: 2000
topology: {family: ring, n: 3, hosts_per_switch: 1, link: {rate: 100Gbps, delay: 1us}}
switch: {buffer: 4MB, flow_control: lossy%s}
host: {transport: kernel-tcp, cc: %s, mtu: 9000}
routing: {algorithm: shortest}
workload:
  - {kind: flows, list: [{src: h0, dst: h1, size: %s, at: 0s}]}
duration: 1s
`, switchExtra, cc, size)
	s, err := spec.Parse([]byte(y))
	Expect(err).NotTo(HaveOccurred())
	l, err := lab.Build(s)
	Expect(err).NotTo(HaveOccurred())
	Expect(l.Flows[0].Path.Nodes).To(HaveLen(4), "h0 -> h1 should cross exactly two switches")
	return dilated(ctx, l, 1)
}

// dilated raises l's dilation above the spec's (the floor measured to hold on a busy 2-core machine)
// when this machine's agent, by its calibration, could not forward the lab's frames at that pace: the
// rule every netns run without a dilation follows (netns.ChooseDilationFor). Kernel TCP cannot be
// slowed down, only the links can: under QEMU's emulator the agent forwards about 80 times fewer
// frames per CPU-second than natively, and at the floor no run there kept time.
func dilated(ctx context.Context, l *lab.Lab, agents int) *lab.Lab {
	cal, err := netns.MachineCalibration(ctx, labName("cal"), func(s string) { GinkgoWriter.Println(s) })
	Expect(err).NotTo(HaveOccurred())
	c := netns.ChooseDilationFor(netns.FrameRate(l), netns.AgentPorts(l), agents, cal.Model())
	GinkgoWriter.Printf("dilation by this machine's calibration: %s (the spec's floor: %g)\n", c.Why, l.Spec.Dilation)
	if c.D > l.Spec.Dilation {
		AddReportEntry("dilation", fmt.Sprintf("%g, not the spec's %g: %s", c.D, l.Spec.Dilation, c.Why))
		l.Spec.Dilation = c.D
	}
	return l
}

// runFaithful runs l in agents agent processes until the run kept time (its rates would otherwise say
// more about the machine's load than about the fabric), at most 3 times, and fails with every rejected
// run's reason. Each run is a new measurement; only a faithful one is asserted on. maxLate, if set, is
// a tighter bound than the verdict's 5% on the frames that left more than a frame time late, for a
// spec whose tolerance is smaller than what 5% of late frames can cost a flow.
func runFaithful(ctx context.Context, name string, l *lab.Lab, agents int, maxLate float64) *bench.KernelResult {
	var why []string
	for i := 0; i < 3; i++ {
		r, err := bench.RunKernel(ctx, fmt.Sprintf("%s%d", name, i), l, agents)
		Expect(err).NotTo(HaveOccurred())
		ok, reason := r.Faithful(9014)
		if late := float64(r.Monitor.LateFrames) / float64(max(r.Monitor.Frames, 1)); ok && maxLate > 0 && late > maxLate {
			ok, reason = false, fmt.Sprintf("%.2f%% of frames left more than a frame time late, over this spec's %.2g%%: %s",
				100*late, 100*maxLate, r.Fidelity.Reason)
		}
		if ok {
			if len(why) > 0 {
				AddReportEntry("unfaithful attempts", strings.Join(why, "\n"))
			}
			return r
		}
		why = append(why, fmt.Sprintf("attempt %d: %s", i+1, reason))
	}
	Fail("no faithful run in 3 attempts, refusing to assert on rates:\n" + strings.Join(why, "\n"))
	return nil
}

var _ = Describe("kernel TCP through Go switches", func() {
	It("reaches at least 90% of the emulated 50 Mb/s link over two switch hops", Label("smoke"), func(ctx SpecContext) {
		r := runFaithful(ctx, labName("gp"), chain(ctx, "cubic", "", "20MB"), 1, 0)
		f := r.Flows[0]
		Expect(f.Completed).To(BeTrue())
		Expect(r.Monitor.Malformed).To(BeZero())
		AddReportEntry("goodput", fmt.Sprintf("%.1f Mb/s of %.0f Mb/s (FCT %v, retransmits %d, agent timer lag mean %v, %d of %d frames late)",
			r.GoodputBps[0]/1e6, r.LinkBps/1e6, f.FCT(), f.Retransmits, r.TimerLagMean(), r.Monitor.LateFrames, r.Monitor.Frames))
		Expect(r.GoodputBps[0]).To(BeNumerically(">=", 0.9*r.LinkBps))
	})

	It("marks CE on kernel frames and the sender's kernel sees the echo (cubic with ECN)", Label("smoke"), func(ctx SpecContext) {
		// Kmin 30 KB: a few 9 KB frames queued at s0's egress; a cubic flow keeps far more queued.
		r, err := bench.RunKernel(ctx, labName("ecn"), chain(ctx, "cubic", ", ecn: {kmin: 30KB, kmax: 200KB, pmax: 0.2}", "10MB"), 1)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Flows[0].Completed).To(BeTrue())
		AddReportEntry("ecn", fmt.Sprintf("switch CE marks %d, sender delivered_ce %d of %d segments",
			r.Marked, r.Stats[0].DeliveredCE, r.Stats[0].Delivered))
		Expect(r.Marked).To(BeNumerically(">", 0), "the switch marked no kernel frame")
		Expect(r.Stats[0].DeliveredCE).To(BeNumerically(">", 0), "the sender's kernel saw no ECE")
	})

	// Label vm: the kernels CI and developers' machines run here may lack tcp_dctcp; the Vagrant VM's
	// Debian kernel has it, and `bash scripts/vm.sh test` runs `smoke || vm` there (docs/vm.md).
	// Elsewhere it skips, saying which kernel lacks what.
	It("marks CE for a DCTCP flow (host.cc: dctcp)", Label("vm"), func(ctx SpecContext) {
		if err := kernelhost.Available("dctcp"); err != nil {
			Skip(err.Error()) // names the kernel, what it lacks, and the VM
		}
		// DCTCP's marking is a step at K (DCTCP paper §3.1): every frame over 30 KB of queue. The spec's RED
		// wants kmin < kmax, so the ramp is 1 KB wide, less than a 9 KB frame. (kmax equal to kmin, as
		// written before, was refused by the spec; no kernel this ran on had DCTCP until the VM's.)
		r, err := bench.RunKernel(ctx, labName("dctcp"), chain(ctx, "dctcp", ", ecn: {kmin: 30KB, kmax: 31KB, pmax: 1}", "10MB"), 1)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("dctcp", fmt.Sprintf("switch CE marks %d, sender delivered_ce %d of %d segments, retransmits %d",
			r.Marked, r.Stats[0].DeliveredCE, r.Stats[0].Delivered, r.Flows[0].Retransmits))
		Expect(r.Flows[0].Completed).To(BeTrue())
		Expect(r.Stats[0].CC).To(Equal("dctcp"))
		Expect(r.Marked).To(BeNumerically(">", 0))
		Expect(r.Stats[0].DeliveredCE).To(BeNumerically(">", 0))
	})
})

var _ = Describe("lab bench", func() {
	It("measures frames/s through the agent's Go switch and a Linux bridge on the same veths", Label("smoke"), func(ctx SpecContext) {
		r, err := bench.FramesPerSecond(context.Background(), bench.FramesOptions{Lab: labName("fps")})
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("frames/s", fmt.Sprintf("bridge %.0f, Go switch %.0f, ratio %.3f (agent read %d, drops %d)",
			r.BridgeFPS, r.SwitchFPS, r.Ratio, r.SwitchRx, r.SwitchDrops))
		Expect(r.BridgeFPS).To(BeNumerically(">", 0))
		Expect(r.SwitchFPS).To(BeNumerically(">", 0))
		Expect(r.SwitchRx).To(BeNumerically(">", 0), "the agent's switch read no frame")
		Expect(r.Malformed).To(BeZero(), "the switch could not decode generated frames")
	})
})

// ringFlows is chain's ring with one 5 MB cubic flow per switch hop, h0 -> h1 -> h2 -> h0: every
// switch-to-switch link carries one, so however two agents split the three switches, flows cross the
// cut, each on an idle path of its own (their FCTs are the link's, not a contention's). Three flows
// are three times chain's frames in one agent: at dilation 2000 one agent was unfaithful 3 times in 3
// at load average 18 on 2 cores (timer lag 0.9-2.9 ms), so the ring runs at 4000 (25 Mb/s links,
// half a 9 KB frame 1.44 ms).
func ringFlows(ctx context.Context) *lab.Lab {
	y := `name: kring
backend: netns
dilation: 4000
topology: {family: ring, n: 3, hosts_per_switch: 1, link: {rate: 100Gbps, delay: 1us}}
switch: {buffer: 4MB, flow_control: lossy}
host: {transport: kernel-tcp, cc: cubic, mtu: 9000}
routing: {algorithm: shortest}
workload:
  - {kind: flows, list: [{src: h0, dst: h1, size: 5MB, at: 0s}, {src: h1, dst: h2, size: 5MB, at: 0s}, {src: h2, dst: h0, size: 5MB, at: 0s}]}
duration: 1s
`
	s, err := spec.Parse([]byte(y))
	Expect(err).NotTo(HaveOccurred())
	l, err := lab.Build(s)
	Expect(err).NotTo(HaveOccurred())
	return dilated(ctx, l, 1) // one agent: the runs with two need less of each
}

var _ = Describe("kernel TCP through two agents in lockstep", func() {
	It("completes the same flows as one agent, FCT within 3%, full-size frames across the cut, none late", func(ctx SpecContext) {
		l := ringFlows(ctx)
		// A late frame costs its flow about a frame time: at most 1% of them late keeps either run's own
		// distortion well inside the 3% asked of the two (under load, runs the verdict passed with
		// 2-5% of frames late were 3-5% slower).
		one := runFaithful(ctx, labName("a1"), l, 1, 0.01)
		two := runFaithful(ctx, labName("a2"), l, 2, 0.01)
		Expect(one.Agents).To(Equal(1))
		Expect(two.Agents).To(Equal(2))
		m := two.Monitor
		AddReportEntry("cut", fmt.Sprintf("%d cross-agent frames, %d late, %d lost, %d bad stamps; %d of %d frames left late (one agent: %d of %d)",
			m.CrossFrames, m.LateCross, m.LostCross, m.BadStamps, m.LateFrames, m.Frames, one.Monitor.LateFrames, one.Monitor.Frames))
		Expect(m.CrossFrames).To(BeNumerically(">", 0), "no frame crossed between the agents: the spec tests nothing")
		Expect(m.LateCross).To(BeZero())
		Expect(m.LostCross).To(BeZero())
		Expect(m.Malformed).To(BeZero(), "a stamped full-size frame did not fit the cut link (bad stamps %d)", m.BadStamps)
		Expect(two.Flows).To(HaveLen(len(one.Flows)))
		var sum1, sum2 float64
		for i, f := range one.Flows {
			g := two.Flows[i]
			Expect(g.ID).To(Equal(f.ID))
			Expect(f.Completed).To(BeTrue(), "flow %d, one agent", f.ID)
			Expect(g.Completed).To(BeTrue(), "flow %d, two agents", g.ID)
			AddReportEntry(fmt.Sprintf("flow %d", f.ID), fmt.Sprintf("FCT one agent %v, two %v (retransmits %d, %d)",
				f.FCT(), g.FCT(), f.Retransmits, g.Retransmits))
			sum1 += f.FCT().Seconds()
			sum2 += g.FCT().Seconds()
		}
		Expect(sum2/sum1).To(BeNumerically("~", 1, 0.03), "mean FCT two agents / one agent")
	})
})
