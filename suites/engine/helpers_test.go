package engine_test

import (
	"bytes"
	"context"

	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/report"
)

// run is what a user's `lab run` does, through the Go API: parse, build, run, summarize.
type run struct {
	lab *lab.Lab
	fab *virtual.Fabric
	res virtual.Result
	sum *report.Summary
}

func build(yaml string) *virtual.Fabric {
	s, err := spec.Parse([]byte(yaml))
	Expect(err).NotTo(HaveOccurred())
	l, err := lab.Build(s)
	Expect(err).NotTo(HaveOccurred())
	f, err := virtual.New(l)
	Expect(err).NotTo(HaveOccurred())
	return f
}

func runSpec(yaml string) *run {
	f := build(yaml)
	res := f.Run(context.Background())
	return &run{lab: f.Lab, fab: f, res: res, sum: report.Summarize(f.Log, meta(f, res))}
}

func meta(f *virtual.Fabric, res virtual.Result) report.Meta {
	return report.Meta{Dilation: 1, Duration: res.End, Graph: f.Lab.Graph}
}

func fctTxt(r *run) []byte {
	var b bytes.Buffer
	Expect(report.WriteFCT(&b, r.fab.Log, meta(r.fab, r.res))).To(Succeed())
	return b.Bytes()
}
