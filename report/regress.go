package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Regression testing: lab compare BASE NEW reads two run trees of the same specs (a baseline and a
// changed build), pairs their runs by spec, sweep point and seed, and says for every metric whether the
// change moved it beyond an equivalence margin. The rule, per metric of a group:
//
//   - Counts that must be zero (drops_lossless, deadlocks, violations) are counts: any in NEW where BASE
//     had none is a regression ("zero broken"), whatever the statistics.
//   - A metric that is 0 in every BASE run (retransmissions of a lossless scheme, lossy drops of a
//     lossless one) changed when NEW has it non-zero in every run (for retransmissions, lossy drops and
//     NIC drops: in any run); all zero again is "equivalent"; else "undecided".
//   - Otherwise the relative change (mean NEW - mean BASE) / |mean BASE| gets a 95% CI: from the
//     per-seed differences when both trees ran the same seeds (paired; the virtual backend repeats a
//     seed exactly, so unchanged code gives [0, 0]), else Welch's interval over the two samples
//     (disjoint seeds). It is "changed" when the whole CI lies beyond ±margin, "equivalent" when it lies
//     inside ±margin (two one-sided tests at 2.5% each), else "undecided", with the seeds per tree that
//     would shrink the CI enough to decide at the observed spread.
//
// A change in a direction the user declared expected for that metric (--expect fct_avg_s=down) is
// reported as "expected" and does not fail. The base mean is taken as exact in the relative CI (it is a
// scale, not a second random variable): with 5 seeds of the main job the base means' own CIs are 1-8%
// of the mean, so a ratio CI would be a few percent wider; the margins below are wider than that.

// RegressLevel is the family-wise confidence level of lab compare's intervals: all of them together
// cover their true values with probability 95% (Bonferroni: each interval is at 1 - 0.05/m for the m
// metrics with an interval). A comparison reads about 200 metrics; at 95% each, unchanged code had some
// interval lie wholly beyond its margin in 2 of 10 pairs of the main job's trees with disjoint seeds
// (e.g. pfcstar's incast FCT avg 0.71 [0.48, 0.94] against ±5%); with the family-wise level, in none.
const RegressLevel = 0.95

// DefaultMargins are the equivalence margins, relative to the base mean, by metric (class.<c>.<m> takes
// <m>'s). Means (FCT avg and median, goodput) move less from seed to seed than tails and counts, so
// they get the tighter margins. Zero means "compared as a count that must stay zero".
var DefaultMargins = map[string]float64{
	"flows_scheduled": 0.02, "flows_total": 0.02, "flows_completed": 0.02, "flows_completed_fraction": 0.01,
	"delivered_bytes": 0.02,
	"fct_avg_s":       0.05, "fct_p50_s": 0.05, "slowdown_avg": 0.05, "slowdown_p50": 0.05,
	"fct_p95_s": 0.10, "fct_p99_s": 0.10, "fct_p999_s": 0.10, "slowdown_p99": 0.10,
	"goodput_per_flow_all_bps": 0.05, "goodput_per_flow_completed_bps": 0.05,
	"goodput_aggregate_bps": 0.05, "goodput_aggregate_completed_bps": 0.05, "window_goodput_bps": 0.05,
	"reordered": 0.20, "drops_lossy": 0.10, "retransmissions": 0.10,
	"pauses_sent": 0.10, "ecn_marks": 0.10, "cnps": 0.10, "nic_queue_peak_bytes": 0.10, "nic_drops": 0.10,
	"drops_lossless": 0, "deadlocks": 0, "violations": 0,
}

// fallbackMargin is the margin of a metric DefaultMargins does not list.
const fallbackMargin = 0.10

// zeroCounts must be zero in a correct run: any in NEW where BASE had none is a regression.
var zeroCounts = map[string]bool{"drops_lossless": true, "deadlocks": true, "violations": true}

// anyNonZero are counts whose appearance in a single NEW run, where every BASE run had none, is a change
// (a frame lost or resent where none was).
var anyNonZero = map[string]bool{"retransmissions": true, "drops_lossy": true, "nic_drops": true}

// RegressOptions are lab compare's per-metric overrides.
type RegressOptions struct {
	Margins  map[string]float64 // metric -> relative margin (0.05 = 5%); overrides DefaultMargins
	Expected map[string]int     // metric -> +1 (an increase is expected) or -1 (a decrease is)
	// PerMetric puts each interval at RegressLevel on its own instead of family-wise (more power,
	// and about one false "changed" in five comparisons of unchanged code).
	PerMetric bool
	// Pairs pairs a BASE group with a NEW group whose labels differ (--pair A=B: a spec name or a
	// group label on each side), before the automatic pairing across a changed setting.
	Pairs [][2]string
}

// baseMetric strips class.<c>. from a metric name.
func baseMetric(m string) string {
	if rest, ok := cutClass(m); ok {
		return rest
	}
	return m
}

// lookup finds a per-metric option: the full name first, then the name without its class.
func lookup[V any](m map[string]V, name string) (V, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	v, ok := m[baseMetric(name)]
	return v, ok
}

// MarginOf is the margin for metric under opts.
func (o RegressOptions) MarginOf(metric string) float64 {
	if v, ok := lookup(o.Margins, metric); ok {
		return v
	}
	if v, ok := lookup(DefaultMargins, metric); ok {
		return v
	}
	return fallbackMargin
}

// Verdicts of lab compare.
const (
	VerdictChanged    = "changed"     // beyond the margin, in a direction not declared expected
	VerdictZeroBroken = "zero broken" // a count that must be zero is not, where the base had none
	VerdictExpected   = "expected"    // beyond the margin in the declared direction
	VerdictEquivalent = "equivalent"  // within the margin
	VerdictUndecided  = "undecided"   // the CI straddles a margin: more seeds would decide
	VerdictNotFinite  = "not finite"  // a value, a mean or the ratio is NaN or infinite: no verdict (exit 1)
	VerdictOneSide    = "one side"    // one tree measured it, the other did not: no verdict (exit 1)
)

// MetricChange is one metric of one group, BASE against NEW.
type MetricChange struct {
	Group  string  `json:"group"`
	Metric string  `json:"metric"`
	Paired bool    `json:"paired"` // per-seed differences (same seeds) rather than Welch's interval
	BaseN  int     `json:"base_n"`
	NewN   int     `json:"new_n"`
	Base   float64 `json:"base_mean"`
	New    float64 `json:"new_mean"`
	// Ratio is New/Base with its CI (NaN-free in JSON: absent when base is 0). For counts that must
	// stay zero, BaseCount/NewCount are the totals over runs.
	Ratio     *float64 `json:"ratio,omitempty"`
	RatioLo   *float64 `json:"ratio_lo,omitempty"`
	RatioHi   *float64 `json:"ratio_hi,omitempty"`
	Margin    float64  `json:"margin"`
	BaseCount float64  `json:"base_total"`
	NewCount  float64  `json:"new_total"`
	Verdict   string   `json:"verdict"`
	// SeedsToDecide: for undecided, the seeds per tree that would make the CI decide at the observed
	// spread (0: more than 10000, or the effect sits on the margin).
	SeedsToDecide int    `json:"seeds_to_decide,omitempty"`
	Note          string `json:"note,omitempty"`
}

// Fails says whether the change fails a regression test.
func (c MetricChange) Fails() bool {
	return c.Verdict == VerdictChanged || c.Verdict == VerdictZeroBroken
}

// Regression is lab compare's result.
type Regression struct {
	Level   float64        `json:"level"`           // family-wise (or per metric with PerMetric)
	Each    float64        `json:"level_each"`      // each interval's own level
	Metrics int            `json:"metrics_with_ci"` // m, the intervals the family-wise level covers
	Changes []MetricChange `json:"metrics"`
	OnlyIn  []string       `json:"unmatched,omitempty"` // NEW groups with no BASE counterpart (not compared)
	// Pairs are the groups paired across a changed setting (by spec name, or --pair), with the
	// difference: "pfcstar ~ pfcstar switch.xoff=12bdp: switch.xoff 6bdp -> 12bdp".
	Pairs  []string `json:"paired_across,omitempty"`
	Failed bool     `json:"regressed"` // some metric changed beyond its margin, or a zero count broke
	// Missing is every reason the comparison cannot pass on its evidence: a BASE run without its NEW
	// counterpart, a run that did not finish or cannot be read, a value that is not finite. Any makes
	// lab compare exit 1 unless something changed (Failed wins: a change is decided evidence).
	Missing []string `json:"missing,omitempty"`
	// NotDecided: most metrics are undecided, so "no change" would be a guess (lab compare exits 1).
	NotDecided bool           `json:"not_decided,omitempty"`
	Counts     map[string]int `json:"verdicts"`
}

// Undecidable says whether the comparison can neither fail nor pass: nothing changed, and data is
// missing or most metrics are undecided.
func (rg *Regression) Undecidable() bool {
	return !rg.Failed && (len(rg.Missing) > 0 || rg.NotDecided)
}

// CompareTrees pairs base's and new's groups (pairGroups: by label, then across a changed setting) and
// compares every metric of each pair. Every BASE group and run must have its NEW counterpart, and every
// run listed in either tree must have been read; what is not is listed in Missing. It fails only when
// no group can be paired at all.
func CompareTrees(base, new *Tree, opts RegressOptions) (*Regression, error) {
	rg := &Regression{Level: RegressLevel, Each: RegressLevel, Counts: map[string]int{}}
	for _, s := range base.Skipped {
		rg.Missing = append(rg.Missing, "BASE run "+s)
	}
	for _, s := range new.Skipped {
		rg.Missing = append(rg.Missing, "NEW run "+s)
	}
	pairs, err := pairGroups(base, new, opts.Pairs, rg)
	if err != nil {
		return nil, err
	}
	for _, p := range pairs {
		rg.Missing = append(rg.Missing, missingRuns(p.b, p.n)...)
	}
	metrics := regressMetrics(base, new)
	// m: the comparisons that get an interval (not the counts), for the Bonferroni level.
	for _, p := range pairs {
		for _, m := range metrics {
			if c, ok := compareMetric(p.b, p.n, m, opts, RegressLevel); ok && c.Ratio != nil {
				rg.Metrics++
			}
		}
	}
	if !opts.PerMetric && rg.Metrics > 1 {
		rg.Each = 1 - (1-RegressLevel)/float64(rg.Metrics)
	}
	decided, undecided := 0, 0
	for _, p := range pairs {
		if c, ok := identity(p.b, p.n, opts); ok {
			rg.Changes = append(rg.Changes, c)
			rg.Counts[c.Verdict]++
			rg.Failed = rg.Failed || c.Fails()
		}
		for _, m := range metrics {
			c, ok := compareMetric(p.b, p.n, m, opts, rg.Each)
			if !ok {
				continue
			}
			rg.Changes = append(rg.Changes, c)
			rg.Counts[c.Verdict]++
			rg.Failed = rg.Failed || c.Fails()
			switch c.Verdict {
			case VerdictNotFinite, VerdictOneSide:
				rg.Missing = append(rg.Missing, fmt.Sprintf("%s %s: %s", c.Group, c.Metric, c.Note))
			case VerdictUndecided:
				if c.Ratio != nil {
					undecided++
				}
			default:
				if c.Ratio != nil {
					decided++
				}
			}
		}
	}
	// Among the metrics the statistics decide (those with an interval; a count that stays 0 decides
	// itself and would hide a comparison that decided nothing).
	rg.NotDecided = undecided > decided
	return rg, nil
}

// missingRuns says which of a BASE group's runs have no NEW counterpart: the same seed when the two
// groups share seeds (a paired comparison: a seed in one only is a run lost), else as many runs (two
// disjoint seed sets, compared unpaired by design).
func missingRuns(b, n *Group) []string {
	newSeeds := map[int64]bool{}
	for _, r := range n.Runs {
		newSeeds[r.Seed] = true
	}
	var lost []string
	shared := 0
	for _, r := range b.Runs {
		if newSeeds[r.Seed] {
			shared++
		} else {
			lost = append(lost, fmt.Sprintf("NEW lacks %s seed %d (BASE has %s)", n.Label(), r.Seed, runName(r)))
		}
	}
	if shared == 0 {
		if len(n.Runs) < len(b.Runs) {
			return []string{fmt.Sprintf("NEW has %d runs of %s, BASE %d (seeds %v against %v)", len(n.Runs), n.Label(), len(b.Runs), n.Seeds, b.Seeds)}
		}
		return nil
	}
	return lost
}

// regressMetrics are the metrics lab compare judges: the aggregate table's, over both trees.
func regressMetrics(a, b *Tree) []string {
	t := &Tree{Groups: append(append([]*Group(nil), a.Groups...), b.Groups...)}
	return aggregateRows(t)
}

// sample is a metric's value in each run of a group, by seed, and the runs whose value is not finite
// (summary.json cannot hold NaN, so none is "not measured": each is a broken run).
func sample(g *Group, m string) (map[int64]float64, []string) {
	out := map[int64]float64{}
	var bad []string
	for _, r := range g.Runs {
		v, ok := r.Metric(m)
		if !ok {
			continue
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad = append(bad, fmt.Sprintf("%s is %v", runName(r), v))
			continue
		}
		out[r.Seed] = v
	}
	return out, bad
}

// runName names a run for a message: its directory, else its spec name and seed.
func runName(r *Run) string {
	if r.Dir != "" {
		return r.Dir
	}
	return fmt.Sprintf("%s seed %d", r.Name, r.Seed)
}

// finiteAll says whether every number is finite.
func finiteAll(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

func values(s map[int64]float64) []float64 {
	keys := make([]int64, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	out := make([]float64, len(keys))
	for i, k := range keys {
		out[i] = s[k]
	}
	return out
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

func countNonZero(xs []float64) int {
	n := 0
	for _, x := range xs {
		if x != 0 {
			n++
		}
	}
	return n
}

// compareMetric judges one metric of a group pair; false when neither tree measured it.
func compareMetric(bg, ng *Group, m string, opts RegressOptions, level float64) (MetricChange, bool) {
	bs, bbad := sample(bg, m)
	ns, nbad := sample(ng, m)
	c := MetricChange{Group: bg.Label(), Metric: m, Margin: opts.MarginOf(m)}
	if bad := append(prefix("BASE ", bbad), prefix("NEW ", nbad)...); len(bad) > 0 {
		c.Verdict, c.Note = VerdictNotFinite, strings.Join(bad, "; ")
		return c, true
	}
	if len(bs) == 0 && len(ns) == 0 {
		return MetricChange{}, false
	}
	if len(bs) == 0 || len(ns) == 0 {
		// One tree measured it and the other did not (a window goodput that fell to 0, a traffic
		// class gone): a change nothing can judge, never a pass.
		side := "BASE"
		if len(bs) == 0 {
			side = "NEW"
		}
		c.Verdict, c.Note = VerdictOneSide, fmt.Sprintf("measured in %s only: runs %s", side, strings.Join(append(runNames(bg), runNames(ng)...), ", "))
		return c, true
	}
	bv, nv := values(bs), values(ns)
	c.BaseN, c.NewN = len(bv), len(nv)
	c.Base, c.New = sum(bv)/float64(len(bv)), sum(nv)/float64(len(nv))
	c.BaseCount, c.NewCount = sum(bv), sum(nv)
	// Finite values can still overflow a sum (1e308 in each of 3 seeds): no verdict rests on an
	// infinite mean.
	if !finiteAll(c.Base, c.New, c.BaseCount, c.NewCount) {
		c.Verdict = VerdictNotFinite
		c.Note = fmt.Sprintf("the mean over seeds is not finite (BASE %v, NEW %v): runs %s", c.Base, c.New, strings.Join(append(runNames(bg), runNames(ng)...), ", "))
		c.Base, c.New, c.BaseCount, c.NewCount = 0, 0, 0, 0 // JSON cannot hold them
		return c, true
	}
	name := baseMetric(m)
	if zeroCounts[name] {
		return zeroCount(c, bv, nv), true
	}
	if c.Base == 0 {
		return fromZero(c, nv, anyNonZero[name]), true
	}
	d, paired := relativeDiff(bs, ns, c.Base, level)
	c.Paired = paired
	if !finiteAll(d.mean) || (!math.IsNaN(d.lo) && !finiteAll(d.lo, d.hi)) {
		c.Verdict = VerdictNotFinite
		c.Note = fmt.Sprintf("new/base or its interval is not finite (mean %v, [%v, %v]): runs %s", d.mean, d.lo, d.hi, strings.Join(append(runNames(bg), runNames(ng)...), ", "))
		return c, true
	}
	c.Ratio, c.RatioLo, c.RatioHi = finite(1+d.mean), finite(1+d.lo), finite(1+d.hi)
	dir, _ := lookup(opts.Expected, m)
	c.Verdict, c.SeedsToDecide, c.Note = decide(d, c.Margin, dir, paired, level)
	return c, true
}

func prefix(p string, xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = p + x
	}
	return out
}

func runNames(g *Group) []string {
	out := make([]string, len(g.Runs))
	for i, r := range g.Runs {
		out[i] = runName(r)
	}
	return out
}

// IdentityMetric is the same-seed identity check: the flows whose outcome (completed, FCT, bytes
// delivered, retransmissions) differs from the same seed's BASE run. The virtual backend repeats a
// seed bit for bit, so unchanged code differs in no flow, and any flow that differs is a change of
// behaviour however small its effect on the means: halving DCQCN's additive increase moved no mean of
// the main job beyond its margin, but changed the FCT of 65-89% of PFC*'s flows in every seed.
// --expect flows_differing=up declares such a change intended.
const IdentityMetric = "flows_differing"

// identity compares two groups flow by flow over the seeds both ran; false when it does not apply: no
// seed is shared (disjoint seeds, compared unpaired), or a run was on the netns backend (real time is
// not repeatable). A BASE seed missing from NEW is not compared here: CompareTrees lists it in Missing.
func identity(bg, ng *Group, opts RegressOptions) (MetricChange, bool) {
	newBy := map[int64]*Run{}
	for _, r := range ng.Runs {
		newBy[r.Seed] = r
	}
	c := MetricChange{Group: bg.Label(), Metric: IdentityMetric, Paired: true}
	seedsDiffering, flows, seeds := 0, 0, 0
	for _, b := range bg.Runs {
		n, ok := newBy[b.Seed]
		if !ok {
			continue
		}
		if b.Rows == nil || n.Rows == nil || b.Summary.Fidelity.Monitored() || n.Summary.Fidelity.Monitored() {
			return MetricChange{}, false
		}
		seeds++
		d, all := differingFlows(b.Rows, n.Rows)
		flows += all
		c.NewCount += float64(d)
		if d > 0 {
			seedsDiffering++
		}
	}
	if seeds == 0 {
		return MetricChange{}, false
	}
	c.BaseN, c.NewN = seeds, seeds
	if flows > 0 {
		c.New = c.NewCount / float64(flows)
	}
	if seedsDiffering == 0 {
		c.Verdict = VerdictEquivalent
		c.Note = "every flow identical to the same seed's BASE run"
		return c, true
	}
	c.Verdict = VerdictChanged
	if dir, _ := lookup(opts.Expected, IdentityMetric); dir > 0 {
		c.Verdict = VerdictExpected
	}
	c.Note = fmt.Sprintf("%s of %d flows (%.0f%%) differ from the same seed's BASE run, in %d of %d seeds",
		num(c.NewCount), flows, 100*c.New, seedsDiffering, seeds)
	return c, true
}

// differingFlows counts the flows, matched by id, whose outcome differs (or that exist on one side
// only), and all flows.
func differingFlows(a, b []FlowRow) (differ, all int) {
	type outcome struct {
		completed        bool
		fct              float64
		delivered, retxs int64
	}
	byID := make(map[uint32]outcome, len(a))
	for _, r := range a {
		byID[r.ID] = outcome{r.Completed, r.FCTS, r.Delivered, r.Retransmits}
	}
	seen := 0
	for _, r := range b {
		o, ok := byID[r.ID]
		if ok {
			seen++
		}
		if !ok || o != (outcome{r.Completed, r.FCTS, r.Delivered, r.Retransmits}) {
			differ++
		}
	}
	differ += len(a) - seen
	return differ, len(b) + len(a) - seen
}

// zeroCount compares a count that must be zero.
func zeroCount(c MetricChange, bv, nv []float64) MetricChange {
	bn, nn := countNonZero(bv), countNonZero(nv)
	switch {
	case bn == 0 && nn == 0:
		c.Verdict = VerdictEquivalent
		c.Note = "0 in every run"
	case bn == 0:
		c.Verdict = VerdictZeroBroken
		c.Note = fmt.Sprintf("%s in %d of %d NEW runs, none in BASE", num(c.NewCount), nn, len(nv))
	case nn == 0:
		c.Verdict = VerdictEquivalent
		c.Note = fmt.Sprintf("BASE had %s in %d of %d runs, NEW none (fixed)", num(c.BaseCount), bn, len(bv))
	case c.NewCount > c.BaseCount:
		c.Verdict = VerdictChanged
		c.Note = fmt.Sprintf("already non-zero in BASE; %s -> %s", num(c.BaseCount), num(c.NewCount))
	default:
		c.Verdict = VerdictEquivalent
		c.Note = fmt.Sprintf("non-zero in BASE too (%s -> %s): not more", num(c.BaseCount), num(c.NewCount))
	}
	return c
}

// fromZero compares a metric that is 0 in every base run.
func fromZero(c MetricChange, nv []float64, any bool) MetricChange {
	nn := countNonZero(nv)
	switch {
	case nn == 0:
		c.Verdict = VerdictEquivalent
		c.Note = "0 in every run"
	case nn == len(nv) || any:
		c.Verdict = VerdictChanged
		c.Note = fmt.Sprintf("0 in every BASE run, non-zero in %d of %d NEW runs", nn, len(nv))
	default:
		c.Verdict = VerdictUndecided
		c.Note = fmt.Sprintf("0 in every BASE run, non-zero in %d of %d NEW runs", nn, len(nv))
	}
	return c
}

// diffCI is a relative difference's mean and CI, with what the seeds-to-decide estimate needs.
type diffCI struct {
	mean, lo, hi float64
	sd           float64 // relative SD of one seed's difference (paired) or of one run (unpaired, pooled)
	n            int
}

// relativeDiff is (NEW - BASE)/|base| with its CI at level: paired over the common seeds when the trees
// share at least two (a seed on one side only is reported missing by CompareTrees), else Welch's
// interval.
func relativeDiff(bs, ns map[int64]float64, base, level float64) (diffCI, bool) {
	scale := math.Abs(base)
	var ds []float64
	for s, b := range bs {
		if n, ok := ns[s]; ok {
			ds = append(ds, (n-b)/scale)
		}
	}
	if len(ds) >= 2 {
		c := MeanCI(ds, level)
		return diffCI{mean: c.Mean, lo: c.Lo, hi: c.Hi, sd: c.SD, n: c.N}, true
	}
	b, n := MeanCI(values(bs), level), MeanCI(values(ns), level)
	d := diffCI{mean: (n.Mean - b.Mean) / scale, n: min(b.N, n.N)}
	if b.N < 2 || n.N < 2 {
		d.lo, d.hi, d.sd = math.NaN(), math.NaN(), math.NaN()
		return d, false
	}
	vb, vn := b.SD*b.SD/float64(b.N), n.SD*n.SD/float64(n.N)
	se := math.Sqrt(vb + vn)
	d.sd = math.Sqrt((b.SD*b.SD+n.SD*n.SD)/2) / scale
	if se == 0 {
		d.lo, d.hi = d.mean, d.mean
		return d, false
	}
	df := (vb + vn) * (vb + vn) / (vb*vb/float64(b.N-1) + vn*vn/float64(n.N-1))
	half := tq(1-(1-level)/2, df) * se / scale
	d.lo, d.hi = d.mean-half, d.mean+half
	return d, false
}

// tq is TQuantile with real degrees of freedom (Welch's).
func tq(p, df float64) float64 {
	if df >= 1e6 {
		return TQuantile(p, 1_000_000)
	}
	lo, hi := int(math.Floor(df)), int(math.Ceil(df))
	if lo < 1 {
		lo = 1
	}
	if hi == lo {
		return TQuantile(p, lo)
	}
	// Linear between the neighbouring integer degrees of freedom: within 0.3% of the exact quantile
	// for df >= 2 at p = 0.975.
	a, b := TQuantile(p, lo), TQuantile(p, hi)
	return a + (b-a)*(df-float64(lo))
}

// decide turns a relative difference's CI into a verdict.
func decide(d diffCI, margin float64, dir int, paired bool, level float64) (string, int, string) {
	if math.IsNaN(d.lo) {
		if d.mean == 0 {
			return VerdictEquivalent, 0, "one run each, equal"
		}
		return VerdictUndecided, 0, "one run in a tree: no interval"
	}
	switch {
	case d.lo > margin || d.hi < -margin:
		if (dir > 0 && d.lo > margin) || (dir < 0 && d.hi < -margin) {
			return VerdictExpected, 0, ""
		}
		return VerdictChanged, 0, ""
	case d.lo >= -margin && d.hi <= margin:
		return VerdictEquivalent, 0, ""
	}
	return VerdictUndecided, seedsToDecide(d, margin, paired, level), ""
}

// seedsToDecide is the seeds per tree at which a CI of the observed spread around the observed mean
// would lie wholly inside or wholly beyond the margin: the smallest n with t(n)·k·sd/√n below the
// distance from the mean to the margin (k = 1 paired, √2 for two independent samples); 0 if none up to
// 10000.
func seedsToDecide(d diffCI, margin float64, paired bool, level float64) int {
	gap := math.Abs(math.Abs(d.mean) - margin)
	if gap == 0 || math.IsNaN(d.sd) {
		return 0
	}
	k := 1.0
	if !paired {
		k = math.Sqrt2
	}
	for n := 2; n <= 10000; n++ {
		df := n - 1
		if !paired {
			df = 2*n - 2
		}
		if TQuantile(1-(1-level)/2, df)*k*d.sd/math.Sqrt(float64(n)) < gap {
			return n
		}
		if n > 100 {
			n += n / 20 // coarser steps: the estimate is rough anyway
		}
	}
	return 0
}

// ParseMarginFlags reads --margin metric=5% (or 0.05) entries.
func ParseMarginFlags(vals []string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, v := range vals {
		k, s, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--margin %q: want metric=5%%", v)
		}
		if err := checkRegressMetric(k); err != nil {
			return nil, fmt.Errorf("--margin %q: %w", v, err)
		}
		pct := strings.HasSuffix(s, "%")
		x, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
		if err != nil || x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("--margin %q: the margin is a non-negative number or percentage", v)
		}
		if pct {
			x /= 100
		}
		out[k] = x
	}
	return out, nil
}

// ParseExpectFlags reads --expect metric=up|down entries.
func ParseExpectFlags(vals []string) (map[string]int, error) {
	out := map[string]int{}
	for _, v := range vals {
		k, s, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--expect %q: want metric=up or metric=down", v)
		}
		if err := checkRegressMetric(k); err != nil {
			return nil, fmt.Errorf("--expect %q: %w", v, err)
		}
		var d int
		switch s {
		case "up":
			d = 1
		case "down":
			d = -1
		default:
			return nil, fmt.Errorf("--expect %q: the direction is up or down", v)
		}
		if _, twice := out[k]; twice {
			// The later one silently won: a metric has one intended direction.
			return nil, fmt.Errorf("--expect %q: %s is already expected by an earlier --expect; give each metric once", v, k)
		}
		out[k] = d
	}
	return out, nil
}

