package routing_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/report"
)

// The expander thesis' crossover (expander thesis §4.3.7-4.3.8, Fig 4.4 vs 4.8): on an Xpander,
// when a few whole ToRs talk all-to-all, shortest-path ECMP has too few paths between them (2.5 per
// ToR pair here) and VLB's detours win; when every ToR is active the detours cost twice the capacity and
// ECMP wins.
//
// Scaled down (§8.2): Xpander(35 switches, degree 6, 3 hosts each: ToR-ratio 2:1), 100 Gb/s and 1 us
// links. Active ToRs are whole ToRs drawn at random (the thesis' node all-to-all fraction: with the
// same number of hosts drawn at random they land on different ToRs and ECMP and VLB tie, as in its
// server-fraction Fig 4.19). Every active host offers 0.8 of its link in WebSearch flows, all-to-all
// among the active hosts. The fabric is lossy with ECN (as the thesis' DCTCP network) and the hosts run
// IRN with DCQCN: no PFC, so the non-minimal VLB paths cannot deadlock, and both routings place a flow on
// one path, so no reordering penalises either. ECMP and VLB see the identical flow schedule (the
// workload draws from its own seeded stream, not from the routing). Arrivals last 5 ms with 3 ToRs
// (about 260 flows per seed; four seeds, since which ToRs are drawn moves the margin) and 0.3 ms with
// all 35 (about 200 flows, where the margin is wide), so both directions rest on similar flow counts.
const xpSpec = `
name: xp-%s-%d
backend: virtual
seed: %d
topology: {family: xpander, switches: 35, degree: 6, hosts_per_switch: 3, seed: 1, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: lossy, buffer: 4MB, ecn: {kmin: 40KB, kmax: 160KB, pmax: 0.2}}
host: {transport: irn, cc: dcqcn, mtu: 1000}
routing: {algorithm: %s}
workload:
  - {kind: all-to-all, fraction: 1, cdf: websearch, load: 0.8, duration: %s, hosts: [%s]}
duration: 50ms
`

const (
	xpSwitches = 35
	xpHostsPer = 3
)

// xpActive lists the hosts of tors ToRs drawn with seed.
func xpActive(tors int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 0x7a))
	sw := r.Perm(xpSwitches)[:tors]
	sort.Ints(sw)
	var hs []string
	for _, s := range sw {
		for i := 0; i < xpHostsPer; i++ {
			hs = append(hs, fmt.Sprintf("h%d", s*xpHostsPer+i))
		}
	}
	return strings.Join(hs, ", ")
}

type xpResult struct {
	alg       string
	tors      int
	seed      int
	flows     int
	completed int
	avgFCT    float64 // seconds
	hops      float64 // mean links per flow path
	schedule  string  // the flows' (id, src, dst, size, start), to check both routings saw the same
	wall      time.Duration
	err       error
	// violations: lossless drops, frames the wire cannot carry, flows that did not start.
	violations []string
}

func xpRun(alg string, tors, seed int, arrivals string) xpResult {
	res := xpResult{alg: alg, tors: tors, seed: seed}
	start := time.Now()
	y := fmt.Sprintf(xpSpec, alg, tors, seed, alg, arrivals, xpActive(tors, uint64(seed)))
	sp, err := spec.Parse([]byte(y))
	if err != nil {
		res.err = fmt.Errorf("spec: %w\n%s", err, y)
		return res
	}
	l, err := lab.Build(sp)
	if err != nil {
		res.err = fmt.Errorf("build: %w", err)
		return res
	}
	f, err := virtual.New(l)
	if err != nil {
		res.err = fmt.Errorf("virtual: %w", err)
		return res
	}
	run := f.Run(context.Background())
	sum := report.Summarize(f.Log, report.Meta{Dilation: 1, Duration: run.End, Graph: l.Graph})
	res.flows, res.completed, res.avgFCT = sum.Flows.Total, sum.Flows.Completed, sum.FCT.Avg
	res.violations = sum.Violations
	var b strings.Builder
	links := 0
	for _, fp := range l.Flows {
		fmt.Fprintf(&b, "%d %d %d %d %d;", fp.ID, fp.Src, fp.Dst, fp.Size, fp.At)
		links += fp.Path.Hops()
	}
	res.schedule = b.String()
	res.hops = float64(links) / float64(max(len(l.Flows), 1))
	if len(l.Flows) != res.flows {
		res.err = fmt.Errorf("%d flows scheduled, %d recorded", len(l.Flows), res.flows)
	}
	res.wall = time.Since(start)
	return res
}

