package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fabriclab/fabriclab/clock"
)

func TestDesignExample(t *testing.T) {
	s, err := Load("testdata/design-example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "portfc-ring" || s.Backend != "virtual" || s.Seed != 1 || s.Dilation != 1000 {
		t.Errorf("header: %+v", s)
	}
	if s.EffectiveDilation() != 1 {
		t.Errorf("virtual backend must run at D=1, got %v", s.EffectiveDilation())
	}
	if s.Topology.Family != "ndc" || s.Topology.Link.Rate != 100e9 || s.Topology.Link.Delay.Clock() != clock.Microsecond {
		t.Errorf("topology: %+v", s.Topology)
	}
	fam, params := s.TopologyParams()
	want := map[string]string{"n": "2", "k": "1", "rate": "100Gbps", "delay": "1us"}
	if fam != "ndc" || !reflect.DeepEqual(params, want) {
		t.Errorf("TopologyParams = %s %v, want ndc %v", fam, params, want)
	}
	sw := s.Switch
	if sw.FlowControl != "portfc" || sw.Buffer.Bytes != 5e6 || sw.XOFF.BDPs != 6 || sw.XON.BDPs != 4 ||
		sw.ECN.KMin.Bytes != 100e3 || sw.ECN.KMax.Bytes != 400e3 || sw.ECN.PMax != 0.2 || !sw.ECN.ECNEnabled() {
		t.Errorf("switch: %+v", sw)
	}
	if s.Host.Transport != "lossless" || s.Host.CC != "dcqcn" || s.Host.MTU != 1024 {
		t.Errorf("host: %+v", s.Host)
	}
	if s.Routing.Algorithm != "bcube" || s.Duration.Clock() != 20*clock.Millisecond || !s.StopWhenDone() {
		t.Errorf("routing/duration: %+v %v", s.Routing, s.Duration)
	}
	if len(s.Workload) != 3 {
		t.Fatalf("workloads: %d", len(s.Workload))
	}
	p, in, fl := s.Workload[0], s.Workload[1], s.Workload[2]
	if p.Kind != "poisson" || p.CDF != "websearch" || p.Load != 0.5 || p.Duration.Clock() != 10*clock.Millisecond || p.Name != "poisson" {
		t.Errorf("poisson: %+v", p)
	}
	if in.Senders != 3 || in.Size.Bytes != 1e6 || in.At.Clock() != clock.Millisecond || in.Count != 1 {
		t.Errorf("incast: %+v", in)
	}
	if len(fl.List) != 1 || !reflect.DeepEqual(fl.List[0], Flow{Src: "h0", Dst: "h3", Size: Bytes(1e6)}) {
		t.Errorf("flows: %+v", fl.List)
	}
}

func TestTestdataLoads(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.yaml")
	if len(files) < 3 {
		t.Fatalf("testdata: %v", files)
	}
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		// The resolved spec re-parses to itself: it is what a run directory stores.
		out, err := yaml.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Errorf("%s: resolved spec does not re-parse: %v\n%s", f, err, out)
			continue
		}
		back.lines, s.lines = nil, nil
		if !reflect.DeepEqual(back, s) {
			t.Errorf("%s: round trip differs:\n%s", f, out)
		}
	}
	s, _ := Load("testdata/ring-deadlock-pfc.yaml")
	if s.EffectiveDilation() != 1000 || s.StopWhenDone() || s.Switch.ECN.ECNEnabled() || s.Workload[1].List[2].Via[0] != "h2" {
		t.Errorf("ring spec: %+v", s)
	}
}

const base = `
name: t
topology: {family: ndc, n: 2, k: 1}
duration: 10ms
`

// fieldErr parses text and returns the errors, failing if it parsed.
func fieldErrs(t *testing.T, text string) Errors {
	t.Helper()
	_, err := Parse([]byte(text))
	if err == nil {
		t.Fatalf("accepted:\n%s", text)
	}
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("not Errors: %T %v", err, err)
	}
	return es
}

func expectField(t *testing.T, es Errors, field, msg string) {
	t.Helper()
	for _, e := range es {
		if e.Field == field && strings.Contains(e.Error(), msg) {
			return
		}
	}
	t.Errorf("want an error at %s containing %q, got:\n%v", field, msg, es)
}

