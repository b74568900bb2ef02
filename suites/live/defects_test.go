package live_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Issue 23's live-lab defects, on one small lab (ring of 3 switches, one host each).
var _ = Describe("live lab conveniences and counters", Ordered, func() {
	var name string
	BeforeAll(func() {
		name = labName("ring")
		lab("up", "ring", "n=3", "hosts_per_switch=1", "--name", name, "-q")
		DeferCleanup(func() { exec.Command(labBin, "down", name).Run() })
	})

	It("counts malformed frames written into a port, per port, in inspect's table and --json (defect 8)", func() {
		// 40 frames of random bytes behind an IPv4 ethertype, written raw onto h0's cable.
		lab("exec", name, "h0", "--", "python3", "-c", `
import socket, os
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("p0", 0))
for i in range(40):
    s.send(os.urandom(6) + bytes.fromhex("020000000001") + b"\x08\x00" + os.urandom(40))
`)
		Eventually(func() uint64 { return port(inspect(name), "s0", 0).Malformed }).Should(BeNumerically(">=", 40))
		Expect(port(inspect(name), "s1", 0).Malformed).To(BeZero())
		Expect(lab("inspect", name)).To(MatchRegexp(`s0:p0 .*malformed=\d+`))
		got, _ := ping(name, "h0", "h2", 2)
		Expect(got).To(Equal(2), "the agent survived the garbage and still forwards")
	})

	It("status shows the live lab up with its supervisor and agent, in snake_case JSON", func() {
		Expect(lab("status")).To(MatchRegexp(name + `\s+ring\s+up \(live\)\s+6/6\s+6/6\s+\d+,\d+`))
		var sts []map[string]any
		Expect(json.Unmarshal([]byte(lab("status", "--json")), &sts)).To(Succeed())
		var me map[string]any
		for _, s := range sts {
			if s["lab"] == name {
				me = s
			}
		}
		Expect(me).NotTo(BeNil())
		Expect(me["processes"]).To(HaveLen(2))
		Expect(me).To(HaveKey("pid_alive"))
	})

	It("lists host addresses; pingall reaches every pair; iperf starts its own server", func() {
		in := inspect(name)
		Expect(in.Hosts).To(HaveLen(3))
		Expect(in.Hosts[0].Address).To(Equal("198.18.0.1"))
		Expect(lab("inspect", name)).To(ContainSubstring("h2 198.18.0.3 (p0)"))
		Expect(lab("pingall", name)).To(ContainSubstring("6 of 6 host pairs answered"))
		out := lab("iperf", name, "h0", "h2", "-t", "2")
		Expect(out).To(MatchRegexp(`receiver`))
		m := regexp.MustCompile(`([\d.]+) Mbits/sec\s+receiver`).FindStringSubmatch(out)
		Expect(m).NotTo(BeNil(), out)
		mbps, _ := strconv.ParseFloat(m[1], 64)
		AddReportEntry("lab iperf h0 -> h2 (100 Mb/s emulated)", fmt.Sprintf("%.1f Mb/s", mbps))
		Expect(mbps).To(BeNumerically(">", 20))
		Expect(mbps).To(BeNumerically("<", 105), "above the emulated 100 Mb/s")
	})

	It("link set delay is in the fabric's time (dilated); link down counts the switches of this fabric", func() {
		_, before := ping(name, "h0", "h1", 3)
		lab("link", name, "s0", "s1", "set", "delay=1us") // 1 ms at D=1000, each way s0 -> s1 and s1 -> s0
		_, after := ping(name, "h0", "h1", 3)
		AddReportEntry("RTT h0-h1 before/after set delay=1us", fmt.Sprintf("%.3f / %.3f ms", before, after))
		Expect(after - before).To(BeNumerically(">", 1.5))
		Expect(after - before).To(BeNumerically("<", 3))
		lab("link", name, "s0", "s1", "up")
		Expect(lab("link", name, "s0", "s1", "down")).To(MatchRegexp(`ECMP recomputed: \d of 3 switches changed tables`))
		lab("link", name, "s0", "s1", "up")
	})

	It("says a lab does not exist in its own words (not down's)", func() {
		out, err := exec.Command(labBin, "exec", "nosuch"+runTag, "h0", "--", "true").CombinedOutput()
		Expect(err).To(HaveOccurred())
		Expect(string(out)).To(ContainSubstring("no lab"))
		Expect(string(out)).NotTo(ContainSubstring("remove"))
	})
})
