package portfc_test

import (
	"context"
	"fmt"
	"sort"
	"strings"

	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/report"
)

// paper is the common part of every spec: the PortFC paper's §V-A parameters: 100 Gb/s,
// 1 us links, 5 MB switch buffers, XOFF/XON 6/4 BDP (one-way BDP, 12.5 KB), DCQCN with K 100/400 KB,
// P 0.2, 1000 B payloads. %s slots: topology, flow control (with its extra keys), workload, duration.
const paper = `
name: portfc-claim
backend: virtual
seed: 1
topology: {family: ndc, %s, link: {rate: 100Gbps, delay: 1us}}
switch:
  flow_control: %s
  buffer: 5MB
  xoff: 6bdp
  xon: 4bdp
  ecn: {kmin: 100KB, kmax: 400KB, pmax: 0.2}
host: {transport: lossless, cc: dcqcn, mtu: 1000}
routing: {algorithm: bcube}
workload:
%s
duration: %s
`

// fcKeys is the flow-control line for a mode: the baselines run PFC at relay nodes' ingress with the
// same thresholds (PortFC paper §V-A), PFC* with the default P = 2 tags.
func fcKeys(mode string) string {
	switch mode {
	case "pfc":
		return "pfc\n  relay_pfc: ingress"
	case "pfcstar":
		return "pfcstar\n  relay_pfc: ingress\n  priorities: 2"
	}
	return mode
}

type run struct {
	lab *lab.Lab
	fab *virtual.Fabric
	res virtual.Result
	sum *report.Summary
	// acked[t][flow ID] is the bytes the flow's sender had acknowledged at sample time t.
	acked map[clock.Time]map[uint32]int64
}

func build(topo, mode, workload, duration string) *virtual.Fabric {
	y := fmt.Sprintf(paper, topo, fcKeys(mode), workload, duration)
	if mode == "lossy" {
		// A lossy fabric needs a transport that recovers losses: IRN, the paper's lossy baseline.
		y = strings.Replace(y, "transport: lossless", "transport: irn", 1)
	}
	s, err := spec.Parse([]byte(y))
	Expect(err).NotTo(HaveOccurred(), y)
	l, err := lab.Build(s)
	Expect(err).NotTo(HaveOccurred(), y)
	f, err := virtual.New(l)
	Expect(err).NotTo(HaveOccurred())
	return f
}

// execute runs f, sampling every flow's acknowledged bytes at the given times.
func execute(f *virtual.Fabric, samples ...clock.Time) *run {
	r := &run{lab: f.Lab, fab: f, acked: map[clock.Time]map[uint32]int64{}}
	for _, t := range samples {
		t := t
		f.Clock.AfterFunc(t, func() { r.acked[t] = ackedNow(f) })
	}
	r.res = f.Run(context.Background())
	r.sum = report.Summarize(f.Log, report.Meta{Dilation: 1, Duration: r.res.End, Graph: f.Lab.Graph, Deadlock: r.res.Deadlock})
	return r
}

func ackedNow(f *virtual.Fabric) map[uint32]int64 {
	done := map[uint32]bool{}
	for _, fl := range f.Log.Flows {
		if fl.Completed {
			done[fl.ID] = true
		}
	}
	out := map[uint32]int64{}
	for _, fp := range f.Lab.Flows {
		nic := f.NICs[fp.SrcNode]
		mtu := int64(nic.Config().MTU)
		if mtu == 0 {
			mtu = nodes.DefaultMTU
		}
		switch st, ok := nic.FlowState(fp.ID); {
		case ok:
			out[fp.ID] = min(int64(st.SndUna)*mtu, fp.Size)
		case done[fp.ID]:
			out[fp.ID] = fp.Size
		}
	}
	return out
}

// goodput is the aggregate acknowledged rate (bit/s) of the flows of class between two sample times.
func (r *run) goodput(class string, from, to clock.Time) float64 {
	a, b := r.acked[from], r.acked[to]
	Expect(a).NotTo(BeNil(), "no sample at %v (the run ended at %v)", from, r.res.End)
	Expect(b).NotTo(BeNil(), "no sample at %v (the run ended at %v)", to, r.res.End)
	var bytes int64
	for _, fp := range r.lab.Flows {
		if fp.Class == class {
			bytes += b[fp.ID] - a[fp.ID]
		}
	}
	return float64(bytes) * 8 / (to - from).Seconds()
}

// fct is flow id's completion time, or 0.
func (r *run) fct(id uint32) clock.Time {
	for _, fl := range r.fab.Log.Flows {
		if fl.ID == id && fl.Completed {
			return fl.FCT()
		}
	}
	return 0
}

func (r *run) retransmits() uint64 {
	var n uint64
	for _, nic := range r.fab.NICs {
		n += nic.Stats().Retransmits
	}
	return n
}

// maxSwitchQueue is the largest any single switch data queue ever held, in bytes.
func (r *run) maxSwitchQueue() int {
	m := 0
	for _, sw := range r.fab.Switches {
		for p := 0; p < sw.NumPorts(); p++ {
			port := sw.Port(p)
			for q := 0; q < port.NumQueues(); q++ {
				m = max(m, port.Stats(q).MaxBytes)
			}
		}
	}
	return m
}

// claimsTable collects measured values next to the paper's for the report printed after the suite.
type claimsTable struct{ rows [][4]string }

var claims claimsTable

func (c *claimsTable) add(claim, paperValue, measured, verdict string) {
	c.rows = append(c.rows, [4]string{claim, paperValue, measured, verdict})
}

func (c *claimsTable) String() string {
	rows := append([][4]string{}, c.rows...)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	var b strings.Builder
	fmt.Fprintf(&b, "%-58s | %-30s | %-44s | %s\n", "claim (docs/portfc.md §7)", "paper", "measured (virtual backend)", "holds")
	b.WriteString(strings.Repeat("-", 150) + "\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-58s | %-30s | %-44s | %s\n", r[0], r[1], r[2], r[3])
	}
	return b.String()
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

func gbps(bps float64) string { return fmt.Sprintf("%.2f Gb/s", bps/1e9) }
