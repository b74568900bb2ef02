package claims

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/fabriclab/fabriclab/report"
)

// Term is one part of a count source; the row's measured value is the sum of its terms' violations.
//
//   - Rows: other rows of the table, in the ascending order the claim asserts. Each adjacent pair whose
//     95% intervals are not separated in that order (the first's upper end not below the second's
//     lower end, or a row without an interval) is one violation.
//   - A seeds source (Seeds, Group, Metric, Over: a ratio paired by seed) with Holds: one violation
//     unless its 95% interval over the seeds lies wholly in Holds (one seed, no interval: a violation).
//   - An analyze source (Analyze, Field, Over, OverField) with Holds: one violation per file whose
//     value is not in Holds.
//
// Holds is "<op><number>" (op one of > >= < <= = !=) or a band "[lo, hi]"; values go through the
// source's Offset and Scale first.
type Term struct {
	Source
	Rows  []string `json:"rows,omitempty"`
	Holds string   `json:"holds,omitempty"`
}

func (t *Term) check() error {
	if len(t.Rows) > 0 {
		if !reflect.DeepEqual(t.Source, Source{}) || t.Holds != "" {
			return fmt.Errorf("a rows term takes only rows (their order is the claim)")
		}
		if len(t.Rows) < 2 {
			return fmt.Errorf("rows %v: an order needs two rows or more", t.Rows)
		}
		return nil
	}
	if t.Source.Seeds == "" && t.Source.Analyze == "" {
		return fmt.Errorf("a term needs rows, seeds or analyze")
	}
	if _, err := parseHolds(t.Holds); err != nil {
		return err
	}
	return t.Source.check()
}

// cond is a parsed Holds: op and ref, or the band [lo, hi] (op "in").
type cond struct {
	op     string
	lo, hi float64
}

func parseHolds(s string) (cond, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		a, b, ok := strings.Cut(s[1:len(s)-1], ",")
		lo, e1 := strconv.ParseFloat(strings.TrimSpace(a), 64)
		hi, e2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
		if ok && e1 == nil && e2 == nil && lo <= hi {
			return cond{op: "in", lo: lo, hi: hi}, nil
		}
	}
	for _, o := range []string{"!=", "="} {
		if rest, ok := strings.CutPrefix(s, o); ok {
			if ref, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil {
				return cond{op: o, lo: ref, hi: ref}, nil
			}
		}
	}
	if op, ref, err := parseDirection(s); err == nil { // > >= < <=, as a row's direction
		return cond{op: op, lo: ref, hi: ref}, nil
	}
	return cond{}, fmt.Errorf("holds %q: want <op><number> (op > >= < <= = !=) or [lo, hi]", s)
}

// within says whether the whole interval [lo, hi] satisfies the condition (a value: lo == hi).
func (c cond) within(lo, hi float64) bool {
	switch c.op {
	case ">", ">=", "<", "<=":
		return holds(c.op, lo, c.lo) && holds(c.op, hi, c.lo)
	case "=":
		return lo == c.lo && hi == c.lo
	case "!=":
		return c.lo < lo || c.lo > hi
	}
	return lo >= c.lo && hi <= c.hi
}

// termResult is what one term found.
type termResult struct {
	violations int
	text       string
	found      bool     // its input is under the directories (rows terms: always)
	seeds      int      // seeds terms: the seeds paired
	files      []string // analyze terms: the files read
	provenance string   // seeds terms: the file's
	commit     string   // seeds terms: the file's
}

// UpdateCounts recomputes every count row (a source with terms): the measured value is the sum of
// the terms' violations, Counted says term by term what was found. Rows terms read the table as it
// stands, so call this after the other refreshes. A row whose file terms (seeds, analyze) find no input
// under dirs keeps its numbers, unless it has none (a row of rows terms is always recomputed); some
// found and some not is an error (a directory left out). Provenance and commit: a seeds file's, else provenance
// for analyze outputs, else unchanged. It returns the ids it refreshed and the files it read.
func UpdateCounts(cs []Claim, dirs []string, provenance string) (ids, read []string, err error) {
	byID := map[string]*Claim{}
	for i := range cs {
		byID[cs[i].ID] = &cs[i]
	}
	for i := range cs {
		c := &cs[i]
		if c.Source == nil || len(c.Source.Count) == 0 {
			continue
		}
		var rs []termResult
		fileTerms, found := 0, 0
		for k := range c.Source.Count {
			r, err := evalTerm(&c.Source.Count[k], byID, dirs)
			if err != nil {
				return ids, read, fmt.Errorf("claim %s: count term %d: %w", c.ID, k+1, err)
			}
			if len(c.Source.Count[k].Rows) == 0 {
				fileTerms++
				if r.found {
					found++
				}
			}
			rs = append(rs, r)
		}
		if fileTerms > 0 && found == 0 {
			continue
		}
		if found < fileTerms {
			return ids, read, fmt.Errorf("claim %s: %d of its %d terms' inputs are under %s, the rest not (a directory left out?)", c.ID, found, fileTerms, strings.Join(dirs, " "))
		}
		read = append(read, setCounted(c, rs, provenance)...)
		ids = append(ids, c.ID)
	}
	return ids, read, nil
}

