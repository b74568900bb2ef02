package lab_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
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
	for _, alg := range []string{"telemetry", "ugal"} {
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
