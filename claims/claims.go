// Package claims is the table of every claim of the five papers fabriclab reproduces
// (docs/claims.json): what each paper says, what we measured, and the verdict the strict rule (rule.go)
// gives from those stored numbers. cmd/lab's `lab claims` refreshes measured numbers from run trees,
// re-judges every row and writes the generated Markdown tables into docs/.
package claims

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fabriclab/fabriclab/bounded"
	"github.com/fabriclab/fabriclab/outfile"
)

// Papers are the five papers, in the order the tables list them.
var Papers = []string{"portfc", "fcplus", "fibre-channel", "dragonfly", "expander"}

// PaperTitle names each paper in the generated tables.
var PaperTitle = map[string]string{
	"portfc":        "PortFC (Cao et al., node-centric flow control)",
	"fcplus":        "FC+ (near-optimal deadlock-free expander networks)",
	"fibre-channel": "Fibre Channel fabrics (evaluation and design)",
	"dragonfly":     "Non-shortest-path routing in lossy Dragonflies (TelemetryLERP)",
	"expander":      "Expander fabrics (Kassing thesis)",
}

// Kinds of published value, which decide how the rule reads Band.
const (
	KindBand  = "band"  // the paper gives a range [lo, hi]; an open end is null
	KindPoint = "point" // one value; the band is ±10% of it
	KindCount = "count" // zero tolerance: the measured value counts violations, any nonzero fails
	KindNone  = "none"  // not a claim we can judge (say why in Why)
)

// Claim is one row of docs/claims.json.
type Claim struct {
	ID    string `json:"id"`    // paper-claim[.part], our claim numbers per paper (docs/claims.md)
	Paper string `json:"paper"` // one of Papers
	Claim string `json:"claim"` // one line, our words
	// Published is the paper's number as it prints it, with units; Kind and Band are how the rule reads
	// it (Band in Unit; a point value is [v, v]).
	Published string `json:"published"`
	// Where is where in the paper the published value stands (section, table, figure, page), and, when
	// the value is derived rather than quoted, the derivation. Every judged row has one
	// (TestEveryJudgedRowSaysWhere).
	Where string     `json:"where,omitempty"`
	Kind  string     `json:"kind"`
	Band  []*float64 `json:"band,omitempty"`
	Unit  string     `json:"unit,omitempty"`
	// Direction is the ordering the claim asserts, as "<op><ref>" on the measured value (">0" a
	// reduction, ">1" a ratio above one): O needs the whole interval on that side.
	Direction string `json:"direction,omitempty"`
	// Metric names what is measured; Definition is the paper's definition of it, or says that the paper
	// leaves it undefined and which reading we took.
	Metric     string `json:"metric"`
	Definition string `json:"definition"`
	// MeasuredMean and CI95 are over Seeds runs (traffic seeds) and TopologySeeds topology instances
	// (1: one fixed or deterministic topology). Deterministic says the measurement has no randomness
	// at all (a fixed scenario, an LP on a fixed graph): its interval is [mean, mean].
	MeasuredMean  *float64  `json:"measured_mean"`
	CI95          []float64 `json:"ci95"`
	Seeds         int       `json:"seeds"`
	TopologySeeds int       `json:"topology_seeds"`
	Deterministic bool      `json:"deterministic,omitempty"`
	Measured      string    `json:"measured,omitempty"` // the numbers around it, in words
	// Counted is what a count source found, term by term, written by lab claims (never by hand).
	Counted    string  `json:"counted,omitempty"`
	Command    string  `json:"command"`
	Source     *Source `json:"source,omitempty"`
	Provenance string  `json:"provenance,omitempty"` // "stored: ..." or "re-run: ..."
	// Commit is the build the numbers were measured at (lab claims --commit); a refresh from another
	// build, or from fewer seeds, is refused unless lab claims is told --replace.
	Commit  string `json:"commit,omitempty"`
	Verdict string `json:"verdict"` // R, O, N or -, from Judge
	Rule    string `json:"rule"`    // why Judge gave it, mechanically
	Why     string `json:"why"`     // where it differs; for non-R, what was tried
}