// setCounted stores the terms' results in the row and returns the files they read.
func setCounted(c *Claim, rs []termResult, provenance string) (files []string) {
	total, seeds := 0, 0
	var texts []string
	prov, commit := "", ""
	for _, r := range rs {
		total += r.violations
		texts = append(texts, r.text)
		files = append(files, r.files...)
		if r.seeds > 0 && (seeds == 0 || r.seeds < seeds) {
			seeds = r.seeds
		}
		if prov == "" && r.provenance != "" {
			prov, commit = r.provenance, r.commit
		}
	}
	m := float64(total)
	c.MeasuredMean, c.CI95 = &m, nil
	c.Counted = strings.Join(texts, "; ")
	switch {
	case seeds > 0:
		c.Seeds, c.Provenance, c.Commit = seeds, prov, commit
		c.TopologySeeds = max(c.TopologySeeds, 1)
	case len(files) > 0:
		c.Seeds, c.TopologySeeds, c.Provenance = 1, topologySeeds(files), provenance
	}
	return files
}

// seedSuffix is the topology seed in an analyze output's name (docs/claims.md: ...-t<seed>.json).
var seedSuffix = regexp.MustCompile(`-t([0-9]+)\.json$`)

// topologySeeds is the number of distinct topology seeds the files name (a file without one counts
// as one of its own).
func topologySeeds(files []string) int {
	seen := map[string]bool{}
	for _, f := range files {
		if m := seedSuffix.FindStringSubmatch(f); m != nil {
			seen["t"+m[1]] = true
		} else {
			seen[f] = true
		}
	}
	return len(seen)
}

func evalTerm(t *Term, byID map[string]*Claim, dirs []string) (termResult, error) {
	if len(t.Rows) > 0 {
		return evalRows(t.Rows, byID)
	}
	h, _ := parseHolds(t.Holds) // Check parsed it
	if t.Source.Seeds != "" {
		return evalSeeds(t, h, dirs)
	}
	return evalAnalyze(t, h, dirs)
}

// evalRows counts the adjacent pairs of rows whose intervals do not separate in the listed order.
func evalRows(ids []string, byID map[string]*Claim) (termResult, error) {
	var r termResult
	r.found = true
	var parts []string
	for k := 0; k+1 < len(ids); k++ {
		a, b := byID[ids[k]], byID[ids[k+1]]
		if a == nil {
			return r, fmt.Errorf("rows %v: no row %s", ids, ids[k])
		}
		if b == nil {
			return r, fmt.Errorf("rows %v: no row %s", ids, ids[k+1])
		}
		ia, okA := rowInterval(*a)
		ib, okB := rowInterval(*b)
		verdict := "separated"
		if !okA || !okB || ia[1] >= ib[0] {
			r.violations++
			verdict = "not separated"
			if !okA || !okB {
				verdict = "not separated (no interval)"
			}
		}
		parts = append(parts, fmt.Sprintf("%s %s < %s %s: %s", a.ID, intervalText(ia, okA), b.ID, intervalText(ib, okB), verdict))
	}
	r.text = strings.Join(parts, "; ")
	return r, nil
}

// rowInterval is a row's 95% interval (interval), false without one or without a measurement.
func rowInterval(c Claim) ([2]float64, bool) {
	if c.MeasuredMean == nil {
		return [2]float64{}, false
	}
	return interval(c)
}

func intervalText(iv [2]float64, ok bool) string {
	if !ok {
		return "(no interval)"
	}
	return fmt.Sprintf("[%s, %s]", g4(iv[0]), g4(iv[1]))
}

// evalSeeds is one violation unless the term's interval over its paired seeds lies in h.
func evalSeeds(t *Term, h cond, dirs []string) (termResult, error) {
	var r termResult
	xs, p, f, err := readSeeds(dirs, &t.Source)
	if err != nil || p == "" {
		return r, err
	}
	r.found, r.seeds, r.provenance, r.commit, r.files = true, len(xs), f.Provenance, f.Commit, []string{p}
	ci := report.MeanCI(xs, report.Level)
	name := t.Source.Group
	if t.Source.Over != "" {
		name += " / " + t.Source.Over
	}
	name += " " + t.Source.Metric
	m, lo, hi := scaledCI(ci, &t.Source)
	if ci.N < 2 {
		r.violations = 1
		r.text = fmt.Sprintf("%s %s (one seed, no interval): fails %s", name, g4(m), t.Holds)
		return r, nil
	}
	verdict := "holds"
	if !h.within(lo, hi) {
		r.violations, verdict = 1, "fails"
	}
	r.text = fmt.Sprintf("%s %s [%s, %s] (%d seeds): %s %s", name, g4(m), g4(lo), g4(hi), ci.N, verdict, t.Holds)
	return r, nil
}

// evalAnalyze is one violation per file whose value is not in h.
func evalAnalyze(t *Term, h cond, dirs []string) (termResult, error) {
	var r termResult
	keys, xs, files, err := fileValues(&t.Source, dirs)
	if err != nil || len(xs) == 0 {
		return r, err
	}
	r.found, r.files = true, files
	lo, hi := math.Inf(1), math.Inf(-1)
	var bad []string
	for i, x := range xs {
		x = scaled(x, &t.Source)
		lo, hi = math.Min(lo, x), math.Max(hi, x)
		if !h.within(x, x) {
			r.violations++
			bad = append(bad, keys[i])
		}
	}
	name := t.Source.Analyze + " " + t.Source.Field
	switch {
	case t.Source.Over != "":
		name += " / " + t.Source.Over + " " + overField(&t.Source)
	case t.Source.OverField != "":
		name += " / " + t.Source.OverField
	}
	r.text = fmt.Sprintf("%s: %d files, %s to %s, %d not %s", name, len(xs), countNum(lo), countNum(hi), r.violations, t.Holds)
	if len(bad) > 0 {
		sort.Strings(bad)
		r.text += " (" + strings.Join(bad, ", ") + ")"
	}
	return r, nil
}

// countNum prints a whole number (a count of cycles, classes) whole, anything else to 4 digits.
func countNum(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e9 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return g4(x)
}