func checkRegressMetric(m string) error {
	if m == IdentityMetric {
		return nil
	}
	if _, ok := LookupMetric(m); !ok {
		return fmt.Errorf("no metric %q (metrics: %s; class.<workload name>.<metric> per class)", m, strings.Join(metricNames(), ", "))
	}
	return nil
}

// RegressTable is the comparison as a table: every metric of every group, base and new means, the
// ratio new/base with its 95% CI, the margin and the verdict.
func RegressTable(rg *Regression) Table {
	title := fmt.Sprintf("BASE vs NEW: new/base with its CI, family-wise 95%% over the %d intervals (each at %.4g%%; paired by seed when the seeds match, else Welch), margin, verdict", rg.Metrics, 100*rg.Each)
	if rg.Each == rg.Level {
		title = "BASE vs NEW: new/base with its 95% CI (each on its own; paired by seed when the seeds match, else Welch), margin, verdict"
	}
	t := Table{Title: title,
		Header: []string{"spec", "metric", "base", "new", "new/base", "CI", "margin", "verdict", "note"}}
	for _, c := range rg.Changes {
		ratio, ci := "-", "-"
		if c.Ratio != nil {
			ratio = fmt.Sprintf("%.4f", *c.Ratio)
		}
		if c.RatioLo != nil && c.RatioHi != nil {
			ci = fmt.Sprintf("[%.4f, %.4f]", *c.RatioLo, *c.RatioHi)
		}
		margin := "count"
		if c.Metric == IdentityMetric {
			margin = "identity"
		} else if !zeroCounts[baseMetric(c.Metric)] {
			margin = fmt.Sprintf("±%g%%", 100*c.Margin)
		}
		v := c.Verdict
		if c.Fails() {
			v = strings.ToUpper(v)
		}
		note := c.Note
		if c.Verdict == VerdictUndecided && c.SeedsToDecide > 0 {
			note = strings.TrimPrefix(note+fmt.Sprintf("; ~%d seeds per tree would decide", c.SeedsToDecide), "; ")
		} else if c.Verdict == VerdictUndecided && c.Ratio != nil && c.RatioLo != nil {
			note = strings.TrimPrefix(note+"; the mean sits at the margin: >10000 seeds", "; ")
		}
		if !c.Paired && c.Ratio != nil && c.BaseN > 1 {
			note = strings.TrimPrefix(note+"; unpaired", "; ")
		}
		scale, _ := scaleFor(c.Metric)
		t.Rows = append(t.Rows, []string{c.Group, c.Metric, num(c.Base * scale), num(c.New * scale), ratio, ci, margin, v, note})
	}
	for _, o := range rg.OnlyIn {
		t.Notes = append(t.Notes, o+" (not compared)")
	}
	return t
}