func TestUnknownKeys(t *testing.T) {
	for _, tc := range []struct{ text, field, msg string }{
		{base + "nmae: x\n", "nmae", "unknown field (did you mean name?)"},
		{base + "switch: {xof: 6bdp}\n", "switch.xof", "unknown field (did you mean xoff?)"},
		{base + "switch: {ecn: {kmn: 1KB}}\n", "switch.ecn.kmn", "did you mean kmin?"},
		{base + "host: {transprot: irn}\n", "host.transprot", "did you mean transport?"},
		{base + "host: {dcqcn: {rpt_imer: 1us}}\n", "host.dcqcn.rpt_imer", "did you mean rp_timer?"},
		{base + "routing: {algorithm: ksp, kk: 4}\n", "routing.kk", "did you mean k?"},
		{"name: t\nduration: 1ms\ntopology: {family: ndc, link: {rte: 1Gbps}}\n", "topology.link.rte", "did you mean rate?"},
		{base + "workload:\n  - {kind: incast, senderz: 8, size: 1MB}\n", "workload[0].senderz", "did you mean senders?"},
		{base + "workload:\n  - {kind: poisson, cdf: hadoop, load: 0.3}\n  - {kind: incast, senders: 8, size: 1MB, cdf: hadoop}\n",
			"workload[1].cdf", "not a field of workload kind incast"},
		{base + "workload:\n  - {kind: flows, list: [{src: h0, dst: h1, size: 1MB, srcc: h2}]}\n", "workload[0].list[0].srcc", "did you mean src?"},
		{base + "workload:\n  - {kind: poisson, cdf: hadoop, load: 0.3, pairs: [{src: h0, dts: h1}]}\n", "workload[0].pairs[0].dts", "did you mean dst?"},
		{base + "expect: {fct: {value: 1, sourc: x}}\n", "expect.fct.sourc", "did you mean source?"},
		{base + "switch: {buffer: 5MB, buffer: 6MB}\n", "switch.buffer", "given twice"},
		{base + "switch: [1, 2]\n", "switch", "want a mapping"},
		{mergeBase("topology: {family: ndc, n: [1]}"), "topology.n", "want a single value"},
	} {
		expectField(t, fieldErrs(t, tc.text), tc.field, tc.msg)
	}
	// Line numbers point at the offending key.
	es := fieldErrs(t, "name: t\nduration: 1ms\ntopology: {family: ndc}\nswitch:\n  buffer: 5MB\n  xof: 6bdp\n")
	if es[0].Line != 6 || es[0].Error() != "line 6: switch.xof: unknown field (did you mean xoff?)" {
		t.Errorf("got %q", es[0].Error())
	}
}

