package live_test

import (
	"os/exec"
	"strings"

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
		Expect(strings.Contains(lab("status"), name)).To(BeTrue())
	})
})
