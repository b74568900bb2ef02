package claims

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/report"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Three topology seeds of one spec, split over two directories, give one row its mean, t-interval
// and topology seed count; a file of another spec the glob must not take, and a row whose outputs are
// not under the directories keeps its stored numbers.
func TestUpdateAnalyze(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(a, "paths/fc-n400-k4-t1.json"), `{"lp_throughput": 0, "updown_paths": {"4": 4.0, "all": 8}}`)
	writeFile(t, filepath.Join(a, "paths/fc-n400-k4-t2.json"), `{"lp_throughput": 0, "updown_paths": {"4": 5.0, "all": 8}}`)
	writeFile(t, filepath.Join(b, "paths/fc-n400-k4-t3.json"), `{"lp_throughput": 0, "updown_paths": {"4": 9.0, "all": 8}}`)
	writeFile(t, filepath.Join(a, "paths/fc-n400-k4x-t1.json"), `{"updown_paths": {"4": 1000}}`)
	cs := []Claim{
		{ID: "fcplus-16.3", MeasuredMean: f(1), Seeds: 7, TopologySeeds: 1,
			Source: &Source{Analyze: "paths/fc-n400-k4-t*.json", Field: "updown_paths.4", Scale: 10}},
		{ID: "fcplus-16.4", MeasuredMean: f(2), CI95: []float64{1, 3}, Seeds: 1, TopologySeeds: 5,
			Source: &Source{Analyze: "paths/fc-n600-k4-t*.json", Field: "updown_paths.4"}},
	}
	if err := Check([]Claim{{ID: "x-1", Paper: "fcplus", Kind: KindNone, Source: cs[0].Source}}); err != nil {
		t.Fatal(err)
	}
	ids, read, err := UpdateAnalyze(cs, []string{a, b, a}, "analyze outputs")
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != "fcplus-16.3" || len(read) != 3 {
		t.Fatalf("refreshed %v from %v", ids, read)
	}
	// 4, 5, 9 (times 10): mean 60, sd sqrt(7)*10, half-width t(0.975, 2) sd / sqrt(3).
	half := report.TQuantile(0.975, 2) * math.Sqrt(7) * 10 / math.Sqrt(3)
	c := cs[0]
	if *c.MeasuredMean != 60 || len(c.CI95) != 2 || math.Abs(c.CI95[0]-(60-half)) > 1e-9 || math.Abs(c.CI95[1]-(60+half)) > 1e-9 ||
		c.TopologySeeds != 3 || c.Seeds != 1 || c.Provenance != "analyze outputs" {
		t.Errorf("row: mean %v ci %v (want 60 ± %.4f) seeds %d topology seeds %d provenance %q", *c.MeasuredMean, c.CI95, half, c.Seeds, c.TopologySeeds, c.Provenance)
	}
	if c := cs[1]; *c.MeasuredMean != 2 || c.CI95[0] != 1 || c.TopologySeeds != 5 {
		t.Errorf("row without outputs changed: %+v", c)
	}

	// A matched file without the field names the row, the file and the field.
	cs[0].Source.Field = "updown_paths.6"
	_, _, err = UpdateAnalyze(cs, []string{a}, "")
	if err == nil || !strings.Contains(err.Error(), "fcplus-16.3") || !strings.Contains(err.Error(), "fc-n400-k4-t1.json") ||
		!strings.Contains(err.Error(), "updown_paths.6") {
		t.Errorf("missing field: %v", err)
	}
	cs[0].Source.Field = "updown_paths"
	if _, _, err = UpdateAnalyze(cs, []string{a}, ""); err == nil || !strings.Contains(err.Error(), "not a number") {
		t.Errorf("object field: %v", err)
	}
}