// Source says where `lab claims DIR...` reads a row's number, in one of four kinds. From a run tree:
// the experiment, the group (spec name and sweep point, as `lab report` labels it) and the metric (a
// report metric or reduction:/ratio: form). From a per-seed file (Seeds, written by `lab claims
// --save-seeds` from run trees, relative to each DIR): the group's Metric per seed, divided by the
// Over group's of the same seed if Over is set. From `lab analyze --json` outputs: Analyze, a glob
// relative to each DIR matching one file per topology instance, and Field, the dotted path to a number
// in each file (a last part "*" sums an object's numbers); with Over, a second glob, each file's number
// is divided by that of the Over file of the same topology seed (the text the wildcards matched), a
// ratio of two fabrics paired by topology seed; with OverField, by that field (of the Over file, or of
// the same file). A group, seeds or analyze source adds Offset, then times Scale, into the row's Unit (scale 100 for a
// fraction as %, 1e-9 for bit/s as Gb/s; offset -1 and scale 100 for a ratio as a % gain). Or Count:
// a count row's violations, summed over its terms (count.go).
type Source struct {
	Experiment string `json:"experiment,omitempty"` // lab/experiments/<this>/ (spec names repeat across experiments)
	Group      string `json:"group,omitempty"`
	Metric     string `json:"metric,omitempty"`
	Seeds      string `json:"seeds,omitempty"`   // e.g. runs/expander-uniform.json
	Analyze    string `json:"analyze,omitempty"` // e.g. fcplus-paths/fc-n400-k4-t*.json
	Field      string `json:"field,omitempty"`   // e.g. updown_paths.4
	Over       string `json:"over,omitempty"`    // e.g. fcplus-lp-t8/table8-fc-t*.json; with Seeds a group
	OverField  string `json:"over_field,omitempty"`
	// Share, with Analyze: the row's value is the percentage of files whose value (through Offset and
	// Scale) satisfies this condition (a Holds form: "<0.9"), with its 95% Wilson interval.
	Share  string  `json:"share,omitempty"`
	Offset float64 `json:"offset,omitempty"`
	Scale  float64 `json:"scale,omitempty"`
	Count  []Term  `json:"count,omitempty"`
}

// check refuses a source that is no kind, or more than one.
func (s *Source) check() error {
	tree := s.Experiment != "" || s.Group != "" || s.Metric != ""
	switch {
	case len(s.Count) > 0:
		if tree || s.Seeds != "" || s.Analyze != "" || s.Field != "" || s.Over != "" || s.OverField != "" {
			return fmt.Errorf("a count source has only terms (count), no group, seeds or analyze of its own")
		}
		if s.Offset != 0 || s.Scale != 0 {
			return fmt.Errorf("a count source counts violations: it takes no offset or scale")
		}
		for i := range s.Count {
			if err := s.Count[i].check(); err != nil {
				return fmt.Errorf("count term %d: %w", i+1, err)
			}
		}
	case s.Seeds != "":
		if s.Analyze != "" || s.Experiment != "" || s.Field != "" || s.OverField != "" {
			return fmt.Errorf("source seeds %q takes group, metric and over (a group), not experiment, analyze or fields", s.Seeds)
		}
		if s.Group == "" || s.Metric == "" {
			return fmt.Errorf("source seeds %q needs a group and a metric", s.Seeds)
		}
	case s.Analyze != "" && tree:
		return fmt.Errorf("source names both a run tree group (%q) and analyze outputs (%q)", s.Group, s.Analyze)
	case s.Analyze != "" && s.Field == "":
		return fmt.Errorf("source analyze %q has no field", s.Analyze)
	case s.Analyze == "" && (s.Field != "" || s.Over != "" || s.OverField != ""):
		return fmt.Errorf("source field %q or over %q has no analyze glob", s.Field, s.Over)
	case s.Share != "" && s.Analyze == "":
		return fmt.Errorf("source share %q needs an analyze glob", s.Share)
	case s.Analyze != "":
		if s.Share != "" {
			if _, err := parseHolds(s.Share); err != nil {
				return fmt.Errorf("source share: %w", err)
			}
		}
		for _, g := range []string{s.Analyze, s.Over} {
			if _, err := filepath.Match(g, ""); err != nil {
				return fmt.Errorf("source glob %q: %w", g, err)
			}
		}
	case s.Group == "" || s.Metric == "":
		return fmt.Errorf("source needs a group and a metric (a run tree), seeds, group and metric (a per-seed file), analyze and field (lab analyze outputs) or count")
	}
	return nil
}

// Load reads a claims file.
func Load(path string) ([]Claim, error) {
	b, err := bounded.ReadFile(path, bounded.Claims)
	if err != nil {
		return nil, err
	}
	// A field the table does not know is refused: Save would drop it on the rewrite.
	var cs []Claim
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cs); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			return nil, fmt.Errorf("%s: %w: a field lab claims does not know would be dropped when it rewrites the table", path, err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cs, Check(cs)
}

