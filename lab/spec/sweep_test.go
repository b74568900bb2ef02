package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sweepBase = `
name: sw
seed: 3
topology: {family: ndc, n: 2, k: 1}
workload:
  - {kind: poisson, cdf: websearch, load: 0.5, duration: 1ms}
duration: 10ms
`

func writeSpec(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExpandSeedsAndSweep(t *testing.T) {
	p := writeSpec(t, sweepBase+"seeds: 2\nsweep:\n  workload.0.load: [0.3, 0.7]\n")
	// The CLI adds an axis on a field the file leaves to its default.
	ax, err := ParseSet("switch.ecn.kmin=50KB,100KB,200KB")
	if err != nil {
		t.Fatal(err)
	}
	pts, err := Expand(p, []Axis{ax}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2*3*2 {
		t.Fatalf("%d points, want 12", len(pts))
	}
	// First axis slowest, seeds innermost, from the spec's seed.
	first, last := pts[0], pts[len(pts)-1]
	if first.Label() != "workload.0.load=0.3,switch.ecn.kmin=50KB" || first.Seed != 3 || pts[1].Seed != 4 {
		t.Errorf("first point %s seed %d, next seed %d", first.Label(), first.Seed, pts[1].Seed)
	}
	if last.Label() != "workload.0.load=0.7,switch.ecn.kmin=200KB" {
		t.Errorf("last point %s", last.Label())
	}
	if w := last.Spec.Workload[0].Load; w != 0.7 || last.Spec.Switch.ECN.KMin != MustSize("200KB") || last.Spec.Seed != 4 {
		t.Errorf("last spec load %v kmin %v seed %d", w, last.Spec.Switch.ECN.KMin, last.Spec.Seed)
	}
	if last.Spec.Sweep != nil || last.Spec.Seeds != 0 || last.Spec.Name != "sw" {
		t.Errorf("a run's spec keeps sweep %v seeds %d name %q", last.Spec.Sweep, last.Spec.Seeds, last.Spec.Name)
	}
	// --seeds replaces seeds:, --set replaces the spec's axis of the same path.
	ax, _ = ParseSet("workload[0].load=0.9")
	pts, err = Expand(p, []Axis{ax}, 3)
	if err != nil || len(pts) != 3 || pts[2].Spec.Workload[0].Load != 0.9 || pts[2].Seed != 5 {
		t.Fatalf("override: %d points, %v", len(pts), err)
	}
	// Sweeping seed itself picks the seeds (not an axis of its own).
	ax, _ = ParseSet("seed=7,11")
	pts, err = Expand(writeSpec(t, sweepBase), []Axis{ax}, 0)
	if err != nil || len(pts) != 2 || pts[1].Seed != 11 || pts[1].Spec.Seed != 11 || pts[1].Label() != "" {
		t.Fatalf("seed sweep: %+v %v", pts, err)
	}
	if _, err := Expand(writeSpec(t, sweepBase), []Axis{ax}, 2); err == nil {
		t.Error("seed sweep with --seeds 2 accepted")
	}
}

func TestExpandErrorsNameTheRun(t *testing.T) {
	p := writeSpec(t, sweepBase)
	for _, c := range []struct{ set, want string }{
		{"workload.0.load=0.5,1.5", "workload.0.load=1.5, seed 3"},
		{"workload.0.load=0.5,1.5", "workload[0].load"},
		{"workload.3.load=0.5", "workload has 1 entries"},
		{"switch.bufer=1MB", "did you mean buffer"},
		{"duration.x=1", "duration is a single value"},
		{"switch.buffer=lots", "switch.buffer"},
	} {
		ax, err := ParseSet(c.set)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Expand(p, []Axis{ax}, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %s: %v, want %q", c.set, err, c.want)
		}
	}
	for _, bad := range []string{"load", "=1", "a=1,,2"} {
		if _, err := ParseSet(bad); err == nil {
			t.Errorf("ParseSet(%q) accepted", bad)
		}
	}
	if a, err := ParseSet("workload.0.hosts=[h0,h1],[h2]"); err != nil || len(a.Values) != 2 || a.Values[0] != "[h0,h1]" {
		t.Errorf("bracketed values %+v %v", a, err)
	}
	_, err := Parse([]byte(sweepBase + "seeds: -1\nsweep: {workload.0.load: [], name: [a]}\n"))
	for _, f := range []string{"seeds", "sweep.workload.0.load", "sweep.name"} {
		if es, ok := err.(Errors); !ok || !es.Has(f) {
			t.Errorf("spec sweep error for %s missing: %v", f, err)
		}
	}
}
