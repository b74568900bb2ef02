package claims

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/report"
)

// Holds conditions on an interval: the whole interval must satisfy them.
func TestHoldsWithin(t *testing.T) {
	for _, c := range []struct {
		holds  string
		lo, hi float64
		want   bool
	}{
		{"<0", -3, -1, true}, {"<0", -3, 0, false}, {"<=0", -3, 0, true}, {">1", 1.1, 2, true}, {">1", 1, 2, false},
		{">=1", 1, 2, true}, {"=0", 0, 0, true}, {"=0", 0, 1, false}, {"!=0", 1, 2, true}, {"!=0", -1, 1, false},
		{"[-10, 10]", -9, 9.5, true}, {"[-10, 10]", -11, 0, false}, {"[-10,10]", 0, 10.5, false},
	} {
		h, err := parseHolds(c.holds)
		if err != nil {
			t.Fatalf("%s: %v", c.holds, err)
		}
		if got := h.within(c.lo, c.hi); got != c.want {
			t.Errorf("%s on [%g, %g]: %v, want %v", c.holds, c.lo, c.hi, got, c.want)
		}
	}
	for _, bad := range []string{"", "0", "~1", "[2, 1]", "[1]", "<x"} {
		if _, err := parseHolds(bad); err == nil {
			t.Errorf("holds %q: no error", bad)
		}
	}
}

// An order of rows counts the adjacent pairs whose intervals overlap (or are missing); the row's
// seeds and provenance are the rows' business, not the count's, and stay.
func TestCountRows(t *testing.T) {
	cs := []Claim{
		{ID: "p-1", MeasuredMean: f(29.5), CI95: []float64{28.3, 30.7}},
		{ID: "p-2", MeasuredMean: f(30.3), CI95: []float64{28.9, 31.6}},
		{ID: "p-3", MeasuredMean: f(43.8), CI95: []float64{42.6, 45.1}},
		{ID: "p-4", MeasuredMean: f(50)},
		{ID: "p-9", Kind: KindCount, MeasuredMean: f(7), Seeds: 60, Provenance: "re-run", Source: &Source{Count: []Term{{Rows: []string{"p-1", "p-2", "p-3"}}}}},
		{ID: "p-10", Kind: KindCount, Source: &Source{Count: []Term{{Rows: []string{"p-2", "p-3", "p-4"}}}}},
	}
	ids, _, err := UpdateCounts(cs, nil, "")
	if err != nil || len(ids) != 2 {
		t.Fatalf("recomputed %v: %v", ids, err)
	}
	c := cs[4]
	if *c.MeasuredMean != 1 || c.CI95 != nil || c.Seeds != 60 || c.Provenance != "re-run" ||
		!strings.Contains(c.Counted, "p-1 [28.3, 30.7] < p-2 [28.9, 31.6]: not separated") || !strings.Contains(c.Counted, "p-2 [28.9, 31.6] < p-3 [42.6, 45.1]: separated") {
		t.Errorf("order: %v violations, seeds %d, provenance %q, counted %q", *c.MeasuredMean, c.Seeds, c.Provenance, c.Counted)
	}
	if v, _ := Judge(c); v != "N" {
		t.Errorf("one violation judged %s", v)
	}
	if c := cs[5]; *c.MeasuredMean != 1 || !strings.Contains(c.Counted, "no interval") {
		t.Errorf("a row without an interval separates nothing: %v %q", *c.MeasuredMean, c.Counted)
	}
	cs[5].Source.Count[0].Rows[2] = "p-99"
	if _, _, err := UpdateCounts(cs, nil, ""); err == nil || !strings.Contains(err.Error(), "p-99") {
		t.Errorf("unknown row: %v", err)
	}
}

