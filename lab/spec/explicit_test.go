package spec

import (
	"strings"
	"testing"
)

// TestExplicitZerosRefused: a field given as zero or an empty list that the defaults would silently
// replace (or that is never valid) is refused naming the field and its line; the same field left out
// takes its default (issue 23, defect 6: each of these ran with the default).
func TestExplicitZerosRefused(t *testing.T) {
	base := "name: z\nduration: 1ms\n"
	topo := "topology: {family: ndc, n: 2, k: 1}\n"
	wl := "workload: [{kind: permutation, size: 1KB}]\n"
	for _, tc := range []struct{ yaml, field string }{
		{wl + "dilation: 0", "dilation"},
		{"topology: {family: ndc, n: 2, k: 1, link: {delay: 0s}}\n" + wl, "topology.link.delay"},
		{"workload: [{kind: permutation, size: 1KB, fraction: 0}]", "workload[0].fraction"},
		{wl + "host: {dcqcn: {g: 0}}", "host.dcqcn.g"},
		{wl + "host: {mtu: 0}", "host.mtu"},
		{wl + "switch: {priorities: 0}", "switch.priorities"},
		{wl + "switch: {flow_control: pfcstar, priorities: 0}", "switch.priorities"},
		{wl + "routing: {k: 0}", "routing.k"},
		{"workload: [{kind: permutation, size: 1KB, hosts: []}]", "workload[0].hosts"},
		{"workload: []", "workload"},
		{"workload: [{kind: flows, list: []}]", "workload[0].list"},
		{wl + "routing: {lossless_priorities: 0}", "routing.lossless_priorities"},
		{wl + "seed: 0", "seed"},
		{wl + "switch: {buffer: 0}", "switch.buffer"},
		{wl + "backend: \"\"", "backend"},
	} {
		text := base + tc.yaml + "\n"
		if !strings.Contains(tc.yaml, "topology:") {
			text += topo
		}
		_, err := Parse([]byte(text))
		if err == nil {
			t.Errorf("%s: accepted", tc.yaml)
			continue
		}
		if !strings.Contains(err.Error(), tc.field+": ") || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: %v; want the field %s and its line", tc.yaml, err, tc.field)
		}
	}
	// A zero the defaults leave alone is a real zero and runs; the same fields left out take defaults.
	s, err := Parse([]byte(base + topo + "workload: [{kind: permutation, size: 1KB}]\nswitch: {headroom: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Host.MTU != DefaultMTU || s.Routing.K != DefaultK || s.Dilation != DefaultDilation {
		t.Errorf("defaults not applied: mtu %d k %d dilation %v", s.Host.MTU, s.Routing.K, s.Dilation)
	}
}