func TestInvalidValues(t *testing.T) {
	for _, tc := range []struct{ yaml, field, msg string }{
		{"backend: docker", "backend", `"docker" is not one of virtual, netns`},
		{"dilation: 0.5", "dilation", "not in [1, 1000000]"},
		{"switch: {flow_control: pfx}", "switch.flow_control", "did you mean pfc?"},
		{"switch: {xoff: 2bdp, xon: 3bdp}", "switch.xon", "exceeds xoff"},
		{"switch: {buffer: 1MB, xoff: 2MB, xon: 1MB}", "switch.xoff", "exceeds the switch buffer"},
		{"switch: {ecn: {kmin: 500KB, kmax: 400KB}}", "switch.ecn.kmin", "exceeds kmax"},
		{"switch: {ecn: {pmax: 1.5}}", "switch.ecn.pmax", "not in [0, 1]"},
		{"switch: {ecn: {pmax: -0.1}}", "switch.ecn.pmax", "not in [0, 1]"},
		{"switch: {alpha: -1}", "switch.alpha", "not in [0, 64]"},
		{"switch: {priorities: 9}", "switch.priorities", "1..8"},
		{"switch: {relay_pfc: egress}", "switch.relay_pfc", "pass-through, ingress"},
		{"switch: {acks: fifo}", "switch.acks", "strict, data"},
		{"switch: {flow_control: portfc, acks: data}", "switch.acks", "needs flow_control pfc or lossy"},
		{"switch: {buffer: 5XB}", "switch.buffer", `size "5XB"`},
		{"switch: {buffer: -5MB}", "switch.buffer", "size"},
		{"host: {transport: tcp}", "host.transport", `"tcp" is not one of lossless, gbn, irn, kernel-tcp`},
		{"host: {cc: reno}", "host.cc", "none, dcqcn, cubic, dctcp"},
		{"backend: netns\nswitch: {flow_control: portfc}\nhost: {transport: kernel-tcp}", "host.transport", "portfc"},
		{"host: {transport: kernel-tcp}", "host.transport", "needs backend netns"},
		{"backend: netns\nhost: {transport: kernel-tcp, cc: dcqcn}", "host.cc", "use cubic or dctcp"},
		{"host: {transport: irn, cc: cubic}", "host.cc", "kernel TCP algorithm"},
		{"switch: {flow_control: lossy}\nhost: {transport: lossless}", "host.transport", "lossless cannot recover losses"},
		{"host: {mtu: 100}", "host.mtu", "256..9000"},
		{"host: {mtu: 9001}", "host.mtu", "256..9000"},
		{"host: {mtu: big}", "host.mtu", `"big" is not an integer`},
		{"host: {mtu: 1500.5}", "host.mtu", `"1500.5" is not an integer`},
		{"seed: 1.5", "seed", `"1.5" is not an integer`},
		{"seeds: 2.5", "seeds", `"2.5" is not an integer`},
		{"host: {rto_low: 1ms, rto_high: 100us}", "host.rto_low", "exceeds rto_high"},
		{"host: {rto: 10}", "host.rto", "with a unit"},
		{"host: {dcqcn: {g: 2}}", "host.dcqcn.g", "(0, 1]"},
		{"routing: {algorithm: dijkstra}", "routing.algorithm", "bcube, shortest, ksp"},
		{"routing: {k: -1}", "routing.k", "not in 1..1000"},
		{"routing: {lossless_priorities: 9}", "routing.lossless_priorities", "1..8"},
		{"routing: {spread: ecmp}", "routing.spread", "flow, flowlet, packet"},
		{"routing: {max_paths: -2}", "routing.max_paths", "negative"},
		{"topology: {family: ndc, n: 2, rate: 1Gbps}", "topology.rate", "link:"},
		{"topology: {family: ndc, link: {rate: fast}}", "topology.link.rate", `rate "fast"`},
		{"duration: 0s", "duration", "required"},
		{"name: 'my lab'", "name", "letters, digits"},
		{"workload: [{kind: burst}]", "workload[0].kind", `"burst" is not one of flows, incast`},
		{"workload: [{kind: poisson, cdf: websurch, load: 0.5}]", "workload[0].cdf", "did you mean websearch?"},
		{"workload: [{kind: poisson, cdf: 'file:', load: 0.5}]", "workload[0].cdf", "needs a path"},
		{"workload: [{kind: poisson, cdf: hadoop, load: 1.5}]", "workload[0].load", "not in (0, 1]"},
		{"workload: [{kind: poisson, cdf: hadoop, load: 0}]", "workload[0].load", "not in (0, 1]"},
		{"workload: [{kind: poisson, load: 0.3}]", "workload[0].cdf", "required"},
		{"workload: [{kind: poisson, cdf: hadoop, load: 0.3, start: 20ms}]", "workload[0].start", "not before the run's duration"},
		{"workload: [{kind: poisson, cdf: hadoop, load: 0.3, shape: 2}]", "workload[0].shape", "only with cdf: pareto"},
		{"workload: [{kind: poisson, cdf: pareto, load: 0.3, shape: 0.9}]", "workload[0].shape", "not in (1, 100]: a Pareto with shape <= 1 has no mean"},
		{"workload: [{kind: poisson, cdf: hadoop, load: 0.3, hosts: [h0, x1]}]", "workload[0].hosts[1]", `"x1" is not a host name`},
		{"workload: [{kind: poisson, cdf: hadoop, load: 0.3, hosts: [h0, h0]}]", "workload[0].hosts[1]", "listed twice"},
		{"workload: [{kind: poisson, cdf: hadoop, load: 0.3, pairs: [{src: h1, dst: h1}]}]", "workload[0].pairs[0]", "both h1"},
		{"workload: [{kind: incast, senders: 0, size: 1MB}]", "workload[0].senders", "0 is not in 1.."},
		{"workload: [{kind: incast, senders: 4}]", "workload[0].size", "required"},
		{"workload: [{kind: incast, senders: 4, size: 1MB, receiver: host3}]", "workload[0].receiver", "not a host name"},
		{"workload: [{kind: incast, senders: 4, size: 1MB, count: 3}]", "workload[0].interval", "required when count > 1"},
		{"workload: [{kind: incast, senders: 4, size: 1MB, count: 3, load: 0.02}]", "workload[0].count", "not both"},
		{"workload: [{kind: incast, senders: 4, size: 1MB, hosts: [h1, h2]}]", "workload[0].senders", "only 2 hosts"},
		{"workload: [{kind: flows}]", "workload[0].list", "required"},
		{"workload: [{kind: flows, list: [{src: h0, dst: h0, size: 1KB}]}]", "workload[0].list[0].dst", "also the source"},
		{"workload: [{kind: flows, list: [{src: h0, dst: h1}]}]", "workload[0].list[0].size", "required"},
		{"workload: [{kind: flows, list: [{src: h0, dst: h1, size: 1KB, at: 30ms}]}]", "workload[0].list[0].at", "not before"},
		{"workload: [{kind: flows, list: [{src: h0, dst: h3, size: 1KB, via: [s1]}]}]", "workload[0].list[0].via[0]", `"s1" is not a host name`},
		{"workload: [{kind: flows, list: [{src: h0, dst: h3, size: 1KB, via: [h3]}]}]", "workload[0].list[0].via[0]", "not a relay"},
		{"workload: [{kind: flows, list: [{src: h0, dst: h3, size: 1KB, path: [h0, sw1, h3]}]}]", "workload[0].list[0].path[1]", "not a device name"},
		{"workload: [{kind: flows, list: [{src: h0, dst: h3, size: 1KB, path: [h1, s0, h3]}]}]", "workload[0].list[0].path[0]", "not the flow's src"},
		{"workload: [{kind: flows, list: [{src: h0, dst: h3, size: 1KB, path: [h0, s0, h2]}]}]", "workload[0].list[0].path[2]", "not the flow's dst"},
		{"workload: [{kind: flows, list: [{src: h0, dst: h3, size: 1KB, via: [h1], path: [h0, s0, h1, s1, h3]}]}]", "workload[0].list[0].path", "not both"},
		{"workload: [{kind: permutation}]", "workload[0].size", "required"},
		{"workload: [{kind: all-to-all, size: 1MB, fraction: 1.5}]", "workload[0].fraction", "(0, 1]"},
		{"workload: [{kind: all-to-all, size: 1MB, cdf: hadoop, load: 0.1}]", "workload[0].size", "not both"},
		{"workload: [{kind: adv1, size: 1MB, load: 0.5}]", "workload[0].load", "only with cdf"},
		{"workload: [{kind: ps, workers: 4}]", "workload[0].push_size", "required"},
		{"workload: [{kind: ps, push_size: 8MB, server: ps0}]", "workload[0].server", "not a host name"},
		{"workload: [{kind: moe, experts: 4, top_k: 5, tokens: 10, token_size: 4KB}]", "workload[0].top_k", "1..experts"},
		{"workload: [{kind: moe, experts: 4, tokens: 10}]", "workload[0].token_size", "required"},
		{"workload: [{kind: moe, experts: 4, tokens: 10, token_size: 1KB, zipf: -1}]", "workload[0].zipf", "not in [0, 100]"},
		{"workload: [{kind: trace, format: csv, path: x}]", "workload[0].format", "hpcc, htsim"},
		{"workload: [{kind: trace, format: hpcc}]", "workload[0].path", "required"},
		{"expect: {fct_avg: {value: 1}}", "expect.fct_avg.source", "required"},
		// Issue 12: non-finite and out-of-range numbers, refused where written, the field named.
		{"duration: 1e30s", "duration", "longest time"},
		{"switch: {buffer: 1e30}", "switch.buffer", "largest size"},
		{"switch: {buffer: nan}", "switch.buffer", `size "nan"`},
		{"dilation: .inf", "dilation", "not a finite number"},
		{"dilation: .nan", "dilation", "not a finite number"},
		{"dilation: 1e9", "dilation", "not in [1, 1000000]"},
		{"switch: {alpha: .inf}", "switch.alpha", "not a finite number"},
		{"switch: {ecn: {pmax: .nan}}", "switch.ecn.pmax", "not a finite number"},
		{"host: {dcqcn: {rate_ai: infGbps}}", "host.dcqcn.rate_ai", "rate"},
		{"host: {dcqcn: {min_rate: 1e30}}", "host.dcqcn.min_rate", "largest rate"},
		{"host: {dcqcn: {g: .nan}}", "host.dcqcn.g", "not a finite number"},
		{"topology: {family: ndc, link: {rate: nan}}", "topology.link.rate", `rate "nan"`},
		{"topology: {family: ndc, link: {delay: 1e7s}}", "topology.link.delay", "longest time"},
		{"topology: {family: ndc, link: {overhead: 1bdp}}", "topology.link.overhead", "give bytes"},
		{"topology: {family: ndc, link: {overhead: 10KB}}", "topology.link.overhead", "not in 0..9216B"},
		{"workload: [{kind: poisson, cdf: hadoop, load: .nan}]", "workload[0].load", "not a finite number"},
		{"workload: [{kind: poisson, cdf: pareto, load: 0.3, shape: .inf, mean: 1MB, cap: 1GB}]", "workload[0].shape", "not a finite number"},
		{"workload: [{kind: incast, senders: 4, size: 1MB, count: 2000000000, interval: 1us}]", "workload[0].count", "not in 1..1073741824"},
		{"workload: [{kind: moe, experts: 4, tokens: 10, token_size: 1KB, zipf: .inf}]", "workload[0].zipf", "not a finite number"},
		{"routing: {k: 100000}", "routing.k", "not in 1..1000"},
		{"workload: [{kind: incast, senders: 4, size: 1MB, count: 100000000, interval: 1ms}]", "workload[0].count", "would start at 99999.999s"},
		{"workload: [{kind: trace, format: hpcc, path: x, start: 1e12s}]", "workload[0].start", "longest time"},
	} {
		text := mergeBase(tc.yaml)
		expectField(t, fieldErrs(t, text), tc.field, tc.msg)
	}
}

