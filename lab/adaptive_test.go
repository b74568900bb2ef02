package lab_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/spec"
)

const dragonflyLab = `
name: df
topology: {family: dragonfly, p: 2, a: 4, h: 2, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: lossy}
host: {transport: irn}
routing: {algorithm: %s%s}
workload:
  - kind: flows
    list:
      - {src: h0, dst: h40, size: 1MB}
      - {src: h1, dst: h2, size: 1MB}
      - {src: h3, dst: h24, size: 1MB, path: [h3, s1, s12, h24]}
duration: 1ms
`

func TestAdaptiveRoutersGiveNICsTheirCandidates(t *testing.T) {
	for _, alg := range []string{"telemetry", "ugal", "ugal-pb"} {
		l, err := buildLab(t, fmt.Sprintf(dragonflyLab, alg, ""))
		if err != nil {
			t.Fatal(err)
		}
		inter, intra, pinned := l.Flows[0], l.Flows[1], l.Flows[2]
		if len(inter.Paths) != 8 || &inter.Paths[0][0] != &inter.Route[0] {
			t.Fatalf("%s: inter-group flow has %d candidates (want |G|-1 = 8), starting on Paths[0]", alg, len(inter.Paths))
		}
		if intra.Paths != nil || pinned.Paths != nil || len(pinned.Route) != 3 {
			t.Fatalf("%s: intra-group or pinned flows got candidates: %v %v", alg, intra.Paths, pinned.Paths)
		}
		if nf := inter.NICFlow(); len(nf.Paths) != 8 {
			t.Fatalf("%s: the NIC is not handed the candidates", alg)
		}
		for _, h := range l.Hosts {
			if h.Config.PathSelect != alg {
				t.Fatalf("%s: host config path_select %q", alg, h.Config.PathSelect)
			}
			// Only per-packet UGAL reorders every flow: its receivers hold out-of-order packets.
			if h.Config.ReorderBuffer != (alg == "ugal-pb") {
				t.Fatalf("%s: host config reorder_buffer %v", alg, h.Config.ReorderBuffer)
			}
		}
	}
	// UGAL's bias is bytes of queue in the spec, their time at the host link rate on the NIC.
	l, err := buildLab(t, fmt.Sprintf(dragonflyLab, "ugal", ", threshold: 125KB"))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Hosts[0].Config.Telemetry.Threshold; got != 10*clock.Microsecond {
		t.Fatalf("threshold %v, want 10us (125 KB at 100 Gb/s)", got)
	}
	// minimal is static: one path, no NIC policy.
	l, err = buildLab(t, fmt.Sprintf(dragonflyLab, "minimal", ""))
	if err != nil {
		t.Fatal(err)
	}
	if l.Flows[0].Paths != nil || l.Hosts[0].Config.PathSelect != "" || len(l.Flows[0].Route) == 0 {
		t.Fatal("minimal must be a plain source route")
	}
	if _, err := buildLab(t, strings.Replace(fmt.Sprintf(dragonflyLab, "telemetry", ""), "family: dragonfly, p: 2, a: 4, h: 2", "family: ring, n: 4", 1)); err == nil ||
		!strings.Contains(err.Error(), "routing.algorithm") {
		t.Fatalf("telemetry on a ring: %v", err)
	}
}