// With over, each topology seed's value is divided by the other fabric's of the same seed (the text
// the wildcards matched), not by whichever file sorts next to it; a seed without its partner is an
// error, and so is one seed found in two directories.
func TestUpdateAnalyzeOver(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for name, x := range map[string]string{"fcplus-t1": "0.6", "fcplus-t2": "0.9", "fc-t0": "0.1", "fc-t1": "0.4", "fc-t2": "0.3"} {
		writeFile(t, filepath.Join(a, "lp/"+name+".json"), `{"lp_throughput": `+x+`}`)
	}
	cs := []Claim{{ID: "fcplus-7.2", Source: &Source{Analyze: "lp/fcplus-t*.json", Over: "lp/fc-t*.json", Field: "lp_throughput"}}}
	ids, read, err := UpdateAnalyze(cs, []string{a}, "")
	if err != nil || len(ids) != 1 || len(read) != 4 {
		t.Fatalf("refreshed %v from %v: %v", ids, read, err)
	}
	// 0.6/0.4 and 0.9/0.3; pairing by sorted position would divide by fc-t0's 0.1.
	if c := cs[0]; math.Abs(*c.MeasuredMean-2.25) > 1e-12 || c.TopologySeeds != 2 {
		t.Errorf("ratio: mean %v (want (1.5 + 3) / 2) topology seeds %d", *c.MeasuredMean, c.TopologySeeds)
	}
	writeFile(t, filepath.Join(b, "lp/fcplus-t3.json"), `{"lp_throughput": 1}`)
	if _, _, err := UpdateAnalyze(cs, []string{a, b}, ""); err == nil || !strings.Contains(err.Error(), "fcplus-t3.json") {
		t.Errorf("seed without its partner: %v", err)
	}
	writeFile(t, filepath.Join(b, "lp/fcplus-t3.json"), `{"lp_throughput": 1}`)
	writeFile(t, filepath.Join(b, "lp/fcplus-t1.json"), `{"lp_throughput": 1}`)
	if _, _, err := UpdateAnalyze(cs, []string{a, b}, ""); err == nil || !strings.Contains(err.Error(), "same \"1\"") {
		t.Errorf("one seed in two directories: %v", err)
	}
}

// A source is one kind or the other, complete.
func TestSourceCheck(t *testing.T) {
	for _, s := range []Source{
		{Analyze: "x/*.json"},
		{Field: "lp_throughput"},
		{Over: "x/*.json"},
		{Analyze: "x/*.json", Field: "lp_throughput", Over: "x/[.json"},
		{Analyze: "x/*.json", Field: "lp_throughput", Group: "g", Metric: "m"},
		{Analyze: "x/[.json", Field: "lp_throughput"},
		{Group: "g"},
	} {
		s := s
		if err := Check([]Claim{{ID: "x-1", Paper: "fcplus", Kind: KindNone, Source: &s}}); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}

// A share source counts the files whose value satisfies its condition: two of four efficiencies below
// 0.9 is 50%, with the Wilson interval of 2 in 4 (15.0% to 85.0%); a share without analyze is refused.
func TestUpdateAnalyzeShare(t *testing.T) {
	d := t.TempDir()
	for i, x := range []string{"0.85", "0.95", "0.8", "0.99"} {
		writeFile(t, filepath.Join(d, "eff", "u-t"+string(rune('1'+i))+".json"), `{"lp_throughput": `+x+`}`)
	}
	cs := []Claim{{ID: "fibre-channel-9.3", Paper: "fibre-channel", Kind: KindBand, Band: []*float64{f(40), f(60)},
		Source: &Source{Analyze: "eff/u-t*.json", Field: "lp_throughput", Share: "<0.9"}}}
	if err := Check(cs); err != nil {
		t.Fatal(err)
	}
	if _, _, err := UpdateAnalyze(cs, []string{d}, ""); err != nil {
		t.Fatal(err)
	}
	c := cs[0]
	if *c.MeasuredMean != 50 || len(c.CI95) != 2 || math.Abs(c.CI95[0]-15.00) > 0.01 || math.Abs(c.CI95[1]-85.00) > 0.01 {
		t.Errorf("share: %v %v, want 50 [15.00, 85.00]", *c.MeasuredMean, c.CI95)
	}
	if err := Check([]Claim{{ID: "fibre-channel-9.4", Paper: "fibre-channel", Kind: KindNone, Source: &Source{Group: "g", Metric: "m", Share: "<1"}}}); err == nil {
		t.Error("a share without analyze was accepted")
	}
}