// mergeBase puts the base spec's keys under the test's, without repeating a key the test sets.
func mergeBase(y string) string {
	lines := []string{}
	for _, l := range strings.Split(strings.TrimSpace(base), "\n") {
		key, _, _ := strings.Cut(l, ":")
		if !strings.Contains("\n"+y, "\n"+key+":") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n") + "\n" + y + "\n"
}

func TestAllErrorsReported(t *testing.T) {
	es := fieldErrs(t, `
backend: docker
dilation: -2
topology: {family: ndc, link: {rate: 0bps}}
switch: {flow_control: portfc, xof: 1, ecn: {pmax: 3}}
host: {transport: kernel-tcp, mtu: 10}
routing: {algorithm: nope}
workload:
  - {kind: incast, senders: -1, size: 1MB, cdf: x}
  - {kind: poisson, cdf: hadoop, load: 2}
`)
	for _, f := range []string{"name", "backend", "dilation", "duration", "topology.link.rate", "switch.xof", "switch.ecn.pmax",
		"host.transport", "host.mtu", "routing.algorithm", "workload[0].senders", "workload[0].cdf", "workload[1].load"} {
		if !es.Has(f) {
			t.Errorf("no error for %s in:\n%v", f, es)
		}
	}
	// Errors read top to bottom like the file; ones with no line (missing fields) come first.
	for i := 1; i < len(es); i++ {
		if es[i].Line < es[i-1].Line {
			t.Errorf("unsorted: %v", es)
		}
	}
	// A value that fails to decode is reported once, not again by validation.
	es = fieldErrs(t, mergeBase("switch: {buffer: lots}"))
	if len(es) != 1 {
		t.Errorf("want one error, got %v", es)
	}
}

func TestScalars(t *testing.T) {
	s, err := Parse([]byte(mergeBase(`
topology: {family: ring, n: 4, hosts_per_switch: 2, link: {rate: 1e9, delay: 1500ns}}
switch: {buffer: 1500, xoff: 1.5bdp, xon: 1bdp, headroom: 64KiB}
host: {mtu: 1000, rto: 0.5ms}
workload:
  - {kind: flows, list: [{src: h0, dst: h1, size: 6bdp, at: 0}]}
`)))
	if err != nil {
		t.Fatal(err)
	}
	if s.Topology.Link.Rate != 1e9 || s.Topology.Link.Delay.Clock() != 1500*clock.Nanosecond {
		t.Errorf("link %+v", s.Topology.Link)
	}
	if s.Switch.Buffer.Bytes != 1500 || s.Switch.XOFF.BDPs != 1.5 || s.Switch.Headroom.Bytes != 64*1024 {
		t.Errorf("switch %+v", s.Switch)
	}
	if s.Host.RTO.Clock() != 500*clock.Microsecond || s.Workload[0].List[0].Size.Resolve(1000) != 6000 {
		t.Errorf("host %+v", s.Host)
	}
	_, p := s.TopologyParams()
	if want := map[string]string{"n": "4", "hosts_per_switch": "2", "rate": "1Gbps", "delay": "1.5us"}; !reflect.DeepEqual(p, want) {
		t.Errorf("params %v want %v", p, want)
	}
	for _, tc := range []struct {
		v    any
		want string
	}{
		{Rate(100e9), "100Gbps"}, {Rate(1.6e12), "1.6Tbps"}, {Rate(12345), "12.345Kbps"}, {Rate(1.5), "1.5bps"},
		{Time(clock.Microsecond), "1us"}, {Time(84480), "84.48ns"}, {Time(7), "7ps"}, {Time(0), "0s"},
		{Bytes(5e6), "5MB"}, {BDPs(6), "6bdp"}, {Bytes(1500), "1.5KB"},
	} {
		out, _ := yaml.Marshal(tc.v)
		if got := strings.TrimSpace(string(out)); got != tc.want {
			t.Errorf("marshal %v = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestDefaults(t *testing.T) {
	s := &Spec{Name: "d", Topology: Topology{Family: "ndc", Params: map[string]string{"n": "4", "k": "1"}},
		Duration: Time(20 * clock.Millisecond),
		Workload: []Workload{{Kind: "poisson", CDF: "pareto", Load: 0.3, Start: Time(5 * clock.Millisecond)}}}
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	h, sw := s.Host, s.Switch
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"backend", s.Backend, "virtual"}, {"seed", s.Seed, int64(1)}, {"dilation", s.Dilation, 1.0},
		{"rate", s.Topology.Link.Rate, Rate(100e9)}, {"delay", s.Topology.Link.Delay, Time(clock.Microsecond)},
		{"buffer", sw.Buffer, Bytes(5e6)}, {"xoff", sw.XOFF, BDPs(6)}, {"xon", sw.XON, BDPs(4)},
		{"kmin", sw.ECN.KMin, Bytes(100e3)}, {"kmax", sw.ECN.KMax, Bytes(400e3)}, {"pmax", sw.ECN.PMax, 0.2},
		{"flow_control", sw.FlowControl, "pfc"}, {"relay", sw.RelayPFC, "pass-through"},
		{"transport", h.Transport, "lossless"}, {"cc", h.CC, "dcqcn"}, {"mtu", h.MTU, 1000},
		{"rto", h.RTO, Time(10 * clock.Millisecond)}, {"rto_low", h.RTOLow, Time(100 * clock.Microsecond)},
		{"rto_high", h.RTOHigh, Time(320 * clock.Microsecond)}, {"rto_threshold", h.RTOThreshold, 3},
		{"rate_ai", h.DCQCN.RateAI, Rate(20e6)}, {"rate_hai", h.DCQCN.RateHAI, Rate(200e6)},
		{"algorithm", s.Routing.Algorithm, "bcube"}, {"routing seed", s.Routing.Seed, int64(1)},
		{"poisson duration", s.Workload[0].Duration, Time(15 * clock.Millisecond)},
		{"pareto shape", s.Workload[0].Shape, 1.05}, {"pareto mean", s.Workload[0].Mean, Bytes(100e3)},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// Lossy transports pull flow control to lossy, and vice versa.
	l := &Spec{Host: Host{Transport: "gbn"}}
	l.ApplyDefaults()
	if l.Switch.FlowControl != "lossy" {
		t.Errorf("gbn -> %s", l.Switch.FlowControl)
	}
	l = &Spec{Switch: Switch{FlowControl: "lossy"}}
	l.ApplyDefaults()
	if l.Host.Transport != "irn" {
		t.Errorf("lossy -> %s", l.Host.Transport)
	}
	// Defaults that depend on another field follow it when a suite changes it and re-applies.
	v := s.Clone()
	v.Switch.FlowControl, v.Routing.Algorithm = "pfcstar", "hybrid"
	v.ApplyDefaults()
	if v.Switch.Priorities != 2 || v.Routing.Threshold != Bytes(100e3) || s.Switch.Priorities != 0 {
		t.Errorf("re-applied: %+v %+v", v.Switch, v.Routing)
	}
}

func TestGoAPI(t *testing.T) {
	s := &Spec{
		Name:     "go-built",
		Backend:  "netns",
		Dilation: 100,
		Topology: Topology{Family: "ndc", Params: map[string]string{"n": "4", "k": "1"}, Link: Link{Rate: Gbps(100)}},
		Switch:   Switch{FlowControl: "portfc", XOFF: BDPs(6), XON: BDPs(4), ECN: ECN{Enabled: Bool(false)}},
		Host:     Host{Transport: "irn", CC: "none"},
		Routing:  Routing{Algorithm: "ksp", K: 4},
		Workload: []Workload{
			{Kind: "incast", Senders: 8, Size: MustSize("1MB"), At: At(clock.Millisecond)},
			{Kind: "ps", PushSize: MustSize("8MB"), Workers: 8, Rounds: 2},
			{Kind: "moe", Experts: 8, TopK: 2, Tokens: 256, TokenSize: Bytes(4096), Zipf: 1.1},
			{Kind: "flows", List: []Flow{{Src: "h0", Dst: "h5", Size: Bytes(1e6), Via: []string{"h1"}}}},
		},
		Duration: At(20 * clock.Millisecond),
		Expect:   map[string]Expectation{"ps_stage1_reduction_vs_irn": {Value: 0.126, Source: "PortFC §V-D Fig. 15(a)"}},
	}
	if err := s.Resolve(); err != nil {
		t.Fatal(err)
	}
	if s.EffectiveDilation() != 100 || s.Workload[1].BroadcastSize != Bytes(8e6) || s.Workload[1].Server != "h0" {
		t.Errorf("%+v", s)
	}
	out, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	back.lines = nil
	if !reflect.DeepEqual(back, s) {
		t.Errorf("round trip:\n%s", out)
	}

	// A field of another kind set in Go is caught by Validate, as the decoder catches it in YAML.
	bad := s.Clone()
	bad.Workload[0].CDF = "hadoop"
	bad.Workload[3].List[0].Via[0] = "s1"
	err = bad.Validate()
	var es Errors
	if !errors.As(err, &es) || !es.Has("workload[0].cdf") || !es.Has("workload[3].list[0].via[0]") {
		t.Errorf("got %v", err)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Line != 0 {
		t.Errorf("errors.As FieldError: %v", fe)
	}
	if s.Workload[3].List[0].Via[0] != "h1" {
		t.Error("Clone aliases flow lists")
	}
}

func TestTopologyKeysHook(t *testing.T) {
	defer func() { TopologyKeys = nil }()
	TopologyKeys = func(f string) []string {
		if f == "ndc" {
			return []string{"delay", "hbd_rate", "k", "n", "rail", "rate"}
		}
		return nil
	}
	es := fieldErrs(t, mergeBase("topology: {family: ndc, n: 2, kk: 1}"))
	expectField(t, es, "topology.kk", "unknown field for family ndc (did you mean k?)")
	es = fieldErrs(t, mergeBase("topology: {family: ndx}"))
	expectField(t, es, "topology.family", "not a known topology family")
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "exp-1.yaml")
	os.WriteFile(p, []byte(`
topology: {family: ring, n: 4}
duration: 1ms
workload:
  - {kind: trace, format: hpcc, path: flows.txt}
  - {kind: poisson, cdf: "file:cdf/x.txt", load: 0.2}
`), 0o644)
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "exp-1" || s.Workload[0].Path != filepath.Join(dir, "flows.txt") || s.Workload[1].CDF != "file:"+filepath.Join(dir, "cdf/x.txt") {
		t.Errorf("%+v", s)
	}
	os.WriteFile(p, []byte("name: x\nduration: 1ms\ntopology: {family: ring}\nhost: {mtu: 1}\n"), 0o644)
	_, err = Load(p)
	if err == nil || err.Error() != p+":4: host.mtu: 1 is not in 256..9000 (payload bytes per packet)" {
		t.Errorf("got %v", err)
	}
	if _, err := Parse([]byte("name: x\nhost: {mtu: 1\n")); err == nil || !strings.HasPrefix(err.Error(), "line ") {
		t.Errorf("syntax error: %v", err)
	}
	for _, text := range []string{"", "- a\n- b\n", "name: [\n", "a: 1\n---\nb: 2\n"} {
		if _, err := Parse([]byte(text)); err == nil {
			t.Errorf("accepted %q", text)
		}
	}
}

// A small file whose aliases expand to millions of values is refused, not walked (issue 12).
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: t\ntopology: {family: ndc, n: 2, k: 1}\nduration: 10ms\nworkload:\n  - &w {kind: flows, list: [&f {src: h0, dst: h1, size: 1KB}")
	b.WriteString(strings.Repeat(", *f", 1100))
	b.WriteString("]}\n")
	b.WriteString(strings.Repeat("  - *w\n", 1000))
	start := time.Now()
	_, err := Parse([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "the spec expands to more than 65536 values through YAML aliases") {
		t.Fatalf("alias bomb (%d bytes): %v", b.Len(), err)
	}
	t.Logf("%d-byte alias bomb refused in %v", b.Len(), time.Since(start))
}

// A spec of 20 000 explicit flows (about 1 MB, no aliases) is within the documented 16 MB and 5e6
// flows budget: only values reached through aliases count toward the alias guard (issue 37: it
// counted every value and refused this spec as an alias bomb).
func TestExplicitFlowsAreNoAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: t\ntopology: {family: ndc, n: 4, k: 1}\nduration: 10ms\nworkload:\n- kind: flows\n  list:\n")
	for i := range 20000 {
		fmt.Fprintf(&b, "  - {src: h%d, dst: h%d, size: %d, at: %dns}\n", i%16, (i+1)%16, 1000+i, i)
	}
	s, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatalf("%d bytes of explicit flows: %v", b.Len(), err)
	}
	if n := len(s.Workload[0].List); n != 20000 {
		t.Errorf("%d flows", n)
	}
}

// IRN's BDP cap and low timeout are IRN's: on by default for irn with DCQCN, off for a DCTCP-controlled
// irn (the Dragonfly paper's TelemetryLERP), and a spec's own setting wins.
func TestBDPCapDefaultPerScheme(t *testing.T) {
	base := "name: x\ntopology: {family: fattree, k: 4}\nswitch: {flow_control: lossy}\nhost: {transport: irn%s}\n" +
		"workload:\n  - {kind: poisson, cdf: websearch, load: 0.3, duration: 100us}\nduration: 1ms\n"
	for _, c := range []struct {
		host string
		want bool
	}{{"", true}, {", cc: dcqcn", true}, {", cc: dctcp", false}, {", cc: dctcp, bdp_cap: true", true}, {", bdp_cap: false", false}} {
		s, err := Parse([]byte(fmt.Sprintf(base, c.host)))
		if err != nil {
			t.Fatalf("%q: %v", c.host, err)
		}
		if got := s.Host.BDPCapEnabled(); got != c.want {
			t.Errorf("host {transport: irn%s}: bdp_cap %v, want %v", c.host, got, c.want)
		}
		// IRN's low timeout is IRN's too: a DCTCP-controlled irn has one timeout, RTO_high.
		dctcp := strings.Contains(c.host, "dctcp")
		if lowIsHigh := s.Host.RTOLow == s.Host.RTOHigh; lowIsHigh != dctcp || s.Host.RTOHigh != DefaultRTOHigh {
			t.Errorf("host {transport: irn%s}: rto_low %v, rto_high %v", c.host, s.Host.RTOLow, s.Host.RTOHigh)
		}
	}
}

// switch.pfcstar_raise is PFC*'s alone, and one of PFCStarRaises.
func TestPFCStarRaise(t *testing.T) {
	for _, tc := range []struct{ sw, bad string }{
		{"{flow_control: pfcstar, pfcstar_raise: switches}", ""},
		{"{flow_control: pfcstar, pfcstar_raise: hosts}", "switch.pfcstar_raise"},
		{"{flow_control: pfc, pfcstar_raise: switches}", "switch.pfcstar_raise"},
	} {
		_, err := Parse([]byte("name: x\ntopology: {family: ndc, n: 4, k: 1}\nswitch: " + tc.sw + "\nworkload:\n  - {kind: permutation, size: 1MB}\nduration: 1ms\n"))
		if (tc.bad == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("switch %s: %v, want error naming %q", tc.sw, err, tc.bad)
		}
	}
}

// routing.reroute_wait is telemetry's alone, and one of RerouteWaits.
func TestRerouteWait(t *testing.T) {
	for _, tc := range []struct{ routing, bad string }{
		{"{algorithm: telemetry, reroute_wait: paper}", ""},
		{"{algorithm: telemetry, reroute_wait: never}", "routing.reroute_wait"},
		{"{algorithm: shortest, reroute_wait: paper}", "routing.reroute_wait"},
	} {
		_, err := Parse([]byte("name: x\ntopology: {family: dragonfly, p: 2, a: 4, h: 2}\nhost: {transport: gbn}\nrouting: " + tc.routing + "\nworkload:\n  - {kind: permutation, size: 1MB}\nduration: 1ms\n"))
		if (tc.bad == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("routing %s: %v, want error naming %q", tc.routing, err, tc.bad)
		}
	}
}
