package virtual

import (
	"context"
	"math"
	"testing"

	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/report"
)

const seedsSpec = `
name: s
topology: {family: ndc, n: 2, k: 1, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: pfc}
host: {transport: lossless, cc: dcqcn}
routing: {algorithm: bcube}
workload:
  - {kind: poisson, cdf: websearch, load: 0.5, duration: 200us}
duration: 2ms
`

// TestSummariesOverSeeds: three seeds side by side give the same summaries as one at a time, differ
// from each other (the seed acts), and feed a CI.
func TestSummariesOverSeeds(t *testing.T) {
	pts, err := spec.ExpandData([]byte(seedsSpec), ".", nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	var specs []*spec.Spec
	for _, p := range pts {
		specs = append(specs, p.Spec)
	}
	par, err := Summaries(context.Background(), specs, 3)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := Summaries(context.Background(), specs, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range par {
		if par[i].FCT != seq[i].FCT || par[i].Goodput != seq[i].Goodput || par[i].Flows != seq[i].Flows {
			t.Errorf("seed %d: side by side %+v, alone %+v", pts[i].Seed, par[i].FCT, seq[i].FCT)
		}
	}
	if par[0].FCT == par[1].FCT && par[1].FCT == par[2].FCT {
		t.Error("three seeds, one result: the seed does not act")
	}
	c, err := report.SummariesCI(par, "fct_avg_s")
	if err != nil || c.N != 3 || !(c.Half > 0) || math.IsNaN(c.Mean) {
		t.Errorf("CI %+v %v", c, err)
	}
	if r, err := report.PairedCI(par, par, "fct_avg_s", "reduction"); err != nil || r.Mean != 0 || r.Half != 0 {
		t.Errorf("a run against itself: %+v %v", r, err)
	}
}