// Check refuses a table the rule cannot read: duplicate ids, unknown papers or kinds, bands of the
// wrong length, intervals that are not [lo, hi].
func Check(cs []Claim) error {
	seen := map[string]bool{}
	known := map[string]bool{}
	for _, p := range Papers {
		known[p] = true
	}
	for i, c := range cs {
		at := fmt.Sprintf("claim %d (%s)", i, c.ID)
		switch {
		case c.ID == "":
			return fmt.Errorf("%s: no id", at)
		case seen[c.ID]:
			return fmt.Errorf("%s: duplicate id", at)
		case !known[c.Paper]:
			return fmt.Errorf("%s: paper %q is not one of %v", at, c.Paper, Papers)
		}
		seen[c.ID] = true
		switch c.Kind {
		case KindBand, KindPoint:
			if len(c.Band) != 2 || (c.Kind == KindPoint && (c.Band[0] == nil || c.Band[1] == nil || *c.Band[0] != *c.Band[1])) {
				return fmt.Errorf("%s: kind %s needs band [lo, hi] (a point [v, v])", at, c.Kind)
			}
			if c.Band[0] != nil && c.Band[1] != nil && *c.Band[0] > *c.Band[1] {
				return fmt.Errorf("%s: band [%g, %g] is reversed", at, *c.Band[0], *c.Band[1])
			}
		case KindCount, KindNone:
		default:
			return fmt.Errorf("%s: kind %q is not band, point, count or none", at, c.Kind)
		}
		if c.Seeds < 0 || c.TopologySeeds < 0 {
			return fmt.Errorf("%s: seeds %d, topology_seeds %d: counts of runs, never negative", at, c.Seeds, c.TopologySeeds)
		}
		if c.CI95 != nil && (len(c.CI95) != 2 || c.CI95[0] > c.CI95[1]) {
			return fmt.Errorf("%s: ci95 must be [lo, hi], got %v", at, c.CI95)
		}
		if c.Source != nil {
			if err := c.Source.check(); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
			if len(c.Source.Count) > 0 && c.Kind != KindCount {
				return fmt.Errorf("%s: a count source needs kind count, not %s", at, c.Kind)
			}
		}
		if c.Direction != "" {
			if _, _, err := parseDirection(c.Direction); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
		}
	}
	return nil
}

// Save writes the table, one claim per object, in paper order then id order, re-judged.
func Save(path string, cs []Claim) error {
	Rejudge(cs)
	Sort(cs)
	b, err := json.MarshalIndent(cs, "", "  ")
	if err != nil {
		return err
	}
	// By rename: a full disk or a kill leaves the previous table whole, and a link is not written
	// through (the table is the input lab claims rewrites, so replacing it is meant).
	return outfile.WriteBytes(path, outfile.Replace, append(b, '\n'))
}

// Rejudge sets every row's Verdict and Rule from its stored numbers.
func Rejudge(cs []Claim) {
	for i := range cs {
		cs[i].Verdict, cs[i].Rule = Judge(cs[i])
	}
}

// Sort orders rows by paper (Papers' order) and then by claim number, part by part.
func Sort(cs []Claim) {
	rank := map[string]int{}
	for i, p := range Papers {
		rank[p] = i
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].Paper != cs[j].Paper {
			return rank[cs[i].Paper] < rank[cs[j].Paper]
		}
		return idLess(cs[i].ID, cs[j].ID)
	})
}

// idLess compares ids like "portfc-6.10" numerically part by part after the paper prefix.
func idLess(a, b string) bool {
	pa, pb := idParts(a), idParts(b)
	for k := 0; k < len(pa) && k < len(pb); k++ {
		if pa[k] == pb[k] {
			continue
		}
		var x, y int
		_, ex := fmt.Sscanf(pa[k], "%d", &x)
		_, ey := fmt.Sscanf(pb[k], "%d", &y)
		if ex == nil && ey == nil && x != y {
			return x < y
		}
		return pa[k] < pb[k]
	}
	return len(pa) < len(pb)
}

func idParts(id string) []string {
	if i := strings.LastIndex(id, "-"); i >= 0 {
		id = id[i+1:]
	}
	return strings.Split(id, ".")
}

// Counts is the number of rows per verdict for one paper.
type Counts struct{ R, O, N, Dash int }

func (c Counts) String() string { return fmt.Sprintf("%d/%d/%d/%d", c.R, c.O, c.N, c.Dash) }

// Count tallies the verdicts of one paper's rows.
func Count(cs []Claim, paper string) Counts {
	var n Counts
	for _, c := range cs {
		if c.Paper != paper {
			continue
		}
		switch c.Verdict {
		case "R":
			n.R++
		case "O":
			n.O++
		case "N":
			n.N++
		default:
			n.Dash++
		}
	}
	return n
}
