package netns_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/report"
)

// Dilation documented for these specs: the papers' 100 Gb/s, 1 us links become 100 Mb/s, 1 ms links.
const dilation = 1000

type nsRun struct {
	lab *lab.Lab
	log *records.Log
	res netns.RunResult
	sum *report.Summary
	dir string
}

func buildLab(yaml, backend string) *lab.Lab {
	s, err := spec.Parse([]byte(yaml))
	Expect(err).NotTo(HaveOccurred())
	s.Backend = backend
	if backend == "netns" && s.Dilation <= 1 {
		s.Dilation = dilation
	}
	l, err := lab.Build(s)
	Expect(err).NotTo(HaveOccurred())
	return l
}

// runNetns runs yaml on the netns backend and writes its run directory (with pcaps if pcap is set).
func runNetns(yaml string, opts netns.RunOptions) *nsRun {
	l := buildLab(yaml, "netns")
	dir := GinkgoT().TempDir()
	if opts.Pcap != "" {
		opts.PcapDir = filepath.Join(dir, "pcap")
		Expect(os.MkdirAll(opts.PcapDir, 0o755)).To(Succeed())
	}
	log, res, err := netns.Run(context.Background(), l, opts)
	Expect(err).NotTo(HaveOccurred())
	fid := res.Fidelity
	sum, err := report.WriteRunDir(dir, log, report.Meta{Dilation: res.Dilation, Duration: res.End, Graph: l.Graph, Fidelity: &fid})
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("netns %s: D=%g, %d agents, wall %v; fidelity %v: %s\n", l.Spec.Name, res.Dilation, res.Agents, res.Wall, fid.Faithful, fid.Reason)
	return &nsRun{lab: l, log: log, res: res, sum: sum, dir: dir}
}

// requireFaithful refuses to assert on a run the fidelity monitor rejected: the numbers would be the
// machine's, not the fabric's.
func requireFaithful(r *nsRun) {
	if !r.sum.Fidelity.Faithful {
		Fail(fmt.Sprintf("the netns run was not faithful, refusing to assert on it: %s", r.sum.Fidelity.Reason))
	}
}

func runVirtual(yaml string) *report.Summary {
	l := buildLab(yaml, "virtual")
	f, err := virtual.New(l)
	Expect(err).NotTo(HaveOccurred())
	res := f.Run(context.Background())
	return report.Summarize(f.Log, report.Meta{Dilation: 1, Duration: res.End, Graph: l.Graph})
}

// within reports |a-b|/b.
func within(a, b float64) float64 { return math.Abs(a-b) / b }

func lines(path string) int {
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	return bytes.Count(b, []byte("\n"))
}
