package cluster_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// lab runs the coordinator's lab binary and returns its combined output.
func lab(args ...string) (string, error) {
	b, err := exec.Command(labBin, args...).CombinedOutput()
	GinkgoWriter.Printf("lab %s:\n%s\n", strings.Join(args, " "), b)
	return string(b), err
}

// bareMachine says machine m holds nothing of any lab: no namespace mounted under /run/netns, no state
// directory, no hosts file under /etc/netns, and no interface beyond its own lo and eth0 in the agent
// server's network namespace (a VXLAN end left there, or the server's main thread parked in a lab's
// namespace, would show). Read from this host through the container's /proc/PID/root and its PID's
// network namespace.
func bareMachine(m string) {
	pid := mustDocker("inspect", "-f", "{{.State.Pid}}", tag+"-"+m)
	for _, d := range []string{"/run/netns", "/run/fabriclab", "/etc/netns"} {
		ents, err := os.ReadDir(filepath.Join("/proc", pid, "root", d))
		if err != nil && !os.IsNotExist(err) {
			Fail(fmt.Sprintf("machine %s: reading %s: %v", m, d, err)) // a check that read nothing must not pass
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		Expect(names).To(BeEmpty(), "machine %s: %s still holds %v", m, d, names)
	}
	// The kernel removes a namespace's devices after its last reference goes, asynchronously: on a loaded
	// machine `ip link` may still meet them a moment after the lab is down ("Peer netns reference is
	// invalid"), so the check waits for them to go, as long as nothingOn waits for the lab.
	Eventually(func(g Gomega) {
		out, err := exec.Command("nsenter", "-t", pid, "-n", "ip", "-o", "link").CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
		g.Expect(strings.Count(strings.TrimSpace(string(out)), "\n")+1).To(Equal(2), "machine %s: links left:\n%s", m, out)
	}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
}

type liveInspect struct {
	Machines []struct {
		Name    string   `json:"name"`
		Devices []string `json:"devices"`
	} `json:"machines"`
	Devices []struct {
		Name  string `json:"name"`
		Ports []struct {
			Port    int    `json:"port"`
			Peer    string `json:"peer"`
			Fault   string `json:"fault"`
			Capture string `json:"capture"`
		} `json:"ports"`
	} `json:"devices"`
	Hosts []struct {
		Name    string `json:"name"`
		Address string `json:"address"`
	} `json:"hosts"`
}

func inspectLab(name string) liveInspect {
	out, err := lab("inspect", name, "--json")
	Expect(err).NotTo(HaveOccurred(), out)
	var in liveInspect
	Expect(json.Unmarshal([]byte(out), &in)).To(Succeed())
	return in
}

// faultsBetween are the fault columns of the two ends of the cable between switches a and b.
func faultsBetween(in liveInspect, a, b string) []string {
	var out []string
	for _, d := range in.Devices {
		for _, p := range d.Ports {
			if peer, _, _ := strings.Cut(p.Peer, ":"); d.Name == a && peer == b || d.Name == b && peer == a {
				out = append(out, p.Fault)
			}
		}
	}
	return out
}

// hostsApart names a host on each of a live lab's first two machines (lab inspect --json).
func hostsApart(name string) (string, string) {
	out, err := lab("inspect", name, "--json")
	Expect(err).NotTo(HaveOccurred(), out)
	var in liveInspect
	Expect(json.Unmarshal([]byte(out), &in)).To(Succeed())
	Expect(len(in.Machines)).To(BeNumerically(">=", 2))
	host := func(i int) string {
		for _, d := range in.Machines[i].Devices {
			if strings.HasPrefix(d, "h") {
				return d
			}
		}
		Fail("machine " + in.Machines[i].Name + " hosts no host")
		return ""
	}
	return host(0), host(1)
}

// startFlowServer starts `lab exec name dev -- lab flow serve --count 0` (a server that runs until
// ended) and waits until it listens.
func startFlowServer(name, dev, port string) *exec.Cmd {
	cmd := exec.Command(labBin, "exec", name, dev, "--", "lab", "flow", "serve", "--count", "0", "--port", port)
	var buf syncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() { cmd.Process.Kill() })
	Eventually(buf.String, 10*time.Second, 50*time.Millisecond).Should(ContainSubstring("listening"))
	Expect(flowServers()).To(Equal(1))
	return cmd
}

// flowServers counts the `lab flow serve --count 0` processes on the live lab machines (docker top).
func flowServers() int {
	n := 0
	for _, m := range []string{"l1", "l2"} {
		n += strings.Count(mustDocker("top", tag+"-"+m), "flow serve --count 0")
	}
	return n
}

// authenticated counts the connections the live lab machines' servers have accepted (their logs).
func authenticated() int {
	n := 0
	for _, m := range []string{"l1", "l2"} {
		n += strings.Count(mustDocker("logs", tag+"-"+m), "authenticated")
	}
	return n
}

var _ = Describe("A live lab over several machines", Ordered, ContinueOnFailure, func() {
	BeforeAll(func() {
		startAgent("l1", netName)
		startAgent("l2", netName)
	})

	It("comes up on two machines, carries a flow between them, runs commands where a device lives, and goes down leaving nothing", Label("smoke"), func() {
		name := "lv2-" + tag[len(tag)-4:]
		out, err := lab("up", "fattree", "k=4", "--name", name, "--cluster", clusterFile("lv2", "secret.key", "l1", "l2"))
		Expect(err).NotTo(HaveOccurred(), out)
		DeferCleanup(func() { lab("down", name) })
		Expect(out).To(ContainSubstring("over 2 machines"))
		out, err = lab("status")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`lab %s \(fattree, live over 2 machines of .*\): up \(live\)`, name))
		for _, m := range []string{"l1", "l2"} {
			o, _ := docker("exec", tag+"-"+m, "/lab", "status")
			Expect(o).To(ContainSubstring(name), "machine %s has its share", m)
		}
		src, dst := hostsApart(name)
		in := inspectLab(name)
		port, on := edgePort(in, dst)
		Expect(on).To(Equal("l2"))
		pcap := filepath.Join(dir, name+".pcap")
		capt, cbuf := startCapture(name, port, "-w", pcap)
		Expect(captureFiles(on, name)).To(HaveLen(1), "machine %s writes the capture", on)

		// The flow server runs on dst's machine, asked over the control channel; its output streams back.
		srv := exec.Command(labBin, "exec", name, dst, "--", "lab", "flow", "serve")
		var sbuf syncBuffer
		srv.Stdout, srv.Stderr = &sbuf, &sbuf
		Expect(srv.Start()).To(Succeed())
		Eventually(sbuf.String, 10*time.Second, 50*time.Millisecond).Should(ContainSubstring("listening"))
		out, err = lab("exec", name, src, "--", "lab", "flow", "send", dst, "--size", "1MB", "--pings", "5")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`rtt min/avg/max [\d.]+/[\d.]+/[\d.]+ ms`))
		Expect(out).To(MatchRegexp(`flow 1MB to %s in [\d.]+ s`, dst))
		done := make(chan error, 1)
		go func() { done <- srv.Wait() }()
		Eventually(done, 10*time.Second).Should(Receive(BeNil()))
		// The receiver is dst itself (its address), and the sender src's: the command ran in dst's namespace.
		Expect(sbuf.String()).To(MatchRegexp(`flow from 198\.18\.\d+\.\d+:\d+: 1MB in`))

		// Ctrl-C ends the capture as on one machine: the pcap, written here, holds the flow's frames from
		// src's address to dst's (all its bytes) and dst's answers, and the machine keeps nothing of it.
		// Streamed while it runs: the flow's megabyte is here before the capture is stopped.
		Eventually(func() int64 {
			fi, err := os.Stat(pcap)
			if err != nil {
				return 0
			}
			return fi.Size()
		}, 5*time.Second, 50*time.Millisecond).
			Should(BeNumerically(">", 1000000))
		Expect(capt.Process.Signal(os.Interrupt)).To(Succeed())
		waitCapture(capt, cbuf)
		Expect(cbuf.String()).To(ContainSubstring("captured on machine l2"))
		c := pcapBetween(pcap, hostAddr(in, src), hostAddr(in, dst))
		Expect(c.tcpAB).To(BeNumerically(">=", 1000000), "the 1MB flow's bytes")
		Expect(c.ba).To(BeNumerically(">", 0), "dst's acknowledgements")
		Expect(captureFiles(on, name)).To(BeEmpty())
		Expect(portCapture(name, port)).To(BeEmpty())

		// The command's exit status is lab exec's; a device the lab does not have is named.
		cmd := exec.Command(labBin, "exec", name, dst, "--", "/no/such/program")
		b, err := cmd.CombinedOutput()
		Expect(err).To(HaveOccurred())
		Expect(cmd.ProcessState.ExitCode()).To(Equal(127), "%s", b)
		out, err = lab("exec", name, "h99", "--", "lab", "flow", "send", dst)
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring(`has no device "h99"`))

		// A command lab exec runs ends when its client goes, and when the lab goes down (lab exec then
		// returns): nothing of it runs on the machine.
		gone := startFlowServer(name, dst, "5302")
		Expect(gone.Process.Kill()).To(Succeed())
		gone.Wait()
		Eventually(flowServers, 10*time.Second, 100*time.Millisecond).Should(BeZero(), "a command whose lab exec was killed")
		held := startFlowServer(name, dst, "5303")
		heldDone := make(chan error, 1)
		go func() { heldDone <- held.Wait() }()

		out, err = lab("down", name)
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(heldDone, 10*time.Second).Should(Receive(HaveOccurred()), "lab exec of a command in a lab brought down")
		Expect(flowServers()).To(BeZero(), "a command in a lab brought down")
		Expect(out).To(ContainSubstring("down on l1"))
		Expect(out).To(ContainSubstring("down on l2"))
		out, _ = lab("status")
		Expect(out).NotTo(ContainSubstring(name))
		nothingOn("l1")
		nothingOn("l2")
	})

	It("carries ping and iperf3 between hosts on different machines, and fails a cable between machines at both ends (lab pingall, iperf, link)", func() {
		name := "lvp-" + tag[len(tag)-4:]
		out, err := lab("up", "fattree", "k=4", "--name", name, "--cluster", clusterFile("lvp", "secret.key", "l1", "l2"))
		Expect(err).NotTo(HaveOccurred(), out)
		DeferCleanup(func() { lab("down", name) })
		conns := authenticated()
		out, err = lab("pingall", name)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("pingall: 240 of 240 host pairs answered"))
		// Its connections are reused: at most one per ping running at once (8) on each machine.
		conns = authenticated() - conns
		GinkgoWriter.Printf("lab pingall opened %d connections\n", conns)
		Expect(conns).To(BeNumerically("<=", 16), "connections lab pingall opened")
		src, dst := hostsApart(name)
		captureRefusals(name)
		// A capture whose lab capture is killed ends on the machine too (the agent stops, the file goes);
		// while it runs, a second capture of the port is refused.
		in0 := inspectLab(name)
		port, on := edgePort(in0, src)
		killed, _ := startCapture(name, port, "-w", filepath.Join(dir, "killed.pcap"))
		out, err = lab("capture", name, port, "-w", filepath.Join(dir, "busy.pcap"), "--for", "1s")
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("another lab capture is capturing it"))
		Expect(portCapture(name, port)).NotTo(BeEmpty())
		Expect(killed.Process.Kill()).To(Succeed())
		killed.Wait()
		Eventually(func() []string { return captureFiles(on, name) }, 15*time.Second, 100*time.Millisecond).Should(BeEmpty())
		Eventually(func() string { return portCapture(name, port) }, 15*time.Second, 100*time.Millisecond).Should(BeEmpty())

		// --for ends a capture as on one machine; iperf3's frames between src and dst are in it.
		pcap := filepath.Join(dir, name+".pcap")
		capt, cbuf := startCapture(name, port, "-w", pcap, "--for", "3s")
		t0 := time.Now()
		out, err = lab("iperf", name, src, dst, "-t", "2")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`[\d.]+ Mbits/sec .*receiver`))
		waitCapture(capt, cbuf)
		Expect(time.Since(t0)).To(BeNumerically("<", 20*time.Second))
		c := pcapBetween(pcap, hostAddr(in0, src), hostAddr(in0, dst))
		Expect(c.tcpAB).To(BeNumerically(">", 100000))
		Expect(c.ba).To(BeNumerically(">", 0))
		Expect(captureFiles(on, name)).To(BeEmpty())

		// A cable between switches on different machines fails at both ends (each its machine's agent),
		// the tables are recomputed around it, and the hosts still reach each other.
		in := inspectLab(name)
		at := map[string]string{}
		for _, m := range in.Machines {
			for _, d := range m.Devices {
				at[d] = m.Name
			}
		}
		var a, b string
		for _, d := range in.Devices {
			for _, p := range d.Ports {
				if peer, _, _ := strings.Cut(p.Peer, ":"); a == "" && strings.HasPrefix(peer, "s") && at[peer] != at[d.Name] {
					a, b = d.Name, peer
				}
			}
		}
		Expect(a).NotTo(BeEmpty(), "no cable between machines")
		out, err = lab("link", name, a, b, "down")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(faultsBetween(inspectLab(name), a, b)).To(Equal([]string{"down", "down"}))
		out, err = lab("pingall", name)
		Expect(err).NotTo(HaveOccurred(), out)
		out, err = lab("link", name, a, b, "up")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(faultsBetween(inspectLab(name), a, b)).To(Equal([]string{"", ""}))

		// lab down under a running capture: the capture fails naming why, and its file goes with the lab.
		capt, cbuf = startCapture(name, port, "-w", filepath.Join(dir, name+"-down.pcap"))
		out, err = lab("down", name)
		Expect(err).NotTo(HaveOccurred(), out)
		done := make(chan error, 1)
		go func() { done <- capt.Wait() }()
		Eventually(done, 15*time.Second).Should(Receive(HaveOccurred()), "lab capture: %s", cbuf)
		GinkgoWriter.Printf("lab capture under lab down:\n%s\n", cbuf)
		Expect(cbuf.String()).To(ContainSubstring(fmt.Sprintf("lab %s was brought down on this machine", name)))
		nothingOn("l1")
		nothingOn("l2")
	})

	It("refuses bad input before anything is made, naming what is wrong", func() {
		name := "lvbad-" + tag[len(tag)-4:]
		good := clusterFile("lvgood", "secret.key", "l1", "l2")
		bad := filepath.Join(dir, "lvbad.yaml")
		Expect(os.WriteFile(bad, []byte("secret: secret.key\nmachines:\n  - {name: l1, control: \"nope\"}\n"), 0o644)).To(Succeed())
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"up", "fattree", "k=4", "--name", name, "--cluster", bad}, "machines[0].control"},
			{[]string{"up", "fattree", "k=4", "--name", name, "--cluster", filepath.Join(dir, "absent.yaml")}, "absent.yaml"},
			{[]string{"up", "fattree", "k=3", "--name", name, "--cluster", good}, "k=3: must be even"},
			{[]string{"up", "fattree", "k=4", "--name", "Bad_Name", "--cluster", good}, `invalid lab name "Bad_Name"`},
			{[]string{"up", "fattree", "k=4", "--bare", "--name", name, "--cluster", good}, "--bare"},
			{[]string{"up", "fattree", "k=4", "--name", name, "--cluster", clusterFile("lvwrong", "wrong.key", "l1", "l2")}, "authentication failed"},
		} {
			out, err := lab(c.args...)
			Expect(err).To(HaveOccurred(), "lab %s: %s", strings.Join(c.args, " "), out)
			Expect(out).To(ContainSubstring(c.want), "lab %s", strings.Join(c.args, " "))
		}
		out, _ := lab("status")
		Expect(out).NotTo(ContainSubstring(name))
		nothingOn("l1")
		nothingOn("l2")
	})

	It("leaves nothing on any machine when the coordinator's supervisor is killed", func() {
		name := "lvk-" + tag[len(tag)-4:]
		out, err := lab("up", "fattree", "k=4", "--name", name, "--cluster", clusterFile("lvk", "secret.key", "l1", "l2"))
		Expect(err).NotTo(HaveOccurred(), out)
		DeferCleanup(func() { lab("down", name) })
		b, err := os.ReadFile(filepath.Join("/run/fabriclab/_cluster", name, "supervisor"))
		Expect(err).NotTo(HaveOccurred())
		pid, err := strconv.Atoi(strings.Fields(string(b))[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
		Eventually(func() string { o, _ := docker("exec", tag+"-l1", "/lab", "status"); return o }, 10*time.Second).Should(Equal("no labs"))
		nothingOn("l1")
		nothingOn("l2")
		out, _ = lab("status")
		Expect(out).To(ContainSubstring(fmt.Sprintf("lab %s (live over machines): damaged: its supervisor does not answer", name)))
		out, err = lab("down", name)
		Expect(err).NotTo(HaveOccurred(), out)
		out, _ = lab("status")
		Expect(out).NotTo(ContainSubstring(name))
	})

	It("reports a machine lost, and removes the lab from the others", func() {
		startAgent("l3", netName)
		name := "lv3-" + tag[len(tag)-4:]
		out, err := lab("up", "fattree", "k=4", "--name", name, "--cluster", clusterFile("lv3", "secret.key", "l1", "l2", "l3"))
		Expect(err).NotTo(HaveOccurred(), out)
		DeferCleanup(func() { lab("down", name) })
		mustDocker("kill", tag+"-l3")
		Eventually(func() string { o, _ := lab("status"); return o }, 20*time.Second, 200*time.Millisecond).
			Should(MatchRegexp(`lab %s .*: down: machine l3 lost \(.*\); the lab was removed from l1, l2`, name))
		out, _ = lab("status")
		Expect(out).To(MatchRegexp(`l3 .* LOST `))
		out, err = lab("exec", name, "h0", "--", "lab", "flow", "send", "h15")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring(fmt.Sprintf("lab %s is down: machine l3 lost", name)))
		nothingOn("l1")
		nothingOn("l2")
		out, err = lab("down", name)
		Expect(err).NotTo(HaveOccurred(), out)
		out, _ = lab("status")
		Expect(out).NotTo(ContainSubstring(name))
	})
})