// RegressSummary is the closing lines: how many metrics got each verdict, the failing ones, what is
// missing, and the overall verdict, which matches lab compare's exit status (RegressExit).
func RegressSummary(rg *Regression) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d metrics: %d changed, %d zero broken, %d expected, %d equivalent, %d undecided, %d not finite\n",
		len(rg.Changes), rg.Counts[VerdictChanged], rg.Counts[VerdictZeroBroken], rg.Counts[VerdictExpected],
		rg.Counts[VerdictEquivalent], rg.Counts[VerdictUndecided], rg.Counts[VerdictNotFinite])
	if n := rg.Counts[VerdictOneSide]; n > 0 {
		fmt.Fprintf(&b, "%d measured by one tree only\n", n)
	}
	for _, c := range rg.Changes {
		if !c.Fails() {
			continue
		}
		what := c.Note
		if c.Ratio != nil && c.RatioLo != nil {
			what = fmt.Sprintf("new/base %.4f [%.4f, %.4f] beyond ±%g%%", *c.Ratio, *c.RatioLo, *c.RatioHi, 100*c.Margin)
		}
		fmt.Fprintf(&b, "  %s %s: %s: %s\n", c.Group, c.Metric, strings.ToUpper(c.Verdict), what)
	}
	for _, m := range rg.Missing {
		fmt.Fprintf(&b, "  MISSING: %s\n", m)
	}
	undecided := rg.Counts[VerdictUndecided]
	switch {
	case rg.Failed:
		b.WriteString("verdict: REGRESSION (something changed beyond its margin, or a count that must be zero is not)\n")
	case len(rg.Missing) > 0:
		fmt.Fprintf(&b, "verdict: CANNOT DECIDE: %d runs or values missing or unreadable (above); %d metrics undecided\n", len(rg.Missing), undecided)
	case rg.NotDecided:
		fmt.Fprintf(&b, "verdict: not decided: %d of %d metrics undecided (more seeds, or the same seeds on both sides)\n", undecided, len(rg.Changes))
	case undecided > 0:
		fmt.Fprintf(&b, "verdict: no change beyond the margins (%d of %d metrics undecided)\n", undecided, len(rg.Changes))
	default:
		b.WriteString("verdict: no change beyond the margins\n")
	}
	return b.String()
}

// Exit statuses of lab compare (its help and docs/experiments.md, "The CLI at a glance").
const (
	RegressPass    = 0 // nothing changed beyond its margin, every run paired and read, most metrics decided
	RegressCannot  = 1 // missing or unreadable runs, non-finite values, or most metrics undecided
	RegressChanged = 3 // something changed beyond its margin, or a count that must be zero is not
)

// RegressExit is the exit status for rg.
func RegressExit(rg *Regression) int {
	switch {
	case rg.Failed:
		return RegressChanged
	case rg.Undecidable():
		return RegressCannot
	}
	return RegressPass
}
