package netns_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// baselineRow is one run of `lab bench --baseline`'s table: binary, frames, CPU seconds, frame-hops per
// CPU-second, wall seconds, verdict.
var baselineRow = regexp.MustCompile(`(?m)^\s+(this|baseline)\s+(\d+)\s+([0-9.]+)\s+(\d+)\s+([0-9.]+)\s+(\S+)`)

var _ = Describe("lab bench --baseline", Label("netns", "smoke"), func() {
	It("runs one spec with two lab binaries and measures both the same way", func() {
		bin, err := labBinary()
		Expect(err).NotTo(HaveOccurred())
		// The binary against itself: the two sides must agree on the frames the workload makes, and
		// each must have counted agent CPU and be judged faithful.
		out, err := exec.Command(bin, "bench", "--fabric", "ndc", "n=2", "k=1", "--duration", "300us",
			"--baseline", bin, "--name", fmt.Sprintf("bb%d", os.Getpid())).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		GinkgoWriter.Printf("%s", out)
		rows := baselineRow.FindAllStringSubmatch(string(out), -1)
		Expect(rows).To(HaveLen(2), "%s", out)
		frames := map[string]float64{}
		for _, r := range rows {
			n, _ := strconv.ParseFloat(r[2], 64)
			cpu, _ := strconv.ParseFloat(r[3], 64)
			frames[r[1]] = n
			Expect(n).To(BeNumerically(">", 1000), "%s: frames", r[1])
			Expect(cpu).To(BeNumerically(">", 0), "%s: no agent CPU counted", r[1])
			Expect(r[6]).To(Equal("faithful"), "%s", out)
		}
		Expect(frames["this"]).To(BeNumerically("~", frames["baseline"], frames["this"]/100), "the same spec, the same binary: frames within 1%%")
		Expect(string(out)).To(MatchRegexp(`this/baseline \(.*\) frames per CPU-second [0-9.]+x \(mean of 1 side-by-side pairs\)`))
	})

	It("refuses a baseline that is not a fabriclab binary, naming it", func() {
		bin, err := labBinary()
		Expect(err).NotTo(HaveOccurred())
		out, err := exec.Command(bin, "bench", "--fabric", "ndc", "n=2", "k=1", "--duration", "100us",
			"--baseline", "/bin/true", "--name", fmt.Sprintf("bc%d", os.Getpid())).CombinedOutput()
		Expect(err).To(HaveOccurred())
		Expect(string(out)).To(ContainSubstring("/bin/true"))
	})
})
