package claims

import (
	"strings"
	"testing"
)

func f(x float64) *float64 { return &x }

func TestJudge(t *testing.T) {
	cases := []struct {
		name string
		c    Claim
		want string
	}{
		// PortFC claim 6, p99 vs IRN, WebSearch: mean 48.5 outside 16.9-41.3, direction holds -> O
		// (the docs had called it reproduced because 41.3 lay inside the CI).
		{"outside band, direction holds", Claim{Kind: KindBand, Band: []*float64{f(16.9), f(41.3)}, Direction: ">0",
			MeasuredMean: f(48.5), CI95: []float64{39.0, 57.9}}, "O"},
		{"in band, CI inside", Claim{Kind: KindBand, Band: []*float64{f(16.9), f(41.3)}, Direction: ">0",
			MeasuredMean: f(34.6), CI95: []float64{26.8, 40.4}}, "R"},
		// The audit's portfc-6.2: the CI is narrower than the band but sticks out of it. The old rule
		// (width only) gave R; the whole interval must lie inside.
		{"in band, CI narrower but sticking out", Claim{Kind: KindBand, Band: []*float64{f(16.9), f(41.3)}, Direction: ">0",
			MeasuredMean: f(34.6), CI95: []float64{26.8, 42.4}}, "O"},
		{"point, CI narrower than ±10% but sticking out", Claim{Kind: KindPoint, Band: []*float64{f(100), f(100)},
			MeasuredMean: f(108), CI95: []float64{104, 112}}, "N"},
		{"deterministic in band", Claim{Kind: KindBand, Band: []*float64{f(1), f(2)}, MeasuredMean: f(1.5), Deterministic: true}, "R"},
		{"in band, CI wider than band", Claim{Kind: KindBand, Band: []*float64{f(30), f(35)}, Direction: ">0",
			MeasuredMean: f(34.6), CI95: []float64{26.8, 42.4}}, "O"},
		{"in band, CI wider, no direction", Claim{Kind: KindBand, Band: []*float64{f(30), f(35)},
			MeasuredMean: f(34.6), CI95: []float64{26.8, 42.4}}, "N"},
		// A point value: within 10%, and the CI no wider than the 20%-wide band.
		{"point within 10%", Claim{Kind: KindPoint, Band: []*float64{f(1.45), f(1.45)}, Direction: ">1",
			MeasuredMean: f(1.38), Deterministic: true}, "R"},
		{"point outside 10%", Claim{Kind: KindPoint, Band: []*float64{f(69.2), f(69.2)}, Direction: ">0",
			MeasuredMean: f(42.4), CI95: []float64{39.7, 45.1}}, "O"},
		{"point, CI wider than ±10%", Claim{Kind: KindPoint, Band: []*float64{f(20), f(20)}, Direction: ">0",
			MeasuredMean: f(21), CI95: []float64{1, 41}}, "O"},
		{"direction over CI fails", Claim{Kind: KindPoint, Band: []*float64{f(13), f(13)}, Direction: ">0",
			MeasuredMean: f(32.3), CI95: []float64{-46.9, 111.5}}, "N"},
		{"one seed in band", Claim{Kind: KindPoint, Band: []*float64{f(0.634), f(0.634)}, Direction: ">0",
			MeasuredMean: f(0.650)}, "O"},
		{"one seed wrong way", Claim{Kind: KindBand, Band: []*float64{f(1.4), f(2)}, Direction: ">1",
			MeasuredMean: f(0.9)}, "N"},
		{"open band", Claim{Kind: KindBand, Band: []*float64{f(1.5), nil}, Direction: ">1",
			MeasuredMean: f(2.0), CI95: []float64{1.6, 2.4}}, "R"},
		{"open band below", Claim{Kind: KindBand, Band: []*float64{f(1.5), nil}, Direction: ">1",
			MeasuredMean: f(1.0), CI95: []float64{1.0, 1.0}}, "N"},
		{"open band, CI leaves it", Claim{Kind: KindBand, Band: []*float64{nil, f(0)}, Direction: "<0",
			MeasuredMean: f(-14.7), CI95: []float64{-36.1, 6.7}}, "N"},
		{"open band, CI inside", Claim{Kind: KindBand, Band: []*float64{nil, f(0)}, Direction: "<0",
			MeasuredMean: f(-14.7), CI95: []float64{-20, -9}}, "R"},
		{"count zero, deterministic", Claim{Kind: KindCount, MeasuredMean: f(0), Seeds: 1, Deterministic: true}, "R"},
		{"count zero, two seeds", Claim{Kind: KindCount, MeasuredMean: f(0), Seeds: 2}, "R"},
		{"count zero, three topologies", Claim{Kind: KindCount, MeasuredMean: f(0), Seeds: 1, TopologySeeds: 3}, "R"},
		// One run is never R, count rows included (the audit's fibre-channel-6).
		{"count zero, one run", Claim{Kind: KindCount, MeasuredMean: f(0), Seeds: 1, TopologySeeds: 1}, "N"},
		{"count nonzero", Claim{Kind: KindCount, MeasuredMean: f(1), Direction: ">0"}, "N"},
		{"none", Claim{Kind: KindNone, MeasuredMean: f(1)}, "-"},
		{"unmeasured", Claim{Kind: KindPoint, Band: []*float64{f(1), f(1)}}, "-"},
		{"negative point", Claim{Kind: KindPoint, Band: []*float64{f(-10), f(-10)}, MeasuredMean: f(-10.5),
			CI95: []float64{-11, -10}}, "R"},
	}
	for _, tc := range cases {
		got, why := Judge(tc.c)
		if got != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, got, why, tc.want)
		}
		if why == "" {
			t.Errorf("%s: no rule text", tc.name)
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	bad := []Claim{
		{ID: "x-1", Paper: "nope", Kind: KindNone},
		{ID: "portfc-1", Paper: "portfc", Kind: KindPoint, Band: []*float64{f(1), f(2)}},
		{ID: "portfc-1", Paper: "portfc", Kind: "maybe"},
		{ID: "portfc-1", Paper: "portfc", Kind: KindBand, Band: []*float64{f(2), f(1)}},
		{ID: "portfc-1", Paper: "portfc", Kind: KindCount, CI95: []float64{2, 1}},
		{ID: "portfc-1", Paper: "portfc", Kind: KindCount, Direction: "about 1"},
	}
	for i, c := range bad {
		if err := Check([]Claim{c}); err == nil {
			t.Errorf("case %d accepted", i)
		}
	}
	if err := Check([]Claim{{ID: "a-1", Paper: "portfc", Kind: KindNone}, {ID: "a-1", Paper: "portfc", Kind: KindNone}}); err == nil ||
		!strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate id: %v", err)
	}
}

func TestSortByNumber(t *testing.T) {
	cs := []Claim{{ID: "portfc-10", Paper: "portfc"}, {ID: "fcplus-2", Paper: "fcplus"}, {ID: "portfc-6.10", Paper: "portfc"},
		{ID: "portfc-6.2", Paper: "portfc"}, {ID: "portfc-1b", Paper: "portfc"}, {ID: "portfc-1", Paper: "portfc"}}
	Sort(cs)
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	want := "portfc-1 portfc-1b portfc-6.2 portfc-6.10 portfc-10 fcplus-2"
	if got := strings.Join(ids, " "); got != want {
		t.Errorf("order %s, want %s", got, want)
	}
}