func TestATEGivesRailNDCFlowsFirstHopCandidates(t *testing.T) {
	const railLab = `
name: rail
topology: {family: ndc, n: 4, k: 1, rail: true, hbd_rate: 400Gbps, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: pfc}
host: {transport: lossless}
routing: {algorithm: ate%s}
workload:
  - kind: flows
    list:
      - {src: h0, dst: h5, size: 1MB}
      - {src: h0, dst: h1, size: 1MB}
duration: 1ms
`
	l, err := buildLab(t, fmt.Sprintf(railLab, ", p: 0.8"))
	if err != nil {
		t.Fatal(err)
	}
	four, two := l.Flows[0], l.Flows[1]
	if len(four.Paths) != 2 || four.Paths[0][0] == four.Paths[1][0] || two.Paths != nil {
		t.Fatalf("candidates: 4-hop %v, 2-hop %v", four.Paths, two.Paths)
	}
	c := l.Hosts[0].Config
	// B_H: 400 Gb/s x (2 x 4 x 1 us + one 1000 B frame serialized on each hop: 2 at 400, 2 at 100 Gb/s).
	rtt := 8*clock.Microsecond + 2*clock.TxTime(1000+66, 400e9) + 2*clock.TxTime(1000+66, 100e9)
	want := int64(400e9 / 8 * rtt.Seconds())
	if c.PathSelect != "ate" || c.ATE.P != 0.8 || c.ATE.HBDPort != 0 || c.ATE.CapacityBytes < want-400 || c.ATE.CapacityBytes > want+400 {
		t.Fatalf("host ATE config %+v, want p 0.8, HBD port 0, B_H ~ %d B", c.ATE, want)
	}
	if _, err := spec.Parse([]byte(fmt.Sprintf(railLab, ", p: 1.5"))); err == nil || !strings.Contains(err.Error(), "routing.p") {
		t.Fatalf("p 1.5: %v", err)
	}
	if _, err := spec.Parse([]byte(fmt.Sprintf(railLab, ", measure: rate"))); err == nil || !strings.Contains(err.Error(), "routing.measure") {
		t.Fatalf("measure rate: %v", err)
	}
	if l, err := buildLab(t, fmt.Sprintf(railLab, ", measure: assigned")); err != nil || l.Hosts[3].Config.ATE.Measure != "assigned" || l.Hosts[3].Config.ATE.P != 0.9 {
		t.Fatalf("measure assigned, default p: %v", err)
	}
	if _, err := buildLab(t, strings.Replace(fmt.Sprintf(railLab, ""), "family: ndc, n: 4, k: 1, rail: true, hbd_rate: 400Gbps", "family: fattree, k: 4", 1)); err == nil ||
		!strings.Contains(err.Error(), "routing.algorithm") || !strings.Contains(err.Error(), "NDC") {
		t.Fatalf("ate on a fat-tree: %v", err)
	}
}

// Every candidate carries its own base delays, so the NIC caps and waits per path: a Valiant path of a
// D1 Dragonfly (up to 7 links) has a longer RTT than the minimal one (5 links), and IRN's cap is per path.
func TestCandidatesCarryTheirBases(t *testing.T) {
	l, err := buildLab(t, fmt.Sprintf(dragonflyLab, "telemetry", ""))
	if err != nil {
		t.Fatal(err)
	}
	inter := l.Flows[0]
	if len(inter.PathBases) != len(inter.Paths) || inter.Base != inter.PathBases[0] {
		t.Fatalf("bases %v for %d candidates, base %v", inter.PathBases, len(inter.Paths), inter.Base)
	}
	for i, b := range inter.PathBases {
		hops := clock.Time(len(inter.Paths[i]))
		if b.RTT <= 2*hops*clock.Microsecond || b.OneWay <= hops*clock.Microsecond || b.RTT-b.OneWay != hops*clock.Microsecond {
			t.Fatalf("candidate %d (%d links): base %+v", i, hops, b)
		}
		if i > 0 && b.RTT <= inter.PathBases[0].RTT {
			t.Fatalf("VAL candidate %d RTT %v not above MIN's %v", i, b.RTT, inter.PathBases[0].RTT)
		}
	}
	if c := l.Hosts[0].Config; !c.BDPCapPath || c.BDPCapBytes == 0 {
		t.Fatalf("IRN host config: bdp_cap_path %v, fallback %d", c.BDPCapPath, c.BDPCapBytes)
	}
	if nf := inter.NICFlow(); len(nf.PathBases) != 8 || nf.Base.RTT == 0 {
		t.Fatal("the NIC is not handed the bases")
	}
}

// all-to-all with connections is the telemetry paper's Table I workload: N flows between uniformly
// drawn host pairs (pairs may repeat), not one flow per pair.
func TestAllToAllConnectionsDrawsUniformPairs(t *testing.T) {
	const a2a = `
name: t1
topology: {family: fattree, k: 4, core_fraction: 0.75}
switch: {flow_control: lossy}
host: {transport: irn}
routing: {algorithm: shortest}
workload:
  - {kind: all-to-all, connections: 200, size: 1MB, at: 0s}
duration: 1ms
`
	l, err := buildLab(t, a2a)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Flows) != 200 {
		t.Fatalf("%d flows, want 200", len(l.Flows))
	}
	srcs := map[int]bool{}
	for _, f := range l.Flows {
		if f.Src == f.Dst || f.Size != 1_000_000 {
			t.Fatalf("flow %+v: self pair or wrong size", f.Flow)
		}
		srcs[f.Src] = true
	}
	if len(srcs) < 14 { // 16 hosts, 200 draws: every host sends with overwhelming probability
		t.Fatalf("only %d of 16 hosts send", len(srcs))
	}
}
