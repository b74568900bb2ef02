package netns_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/report"
)

// identityFiles are the files a netns run must write byte for byte as the virtual backend writes them
// (docs/architecture.md §Order of simultaneous events, §Fidelity).
var identityFiles = []string{"flows.csv", "fct.txt", "pfc.csv", "drops.csv"}

// virtualDir runs yaml on the virtual backend and writes its run directory.
func virtualDir(yaml string) (string, *report.Summary) {
	l := buildLab(yaml, "virtual")
	f, err := virtual.New(l)
	Expect(err).NotTo(HaveOccurred())
	res := f.Run(context.Background())
	dir := GinkgoT().TempDir()
	sum, err := report.WriteRunDir(dir, f.Log, report.Meta{Dilation: 1, Duration: res.End, Graph: l.Graph, Deadlock: res.Deadlock})
	Expect(err).NotTo(HaveOccurred())
	return dir, sum
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// Not runFaithful: identity comes from the engines' arithmetic and the order of simultaneous events,
// not from how promptly the loop ran, so a run on a loaded machine must be identical too; if it is
// not, the exact cross-check says so, and so does this spec.
var _ = Describe("netns backend: the virtual backend's run, flow by flow", Label("netns", "identity"), func() {
	DescribeTable("writes flows.csv, fct.txt, pfc.csv and drops.csv byte for byte as the virtual backend does",
		func(yaml string, agents int, lossless bool) {
			vdir, v := virtualDir(yaml)
			r := runNetns(yaml, netns.RunOptions{Agents: agents})
			if lossless {
				Expect(v.Pauses.Sent).To(BeNumerically(">", 0), "no pause: the spec tests nothing of its flow control")
				Expect(v.Drops.Lossless).To(BeZero())
			} else {
				Expect(v.Drops.Lossy).To(BeNumerically(">", 0), "no drop: the spec tests nothing of the drop order")
			}
			for _, name := range identityFiles {
				Expect(readFile(filepath.Join(r.dir, name))).To(Equal(readFile(filepath.Join(vdir, name))), "%s differs", name)
			}
			Expect(r.sum.Fidelity.Faithful).To(BeTrue(), r.sum.Fidelity.Reason)
			Expect(r.sum.Fidelity.Reason).To(ContainSubstring("identical to the virtual backend's run flow by flow"))
			Expect(r.sum.Fidelity.Differing).To(BeEmpty())
		},
		Entry("lossy, go-back-N: an 8->1 incast that drops", incast("lossy", "gbn"), 1, false, Label("smoke")),
		Entry("lossy, go-back-N, two agents in lockstep", incast("lossy", "gbn"), 2, false),
		Entry("pfc, lossless transport", incast("pfc", "lossless"), 1, true, Label("smoke")),
		Entry("pfc, IRN", incast("pfc", "irn"), 1, true),
		Entry("pfc, two agents in lockstep", incast("pfc", "lossless"), 2, true),
		Entry("pfcstar, lossless transport", incast("pfcstar", "lossless"), 1, true),
		Entry("pfcstar, IRN", incast("pfcstar", "irn"), 1, true),
		Entry("pfcstar, two agents in lockstep", incast("pfcstar", "lossless"), 2, true),
		Entry("portfc, lossless transport", incast("portfc", "lossless"), 1, true),
		Entry("portfc, IRN", incast("portfc", "irn"), 1, true),
		Entry("portfc, two agents in lockstep", incast("portfc", "lossless"), 2, true),
	)
})