// xpRunAll runs the jobs two at a time (the suites' machines have two cores).
func xpRunAll(jobs []func() xpResult) []xpResult {
	out := make([]xpResult, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = jobs[i]()
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// Smoke, just: the ten runs take about 26 s of CPU, 15 s on two idle cores; the arrival windows are as
// short as keeps the VLB-vs-ECMP sign stable on every seed.
var _ = Describe("Expander VLB/ECMP crossover (expander thesis §7 claim 5)", Label("routing"), func() {
	It("VLB beats ECMP on average FCT with 3 of 35 ToRs active; ECMP beats VLB with all 35", func() {
		const lowTors, highTors = 3, xpSwitches
		lowSeeds := []int{1, 2, 3, 4}
		var jobs []func() xpResult
		for _, sd := range lowSeeds {
			for _, alg := range []string{"shortest", "vlb"} {
				jobs = append(jobs, func() xpResult { return xpRun(alg, lowTors, sd, "5ms") })
			}
		}
		for _, alg := range []string{"shortest", "vlb"} {
			jobs = append(jobs, func() xpResult { return xpRun(alg, highTors, 1, "0.3ms") })
		}
		t0 := time.Now()
		rs := xpRunAll(jobs)
		sum := map[string]float64{} // "alg/tors" -> sum of per-seed average FCTs
		vlbWins := 0
		var table strings.Builder
		fmt.Fprintf(&table, "%-8s %5s %4s %6s %12s %6s %7s\n", "routing", "ToRs", "seed", "flows", "avg FCT (us)", "hops", "wall")
		for _, r := range rs {
			Expect(r.err).NotTo(HaveOccurred(), "%s, %d ToRs, seed %d", r.alg, r.tors, r.seed)
			Expect(r.completed).To(Equal(r.flows), "%s, %d ToRs, seed %d: every flow completes", r.alg, r.tors, r.seed)
			Expect(r.violations).To(BeEmpty(), "%s, %d ToRs, seed %d", r.alg, r.tors, r.seed)
			Expect(r.flows).To(BeNumerically(">=", 100), "%s, %d ToRs, seed %d: enough flows for an average", r.alg, r.tors, r.seed)
			sum[fmt.Sprintf("%s/%d", r.alg, r.tors)] += r.avgFCT
			fmt.Fprintf(&table, "%-8s %5d %4d %6d %12.1f %6.2f %7s\n", r.alg, r.tors, r.seed, r.flows, r.avgFCT*1e6, r.hops, r.wall.Round(100*time.Millisecond))
		}
		// Pairs run on the same schedule; only the routing differs.
		for i := 0; i+1 < len(rs); i += 2 {
			Expect(rs[i].schedule).To(Equal(rs[i+1].schedule), "%d ToRs seed %d: ECMP and VLB must see the same flows", rs[i].tors, rs[i].seed)
			Expect(rs[i+1].hops).To(BeNumerically(">", rs[i].hops+0.5), "VLB's detours must lengthen the paths (%.2f vs %.2f links)", rs[i+1].hops, rs[i].hops)
			if rs[i].tors == lowTors && rs[i+1].avgFCT < rs[i].avgFCT {
				vlbWins++
			}
		}
		n := float64(len(lowSeeds))
		ecmpLow, vlbLow := sum[fmt.Sprintf("shortest/%d", lowTors)]/n, sum[fmt.Sprintf("vlb/%d", lowTors)]/n
		ecmpHigh, vlbHigh := sum[fmt.Sprintf("shortest/%d", highTors)], sum[fmt.Sprintf("vlb/%d", highTors)]
		fmt.Fprintf(&table, "mean over seeds, %d/%d ToRs: ECMP %.1f us, VLB %.1f us (VLB %+.1f%%)\n", lowTors, xpSwitches, ecmpLow*1e6, vlbLow*1e6, 100*(vlbLow/ecmpLow-1))
		fmt.Fprintf(&table, "%d/%d ToRs: ECMP %.1f us, VLB %.1f us (VLB %+.1f%%)\n", highTors, xpSwitches, ecmpHigh*1e6, vlbHigh*1e6, 100*(vlbHigh/ecmpHigh-1))
		fmt.Fprintf(&table, "wall time %v\n", time.Since(t0).Round(100*time.Millisecond))
		AddReportEntry("expander crossover", table.String())
		fmt.Fprint(GinkgoWriter, table.String())
		Expect(vlbLow).To(BeNumerically("<", ecmpLow), "few active ToRs: VLB's average FCT must beat ECMP's\n%s", table.String())
		Expect(vlbWins).To(BeNumerically(">", len(lowSeeds)/2), "few active ToRs: VLB must win on most seeds, not on one outlier\n%s", table.String())
		Expect(ecmpHigh).To(BeNumerically("<", vlbHigh), "all ToRs active: ECMP's average FCT must beat VLB's\n%s", table.String())
	})
})