// Two groups over three seeds, a paired by seed over b, and analyze outputs: each term's violations add
// up; the seed file's provenance wins; a row whose inputs are elsewhere keeps its numbers; inputs
// split over directories with one left out is an error.
func TestCountSeedsAndAnalyze(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(a, "runs/x.json"), `{"provenance": "re-run x", "groups": {
	 "a": {"seeds": [1, 2, 3], "metrics": {"fct_avg_s": [1, 2, 3]}},
	 "b": {"seeds": [3, 2, 1], "metrics": {"fct_avg_s": [3.35, 2.2, 1.11]}}}}`)
	writeFile(t, filepath.Join(b, "small/dfksp-n16-t1.json"), `{"cbd_cycles": {"0": 0, "1": 0}}`)
	writeFile(t, filepath.Join(b, "small/dfksp-n16-t2.json"), `{"cbd_cycles": {"0": 0, "1": 2}}`)
	writeFile(t, filepath.Join(b, "small/dfksp-n24-t2.json"), `{"cbd_cycles": {"0": 0}}`)
	seeds := Source{Seeds: "runs/x.json", Group: "a", Over: "b", Metric: "fct_avg_s", Offset: -1, Scale: 100}
	cs := []Claim{
		{ID: "e-1", Kind: KindCount, Source: &Source{Count: []Term{
			{Source: seeds, Holds: "<0"},      // a is 9.9%, 9.1%, 10.4% below b: holds
			{Source: seeds, Holds: "[-5, 5]"}, // fails
			{Source: Source{Analyze: "small/dfksp-*.json", Field: "cbd_cycles.*"}, Holds: "=0"}, // n16-t2 fails
		}}},
		{ID: "e-2", Kind: KindCount, MeasuredMean: f(3), Source: &Source{Count: []Term{
			{Source: Source{Analyze: "elsewhere/*.json", Field: "x"}, Holds: "=0"}}}},
	}
	if err := Check([]Claim{{ID: "x-1", Paper: "fcplus", Kind: KindCount, Source: cs[0].Source}}); err != nil {
		t.Fatal(err)
	}
	ids, read, err := UpdateCounts(cs, []string{a, b}, "analyze outputs")
	if err != nil || len(ids) != 1 || len(read) != 5 {
		t.Fatalf("recomputed %v from %v: %v", ids, read, err)
	}
	c := cs[0]
	if *c.MeasuredMean != 2 || c.Seeds != 3 || c.Provenance != "re-run x" || c.TopologySeeds != 1 {
		t.Errorf("count: %v violations (want 2), seeds %d, provenance %q, topology seeds %d", *c.MeasuredMean, c.Seeds, c.Provenance, c.TopologySeeds)
	}
	if !strings.Contains(c.Counted, "a / b fct_avg_s") || !strings.Contains(c.Counted, "(3 seeds): holds <0") ||
		!strings.Contains(c.Counted, "fails [-5, 5]") || !strings.Contains(c.Counted, "3 files, 0 to 2, 1 not =0 (n16-t2)") {
		t.Errorf("counted: %s", c.Counted)
	}
	if *cs[1].MeasuredMean != 3 {
		t.Errorf("row without inputs changed: %v", *cs[1].MeasuredMean)
	}
	// The seeds file is under a, the outputs under b: giving only b is a directory left out.
	if _, _, err := UpdateCounts(cs, []string{b}, ""); err == nil || !strings.Contains(err.Error(), "left out") {
		t.Errorf("split inputs: %v", err)
	}
	// A seed without its partner is an error, not a smaller sample.
	writeFile(t, filepath.Join(a, "runs/x.json"), `{"groups": {"a": {"seeds": [1, 2], "metrics": {"fct_avg_s": [1, 2]}},
	 "b": {"seeds": [1], "metrics": {"fct_avg_s": [3]}}}}`)
	if _, _, err := UpdateCounts(cs, []string{a, b}, ""); err == nil || !strings.Contains(err.Error(), "seed 2") {
		t.Errorf("missing pair: %v", err)
	}
}

// A band row read from a per-seed file: the paired ratio's mean and interval, through offset and scale.
func TestUpdateSeeds(t *testing.T) {
	d := t.TempDir()
	writeFile(t, filepath.Join(d, "runs/rail.json"), `{"provenance": "re-run rail", "groups": {
	 "portfc": {"seeds": [1, 2, 3], "metrics": {"link_util.hbd": [0.3, 0.4, 0.6]}},
	 "irn": {"seeds": [1, 2, 3], "metrics": {"link_util.hbd": [0.3, 0.2, 0.3]}}}}`)
	cs := []Claim{{ID: "portfc-11.2", Kind: KindBand, Source: &Source{Seeds: "runs/rail.json", Group: "portfc", Over: "irn", Metric: "link_util.hbd"}}}
	ids, read, err := UpdateSeeds(cs, []string{d})
	if err != nil || len(ids) != 1 || len(read) != 1 {
		t.Fatalf("refreshed %v from %v: %v", ids, read, err)
	}
	want := report.MeanCI([]float64{1, 2, 2}, report.Level)
	c := cs[0]
	if math.Abs(*c.MeasuredMean-want.Mean) > 1e-12 || math.Abs(c.CI95[0]-want.Lo) > 1e-12 || c.Seeds != 3 || c.Provenance != "re-run rail" {
		t.Errorf("row: mean %v ci %v seeds %d provenance %q", *c.MeasuredMean, c.CI95, c.Seeds, c.Provenance)
	}
	cs[0].Source.Metric = "fct_avg_s"
	if _, _, err := UpdateSeeds(cs, []string{d}); err == nil || !strings.Contains(err.Error(), `no metric "fct_avg_s"`) {
		t.Errorf("missing metric: %v", err)
	}
}

// Terms and count sources that cannot be evaluated are refused when the table loads.
func TestCountCheck(t *testing.T) {
	ok := Term{Source: Source{Seeds: "runs/x.json", Group: "a", Metric: "m"}, Holds: "<0"}
	for _, s := range []Source{
		{Count: []Term{{Rows: []string{"a-1"}}}},
		{Count: []Term{{Rows: []string{"a-1", "a-2"}, Holds: "<0"}}},
		{Count: []Term{{Rows: []string{"a-1", "a-2"}, Source: Source{Metric: "m"}}}}, // a stray field, ignored before
		{Count: []Term{{Source: Source{Seeds: "runs/x.json", Group: "a", Metric: "m"}}}},
		{Count: []Term{{Source: Source{Seeds: "runs/x.json", Group: "a"}, Holds: "<0"}}},
		{Count: []Term{{Holds: "<0"}}},
		{Count: []Term{{Source: Source{Group: "a", Metric: "m"}, Holds: "<0"}}},
		{Count: []Term{ok}, Group: "g"},
		{Count: []Term{ok}, Scale: 100}, // a count is violations: a scale would be dropped
		{Seeds: "runs/x.json", Group: "a", Metric: "m", Analyze: "x/*.json"},
	} {
		s := s
		if err := Check([]Claim{{ID: "x-1", Paper: "fcplus", Kind: KindCount, Source: &s}}); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
	if err := Check([]Claim{{ID: "x-1", Paper: "fcplus", Kind: KindBand, Band: []*float64{f(0), f(1)}, Source: &Source{Count: []Term{ok}}}}); err == nil {
		t.Error("a count source on a band row: no error")
	}
	if err := Check([]Claim{{ID: "x-1", Paper: "fcplus", Kind: KindCount, Source: &Source{Count: []Term{ok}}}}); err != nil {
		t.Error(err)
	}
}
