package cluster_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Machines that fail mid-run, as they do: a network cut (docker network disconnect, not reconnected),
// a freeze (docker pause, 75 s: longer than the old 60 s stall detector), a coordinator container
// killed. The bounds asserted are the ones docs/architecture.md §Failure detection promises:
// coordinator out with partial results within 20 s, the reachable machines empty within 10 s of it, a
// machine cut off from its coordinator empty on its own within 60 s. Labelled failure, not smoke: each
// spec runs a 30-second lab and the freeze waits 75 s.
var _ = Describe("Machines that fail", Ordered, ContinueOnFailure, Label("failure"), func() {
	long := strings.Replace(incast, "size: 200KB", "size: 20MB", 1) // about 30 s of wall time
	var specPath string
	BeforeAll(func() {
		specPath = filepath.Join(dir, "long-fail.yaml")
		Expect(os.WriteFile(specPath, []byte(long), 0o644)).To(Succeed())
	})

	// startLong starts the long run over machines and returns once it runs; wait waits for its exit.
	startLong := func(out, name string, machines ...string) (wait func(time.Duration) (error, time.Duration), buf *syncBuffer) {
		cmd := exec.Command(labBin, "run", specPath, "-o", out, "--name", name+"-"+tag[len(tag)-4:],
			"--cluster", clusterFile(name, "secret.key", machines...))
		buf = &syncBuffer{}
		cmd.Stdout, cmd.Stderr = buf, buf
		Expect(cmd.Start()).To(Succeed())
		DeferCleanup(func() { cmd.Process.Signal(syscall.SIGKILL) })
		Eventually(buf.String, 60*time.Second, 100*time.Millisecond).Should(ContainSubstring("running"))
		time.Sleep(2 * time.Second)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		return func(within time.Duration) (error, time.Duration) {
			t0 := time.Now()
			select {
			case err := <-done:
				return err, time.Since(t0)
			case <-time.After(within):
				Fail("the coordinator did not exit within " + within.String() + ":\n" + buf.String())
			}
			return nil, 0
		}, buf
	}

	// partialNaming asserts out is a partial run directory that names machine m lost.
	partialNaming := func(out, m string) {
		var ri runInfo
		readJSON(filepath.Join(out, "run.json"), &ri)
		Expect(ri.Partial).To(BeTrue(), "run.json partial")
		Expect(ri.Faithful).To(BeFalse())
		Expect(ri.Lost).To(HaveLen(1))
		Expect(ri.Lost[0]).To(ContainSubstring("machine " + m))
		Expect(ri.MeasuredUntil).To(BeNumerically(">", 0), "run.json measured_until_s: the last agreed window")
		var s summary
		readJSON(filepath.Join(out, "summary.json"), &s) // what was measured up to the stop
	}

	// noLabWithin asserts machine m holds no lab within d (its own `lab status`).
	noLabWithin := func(m string, d time.Duration) time.Duration {
		t0 := time.Now()
		Eventually(func() string { o, _ := docker("exec", tag+"-"+m, "/lab", "status"); return o }, d, 200*time.Millisecond).
			Should(Equal("no labs"), "machine %s still has a lab after %v", m, d)
		return time.Since(t0)
	}
	// emptyWithin: no lab, and nothing of one (bareMachine: on a machine with its underlay).
	emptyWithin := func(m string, d time.Duration) time.Duration {
		took := noLabWithin(m, d)
		bareMachine(m)
		return took
	}

	// servesAgain asserts machine m runs the next lab without a restart (the short incast, with m1).
	servesAgain := func(m string) {
		ips[m] = mustDocker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", tag+"-"+m)
		out, d, err := run(incast, "--cluster", clusterFile("again-"+m, "secret.key", "m1", m))
		Expect(err).NotTo(HaveOccurred(), out)
		var ri runInfo
		readJSON(filepath.Join(d, "run.json"), &ri)
		Expect(ri.Partial).To(BeFalse())
		emptyWithin("m1", 10*time.Second)
		emptyWithin(m, 10*time.Second)
	}

	It("ends a run with partial results when a machine is cut off, and every machine empties itself; reconnected, it serves the next run", func() {
		out := filepath.Join(dir, "cut")
		wait, buf := startLong(out, "clcut", "m1", "m2", "m3")
		mustDocker("network", "disconnect", netName, tag+"-m2")
		cut := time.Now()
		err, took := wait(20 * time.Second)
		Expect(err).To(HaveOccurred(), buf.String())
		Expect(buf.String()).To(ContainSubstring("partial results"))
		partialNaming(out, "m2")
		GinkgoWriter.Printf("cut: coordinator exited %v after the cut\n", took)
		for _, m := range []string{"m1", "m3"} {
			GinkgoWriter.Printf("cut: %s empty %v after the coordinator exited\n", m, emptyWithin(m, 10*time.Second))
		}
		GinkgoWriter.Printf("cut: m2 (cut off) holds no lab %v after the cut\n", time.Since(cut)+noLabWithin("m2", 60*time.Second-time.Since(cut)))
		mustDocker("network", "connect", netName, tag+"-m2")
		servesAgain("m2")
	})

	It("ends a run with partial results when a machine freezes for 75 s, never waiting for it; thawed, it empties itself and serves the next run", func() {
		out := filepath.Join(dir, "frozen")
		wait, buf := startLong(out, "clfrz", "m1", "m2", "m3")
		mustDocker("pause", tag+"-m2")
		frozen := time.Now()
		DeferCleanup(func() { docker("unpause", tag+"-m2") })
		err, took := wait(20 * time.Second)
		Expect(err).To(HaveOccurred(), buf.String())
		Expect(buf.String()).To(ContainSubstring("partial results"))
		partialNaming(out, "m2")
		GinkgoWriter.Printf("freeze: coordinator exited %v after the freeze\n", took)
		for _, m := range []string{"m1", "m3"} {
			GinkgoWriter.Printf("freeze: %s empty %v after the coordinator exited\n", m, emptyWithin(m, 10*time.Second))
		}
		time.Sleep(75*time.Second - time.Since(frozen))
		mustDocker("unpause", tag+"-m2")
		GinkgoWriter.Printf("freeze: m2 empty %v after the thaw\n", emptyWithin("m2", 60*time.Second))
		servesAgain("m2")
	})

	It("reclaims the unfinished run directory of a coordinator container killed mid-run, and leaves nothing on the machines", func() {
		// The coordinator in a container of its own, writing into a directory of this host.
		work := filepath.Join(dir, "coordwork")
		Expect(os.MkdirAll(work, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(work, "long.yaml"), []byte(long), 0o644)).To(Succeed())
		b, err := os.ReadFile(clusterFile("ckill", "secret.key", "m1", "m3"))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(work, "cluster.yaml"), []byte(strings.Replace(string(b), "secret: secret.key", "secret: /run/secrets/fabriclab", 1)), 0o644)).To(Succeed())
		c := tag + "-coord"
		mustDocker("run", "-d", "--name", c, "--network", netName, "-v", work+":/work",
			"-v", filepath.Join(dir, "secret.key")+":/run/secrets/fabriclab:ro", image,
			"run", "/work/long.yaml", "-o", "/work/results/killed", "--name", "clck-"+tag[len(tag)-4:], "--cluster", "/work/cluster.yaml")
		made = append(made, c)
		Eventually(func() string { o, _ := docker("logs", c); return o }, 60*time.Second, 200*time.Millisecond).Should(ContainSubstring("running"))
		time.Sleep(2 * time.Second)
		mustDocker("kill", c)
		for _, m := range []string{"m1", "m3"} {
			GinkgoWriter.Printf("coordinator killed: %s empty %v after\n", m, emptyWithin(m, 10*time.Second))
		}
		left, _ := filepath.Glob(filepath.Join(work, "results", ".killed.incomplete-*"))
		Expect(left).To(HaveLen(1), "the killed coordinator's unfinished run directory")
		owner, err := os.ReadFile(filepath.Join(left[0], ".owner"))
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("its owner file: %s", owner)
		// The next run into the same directory, from this host (another host name, another PID
		// namespace), reclaims it.
		virt := filepath.Join(dir, "virtual.yaml")
		Expect(os.WriteFile(virt, []byte("name: next\nbackend: virtual\ntopology: {family: ndc, n: 4, k: 1}\nworkload: [{kind: incast, senders: 2, size: 10KB, receiver: h0, at: 0s}]\nduration: 1ms\n"), 0o644)).To(Succeed())
		o, err := exec.Command(labBin, "run", virt, "-o", filepath.Join(work, "results", "next")).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(o))
		Expect(left[0]).NotTo(BeADirectory(), "the dead coordinator's unfinished directory, after the next run")
	})

	It("runs when the coordinator starts before its agents (wait_for_agents), as a Kubernetes Job beside its StatefulSet may", func() {
		work := filepath.Join(dir, "earlywork")
		Expect(os.MkdirAll(work, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(work, "spec.yaml"), []byte(incast), 0o644)).To(Succeed())
		// The agents by their container names (Docker's DNS on the network): no such name resolves yet.
		cf := "secret: /run/secrets/fabriclab\nwait_for_agents: 2m\nmachines:\n" +
			"  - {name: m6, control: \"" + tag + "-m6:7070\"}\n  - {name: m7, control: \"" + tag + "-m7:7070\"}\n"
		Expect(os.WriteFile(filepath.Join(work, "cluster.yaml"), []byte(cf), 0o644)).To(Succeed())
		c := tag + "-early"
		mustDocker("run", "-d", "--name", c, "--network", netName, "-v", work+":/work",
			"-v", filepath.Join(dir, "secret.key")+":/run/secrets/fabriclab:ro", image,
			"run", "/work/spec.yaml", "-o", "/work/results/early", "--name", "cle-"+tag[len(tag)-4:], "--cluster", "/work/cluster.yaml")
		made = append(made, c)
		Eventually(func() string { o, _ := docker("logs", c); return o }, 30*time.Second, 200*time.Millisecond).Should(ContainSubstring("waiting for machine m"))
		time.Sleep(3 * time.Second)
		startAgent("m6", netName)
		startAgent("m7", netName)
		code, err := docker("wait", c)
		logs, _ := docker("logs", c)
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal("0"), "the coordinator started before its agents:\n%s", logs)
		Expect(filepath.Join(work, "results", "early", "run.json")).To(BeARegularFile())
		emptyWithin("m6", 10*time.Second)
		emptyWithin("m7", 10*time.Second)
	})

	It("ends a run with partial results when a machine's agent stalls while its server still answers", func() {
		out := filepath.Join(dir, "stalled")
		wait, buf := startLong(out, "clstl", "m1", "m2", "m3")
		// The agent is the lab binary re-executed without arguments (the server is "/lab agent serve").
		var agent string
		for _, line := range strings.Split(mustDocker("top", tag+"-m2", "-eo", "pid,args"), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[1] == "/lab" {
				agent = f[0]
			}
		}
		Expect(agent).NotTo(BeEmpty(), "no agent process on m2")
		Expect(exec.Command("kill", "-STOP", agent).Run()).To(Succeed())
		err, took := wait(80 * time.Second) // the 60 s stall limit, then partial results
		Expect(err).To(HaveOccurred(), buf.String())
		partialNaming(out, "m2")
		var ri runInfo
		readJSON(filepath.Join(out, "run.json"), &ri)
		Expect(ri.Lost[0]).To(ContainSubstring("stalled"))
		GinkgoWriter.Printf("stall: coordinator exited %v after the agent stopped\n", took)
		for _, m := range []string{"m1", "m2", "m3"} {
			GinkgoWriter.Printf("stall: %s empty %v after the coordinator exited\n", m, emptyWithin(m, 10*time.Second))
		}
		servesAgain("m2")
	})
})
