package lab_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
)

// Issue 12's bad inputs that pass spec validation: each is refused by the lab, quickly, naming the
// field and the number, or runs correctly.
func TestBadInputRefusedByLab(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"incast count", "workload: [{kind: incast, senders: 1, size: 1KB, count: 100000000, interval: 1ps}]",
			"workload[0]: about 1e+08 flows (count 100000000 x senders 1), more than the budget of 5000000"},
		{"moe tokens", "workload: [{kind: moe, experts: 64, top_k: 8, tokens: 1000000, token_size: 10GB}]",
			"workload[0].token_size: tokens x top_k x token_size"},
		{"moe draws", "workload: [{kind: moe, experts: 64, top_k: 8, tokens: 100000000, token_size: 1B, layers: 4}]",
			"generator steps"},
		{"poisson load x duration", "duration: 10s\nworkload: [{kind: poisson, cdf: hadoop, load: 1}]",
			"flows (16 sources x"},
		{"ndc(10,4)", "topology: {family: ndc, n: 10, k: 4}", "topology: about 150000 devices"},
		{"fattree k=64", "topology: {family: fattree, k: 40}", "routing table entries"},
	} {
		text := withBase(tc.yaml)
		s, err := spec.Parse([]byte(text))
		if err != nil {
			t.Fatalf("%s: spec refused: %v", tc.name, err)
		}
		start := time.Now()
		_, err = lab.Build(s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if d := time.Since(start); d > 5*time.Second { // generous: 2 shared cores; the claim is "under a second"
			t.Errorf("%s: refused after %v", tc.name, d)
		}
	}
	// --budget raises the limit: the same incast at count 1000 fits, at 1e8 it needs flows=1e9.
	b, err := lab.ParseBudget("flows=2e8,memory=1000GB", lab.DefaultBudget)
	if err != nil || b.Flows != 2e8 || b.MemoryBytes != 1e12 {
		t.Fatalf("ParseBudget: %+v %v", b, err)
	}
	if _, err := lab.ParseBudget("flows=nan", lab.DefaultBudget); err == nil {
		t.Error("--budget flows=nan accepted")
	}
}

// withBase adds the base spec's keys the case does not set itself.
func withBase(y string) string {
	out := y
	for _, l := range []string{"name: t", "topology: {family: ndc, n: 4, k: 1}", "duration: 10ms"} {
		key, _, _ := strings.Cut(l, ":")
		if !strings.Contains("\n"+y, "\n"+key+":") {
			out = l + "\n" + out
		}
	}
	return out
}

// HPCC's generator starts flows at 2 s: a 20 ms run refuses the trace, naming the count and rebase;
// with rebase: true the flows start at `start` and run.
func TestTraceOutsideTheRun(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "flow.txt")
	if err := os.WriteFile(p, []byte("3\n0 1 3 100 1000 2.0\n2 3 3 100 1000 2.000001\n1 0 3 100 1000 2.00001\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := "name: t\ntopology: {family: ndc, n: 2, k: 1}\nduration: 20ms\nworkload: [{kind: trace, format: hpcc, path: %s%s}]\n"
	s, err := spec.Parse([]byte(fmt.Sprintf(base, p, "")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lab.Build(s); err == nil || !strings.Contains(err.Error(), "workload[0]: 3 of 3 flows would start at or after the run's duration 20ms") ||
		!strings.Contains(err.Error(), "rebase: true") {
		t.Fatalf("2 s trace in a 20 ms run: %v", err)
	}
	s, err = spec.Parse([]byte(fmt.Sprintf(base, p, ", rebase: true, start: 1ms")))
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Flows) != 3 || l.Flows[0].At != clock.Millisecond || l.Flows[2].At != clock.Millisecond+10*clock.Microsecond {
		t.Errorf("rebased flows start at %v, %v, %v; want 1ms, 1.001ms, 1.01ms", l.Flows[0].At, l.Flows[1].At, l.Flows[2].At)
	}
}

// A buffer headroom leaves no room in is refused naming switch.buffer and the least that works; a
// headroom below the link's need and an XOFF above the shared buffer build, with a warning each.
func TestLosslessBufferChecks(t *testing.T) {
	base := "name: t\ntopology: {family: ndc, n: 4, k: 1}\nduration: 1ms\nswitch: {flow_control: pfc, %s}\n"
	build := func(sw string) (*lab.Lab, error) {
		s, err := spec.Parse([]byte(fmt.Sprintf(base, sw)))
		if err != nil {
			t.Fatal(err)
		}
		return lab.Build(s)
	}
	_, err := build("buffer: 60000")
	if err == nil || !strings.Contains(err.Error(), "switch.buffer: 60KB leaves no shared space on s0") || !strings.Contains(err.Error(), "give at least 113049B") {
		t.Errorf("60 KB buffer: %v", err)
	}
	l, err := build("buffer: 1MB, headroom: 10KB")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0], "switch.headroom: 10KB is below the 28262B") {
		t.Errorf("warnings %q", l.Warnings)
	}
	l, err = build("buffer: 1MB, xoff: 990KB, xon: 500KB")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0], "switch.xoff: 990KB exceeds the 886952B of shared buffer") {
		t.Errorf("warnings %q", l.Warnings)
	}
	l, err = build("buffer: 12MB")
	if err != nil || len(l.Warnings) != 0 {
		t.Errorf("defaults: %v, warnings %q", err, l.Warnings)
	}
}

// The spec docs/architecture.md shows as the example of every section is one a lab builds, not only
// one that parses.
func TestDesignExampleBuilds(t *testing.T) {
	s, err := spec.Load(filepath.Join("spec", "testdata", "design-example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lab.Build(s); err != nil {
		t.Fatalf("the documented example does not build: %v", err)
	}
}

// TestOrderRoomRefused: a switch of more ports than an event's order can name (clock.CheckOrderRoom) is
// refused by name, whatever --budget allows: its ports' arrival orders would alias the next device's.
func TestOrderRoomRefused(t *testing.T) {
	s, err := spec.Parse([]byte(withBase(fmt.Sprintf("topology: {family: ring, n: 3, hosts_per_switch: %d}", clock.MaxOrderPort))))
	if err != nil {
		t.Fatal(err)
	}
	// Devices raised past the ring's 196605; the routing tables' limit stays, so a lab that let the ports
	// through is refused by it instead of building 4e10 table entries.
	b, err := lab.ParseBudget("devices=1e6", lab.DefaultBudget)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lab.BuildWithin(s, b)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("a device of %d ports", clock.MaxOrderPort+2)) {
		t.Fatalf("ring of %d hosts per switch: %v", clock.MaxOrderPort, err)
	}
}
