package report

import (
	"encoding/json"
	"fmt"
	"github.com/fabriclab/fabriclab/bounded"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
)

// ManifestFile is a run tree's index, written by lab run for seeds, sweeps and several specs.
const ManifestFile = "manifest.json"

// Setting is one swept spec field's value in a run (spec.Setting as the manifest stores it).
type Setting struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// ManifestRun is one run of a tree.
type ManifestRun struct {
	Dir  string    `json:"dir"`  // relative to the tree
	Name string    `json:"name"` // the spec's name
	Spec string    `json:"spec"` // the spec file
	Seed int64     `json:"seed"`
	Set  []Setting `json:"set,omitempty"`
	// Status: pending, done, failed, unfaithful (netns fidelity), interrupted, not run. A run's status
	// file (StatusSuffix), when there is one, overrides it.
	Status string  `json:"status"`
	Error  string  `json:"error,omitempty"`
	WallS  float64 `json:"wall_s,omitempty"`
}

// ManifestAxis is a swept field and its values in sweep order.
type ManifestAxis struct {
	Path   string   `json:"path"`
	Values []string `json:"values"`
}

// Manifest is manifest.json.
type Manifest struct {
	Specs []string       `json:"specs"`
	Seeds int            `json:"seeds"`
	Jobs  int            `json:"jobs"`
	Axes  []ManifestAxis `json:"axes,omitempty"`
	Runs  []ManifestRun  `json:"runs"`
}

// SetLabel writes settings as "path=value,path=value".
func SetLabel(set []Setting) string {
	parts := make([]string, len(set))
	for i, s := range set {
		parts[i] = s.Path + "=" + s.Value
	}
	return strings.Join(parts, ",")
}

// Group is the runs of one spec at one sweep point: its seeds.
type Group struct {
	Tree  string    // the run tree it came from, when lab report keeps trees apart ("" otherwise)
	Name  string    // the spec's name
	Set   []Setting // the sweep point ("" label without a sweep)
	Runs  []*Run    // by seed
	Seeds []int64
}

// Label names a group in tables and legends: the spec name, and the sweep point if any.
func (g *Group) Label() string {
	l := g.Name
	if s := SetLabel(g.Set); s != "" {
		l += " " + s
	}
	if g.Tree != "" {
		l += " [" + g.Tree + "]"
	}
	return l
}

// Value returns the group's setting for path ("" if it has none).
func (g *Group) Value(path string) string {
	for _, s := range g.Set {
		if s.Path == path {
			return s.Value
		}
	}
	return ""
}

// Tree is what lab report aggregates: groups of runs (from run trees' manifests, or single run
// directories as groups of one), the swept axes, and the runs a manifest lists that did not finish.
type Tree struct {
	Groups  []*Group
	Axes    []ManifestAxis
	Skipped []string // "dir: status (error)"
}

// Runs is every run of every group, in group order.
func (t *Tree) Runs() []*Run {
	var rs []*Run
	for _, g := range t.Groups {
		rs = append(rs, g.Runs...)
	}
	return rs
}

// LoadTrees reads run trees (directories with manifest.json) and plain run directories into one Tree.
// Runs of the same spec name and sweep point from different arguments join one group.
func LoadTrees(dirs []string) (*Tree, error) { return loadTrees(dirs, false) }

// LoadTreesApart is LoadTrees keeping each argument's runs in groups of their own, labelled by the
// argument (a baseline and a changed build of the same specs side by side: lab report --apart).
func LoadTreesApart(dirs []string) (*Tree, error) { return loadTrees(dirs, true) }

func loadTrees(dirs []string, apart bool) (*Tree, error) {
	t := &Tree{}
	byKey := map[string]*Group{}
	var tree string // the argument the runs come from, when apart
	add := func(r *Run, set []Setting) {
		r.Set, r.Tree = set, tree
		key := r.Name + "\x00" + SetLabel(set) + "\x00" + tree
		g, ok := byKey[key]
		if !ok {
			g = &Group{Name: r.Name, Set: set, Tree: tree}
			byKey[key] = g
			t.Groups = append(t.Groups, g)
		}
		g.Runs = append(g.Runs, r)
	}
	for _, d := range dirs {
		if apart {
			tree = filepath.Clean(d)
		}
		b, err := bounded.ReadFile(filepath.Join(d, ManifestFile), bounded.Summary)
		if os.IsNotExist(err) {
			r, err := LoadRun(d)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", d, err)
			}
			add(r, nil)
			continue
		}
		if err != nil {
			return nil, err
		}
		var m Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(d, ManifestFile), err)
		}
		for _, a := range m.Axes {
			if !hasAxis(t.Axes, a.Path) {
				t.Axes = append(t.Axes, a)
			}
		}
		for _, mr := range m.Runs {
			dir := filepath.Join(d, mr.Dir)
			// The run's status file, written by whichever process ran it, is authoritative; the
			// manifest's status only stands for trees written before status files.
			st, err := ReadRunStatus(d, mr.Dir)
			if err == nil && st != nil && st.Orphaned(d) {
				st.MarkDied() // said here, not written: lab clean writes it
			}
			switch {
			case err != nil:
				t.Skipped = append(t.Skipped, fmt.Sprintf("%s: status unreadable (%v)", dir, err))
				continue
			case st != nil && st.Status != "done":
				t.Skipped = append(t.Skipped, fmt.Sprintf("%s: %s", dir, st.describe()))
				continue
			case st == nil && mr.Status != "done":
				s := fmt.Sprintf("%s: %s", dir, mr.Status)
				if mr.Status == "pending" {
					s = fmt.Sprintf("%s: not started (no %s)", dir, filepath.Base(mr.Dir)+StatusSuffix)
				}
				if mr.Error != "" {
					s += " (" + mr.Error + ")"
				}
				t.Skipped = append(t.Skipped, s)
				continue
			}
			r, err := loadRun(dir, false)
			if err != nil {
				// A run the manifest lists as done but that cannot be read (moved, edited) is said, and
				// the rest of the tree still aggregates.
				t.Skipped = append(t.Skipped, fmt.Sprintf("%s: unreadable (%v)", dir, err))
				continue
			}
			r.Seed = mr.Seed
			if mr.Name != "" {
				r.Name = mr.Name
			}
			add(r, mr.Set)
		}
	}
	for _, g := range t.Groups {
		sort.SliceStable(g.Runs, func(i, j int) bool { return g.Runs[i].Seed < g.Runs[j].Seed })
		g.Seeds = nil
		for _, r := range g.Runs {
			g.Seeds = append(g.Seeds, r.Seed)
		}
	}
	if len(t.Groups) == 0 {
		return nil, fmt.Errorf("no finished runs in %s", strings.Join(dirs, ", "))
	}
	return t, nil
}

func hasAxis(as []ManifestAxis, p string) bool {
	for _, a := range as {
		if a.Path == p {
			return true
		}
	}
	return false
}

// CI is a sample's mean with a two-sided Student-t confidence interval: Mean ± Half, Half =
// t(1-(1-level)/2, N-1) · SD/√N. With fewer than two values there is no interval (Half is NaN).
type CI struct {
	N          int
	Mean, SD   float64
	Half       float64 // NaN when N < 2
	Level      float64 // e.g. 0.95
	Lo, Hi     float64 // Mean ∓ Half (NaN when N < 2)
	Values     []float64
	Undefined  int // values that could not be measured (left out)
	FirstError string
}

// TQuantile is Student's t quantile function: the t with P(T <= t) = p for df degrees of freedom.
func TQuantile(p float64, df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(p)
}

// MeanCI is the mean and the level (e.g. 0.95) confidence interval of xs, assuming independent draws
// (one per seed) of a roughly normal mean.
func MeanCI(xs []float64, level float64) CI {
	c := CI{N: len(xs), Level: level, Values: append([]float64(nil), xs...), Half: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	if c.N == 0 {
		c.Mean, c.SD = math.NaN(), math.NaN()
		return c
	}
	for _, x := range xs {
		c.Mean += x
	}
	c.Mean /= float64(c.N)
	if c.N < 2 {
		c.SD = math.NaN()
		return c
	}
	var ss float64
	for _, x := range xs {
		ss += (x - c.Mean) * (x - c.Mean)
	}
	c.SD = math.Sqrt(ss / float64(c.N-1))
	c.Half = TQuantile(1-(1-level)/2, c.N-1) * c.SD / math.Sqrt(float64(c.N))
	c.Lo, c.Hi = c.Mean-c.Half, c.Mean+c.Half
	return c
}

// Level is the confidence level of every interval the report prints.
const Level = 0.95

// GroupMetric is a metric's mean and CI over a group's seeds.
func (g *Group) GroupMetric(name string) CI {
	var xs []float64
	bad, first := 0, ""
	for _, r := range g.Runs {
		if v, ok := r.Metric(name); ok && !math.IsNaN(v) {
			xs = append(xs, v)
		} else {
			bad++
			if first == "" {
				first = fmt.Sprintf("no metric %q", name)
			}
		}
	}
	c := MeanCI(xs, Level)
	c.Undefined, c.FirstError = bad, first
	return c
}

// CheckMetricName says why an `expect:` key is not a metric the report can measure: a MetricDefs name
// (class.<class>.<name> for the per-class ones) or reduction:<metric>:<run> / ratio:<metric>:<run>.
func CheckMetricName(name string) error {
	metric := name
	if kind, rest, ok := strings.Cut(name, ":"); ok {
		if kind != "reduction" && kind != "ratio" {
			return fmt.Errorf("%q: cross-run forms are reduction:<metric>:<run> and ratio:<metric>:<run>", name)
		}
		i := strings.LastIndex(rest, ":")
		if i <= 0 || i == len(rest)-1 {
			return fmt.Errorf("%q: want %s:<metric>:<run>", name, kind)
		}
		metric = rest[:i]
	}
	if _, ok := LookupMetric(metric); !ok {
		return fmt.Errorf("%q: no metric %q (metrics: %s; class.<workload name>.<metric> per class)", name, metric, strings.Join(metricNames(), ", "))
	}
	return nil
}

func metricNames() []string {
	var ns []string
	for _, d := range MetricDefs {
		if d.Alias == "" {
			ns = append(ns, d.Name)
		}
	}
	return ns
}

// CheckExpect checks every key of a spec's expect: block (lab run refuses a spec whose published
// numbers could never be compared).
func CheckExpect[E any](expect map[string]E) error {
	keys := make([]string, 0, len(expect))
	for k := range expect {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []string
	for _, k := range keys {
		if err := CheckMetricName(k); err != nil {
			errs = append(errs, "expect."+k+": "+err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// MetricDefinition is the definition a metric name (cross-run forms included) compares against.
func MetricDefinition(name string) string {
	if kind, rest, ok := strings.Cut(name, ":"); ok && (kind == "reduction" || kind == "ratio") {
		i := strings.LastIndex(rest, ":")
		if i < 0 {
			return ""
		}
		inner := MetricDefinition(rest[:i])
		if kind == "ratio" {
			return fmt.Sprintf("this run's %s / run %s's, paired by seed; %s: %s", rest[:i], rest[i+1:], rest[:i], inner)
		}
		return fmt.Sprintf("(1 - this run's %s / run %s's) x 100, paired by seed; %s: %s", rest[:i], rest[i+1:], rest[:i], inner)
	}
	d, ok := LookupMetric(name)
	if !ok {
		return ""
	}
	if d.Alias != "" {
		return fmt.Sprintf("older name of %s: %s", d.Name, d.Definition)
	}
	return d.Definition
}

// pairedRun finds the run of spec other that pairs with r: the same seed, at r's sweep point when
// other was swept the same way, else at other's only point.
func pairedRun(all []*Run, r *Run, other string) (*Run, error) {
	var cands []*Run
	for _, x := range all {
		if x.Name == other && x.Seed == r.Seed && x.Tree == r.Tree {
			cands = append(cands, x)
		}
	}
	if len(cands) == 0 {
		if r.Seed != 0 {
			return nil, fmt.Errorf("run %s has no seed %d in this report", other, r.Seed)
		}
		return nil, fmt.Errorf("run %s is not in this report", other)
	}
	label := SetLabel(r.Set)
	for _, c := range cands {
		if SetLabel(c.Set) == label {
			return c, nil
		}
	}
	if len(cands) == 1 {
		return cands[0], nil
	}
	return nil, fmt.Errorf("run %s seed %d has %d sweep points and none is %s", other, r.Seed, len(cands), label)
}

// AggExpectation is one `expect:` entry of a group: the measured mean and CI over its seeds (cross-run
// forms computed per seed pair) next to the published number.
type AggExpectation struct {
	Group      string
	Metric     string
	Definition string
	Published  Expected
	N          int
	Mean       float64
	Half       float64 // NaN for one seed
	Values     []float64
	Error      string // why some seeds could not be measured
	// Verdict says where the published number lies against the measured interval: "paper within CI"
	// when in [Mean-Half, Mean+Half], "paper above CI (measured lower)" or "paper below CI (measured
	// higher)" otherwise; "one seed" without an interval. (Plain "above CI" read as "we measured
	// above", the opposite.) A zero-tolerance claim (IsZeroClaim) is judged as a count instead: "0 in
	// every seed", or "BROKEN: ..." naming the seeds that were not 0 (ZeroClaimBroken). The strict
	// reproduction verdict of a paper's claim is the claims package's (docs/claims.md).
	Verdict string
}

// zeroClaimMetrics are the counts a paper can claim are zero (lossless, retransmission-free,
// deadlock-free, no violation): such a claim holds only if every seed counts 0. A t-interval is the
// wrong test for it: over two seeds with 0 and 2.2e5 retransmissions the interval reaches below 0 and a
// claim of 0 would read "within CI".
var zeroClaimMetrics = map[string]bool{"drops_lossless": true, "drops_lossy": true, "retransmissions": true,
	"deadlocks": true, "violations": true, "nic_drops": true}

// IsZeroClaim says whether an expect: entry is a zero-tolerance claim: a count above, published as 0.
func IsZeroClaim(metric string, published float64) bool {
	return published == 0 && zeroClaimMetrics[baseMetric(metric)]
}

// zeroBroken prefixes the verdict of a zero-tolerance claim some seed broke.
const zeroBroken = "BROKEN"

// ZeroClaimBroken says whether an expectation is a zero-tolerance claim that some seed broke.
func (a AggExpectation) ZeroClaimBroken() bool { return strings.HasPrefix(a.Verdict, zeroBroken) }

// zeroVerdict judges a zero-tolerance claim over the seeds' counts.
func zeroVerdict(xs []float64) string {
	n, total := 0, 0.0
	for _, x := range xs {
		if x != 0 {
			n++
			total += x
		}
	}
	if n == 0 {
		return fmt.Sprintf("0 in every seed (%d)", len(xs))
	}
	return fmt.Sprintf("%s: non-zero in %d of %d seeds (%s in all)", zeroBroken, n, len(xs), num(total))
}

// AggregateExpectations evaluates every group's expect: entries over its seeds.
func AggregateExpectations(t *Tree) []AggExpectation {
	all := t.Runs()
	var out []AggExpectation
	for _, g := range t.Groups {
		if len(g.Runs) == 0 {
			continue
		}
		exp := g.Runs[0].Expect
		keys := make([]string, 0, len(exp))
		for k := range exp {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			a := AggExpectation{Group: g.Label(), Metric: k, Definition: MetricDefinition(k), Published: exp[k]}
			var xs []float64
			for _, r := range g.Runs {
				v, err := measurePaired(all, r, k)
				if err != nil {
					if a.Error == "" {
						a.Error = err.Error()
					}
					continue
				}
				xs = append(xs, v)
			}
			c := MeanCI(xs, Level)
			a.N, a.Mean, a.Half, a.Values = c.N, c.Mean, c.Half, c.Values
			if IsZeroClaim(k, a.Published.Value) && c.N > 0 {
				a.Verdict = zeroVerdict(xs)
				out = append(out, a)
				continue
			}
			switch p := a.Published.Value; {
			case c.N == 0:
				a.Verdict = "not measured"
			case c.N < 2:
				a.Verdict = "one seed"
			case p < c.Lo:
				a.Verdict = "paper below CI (measured higher)"
			case p > c.Hi:
				a.Verdict = "paper above CI (measured lower)"
			default:
				a.Verdict = "paper within CI"
			}
			if n := deadlockNote(all, g.Runs, k); n != "" {
				a.Verdict += "; " + n
			}
			out = append(out, a)
		}
	}
	return out
}

// deadlockNote flags an expectation whose runs, or the runs it is paired with (the <run> of a
// reduction:/ratio: form), deadlocked: their FCTs and per-flow goodputs are of the flows that finished
// before the deadlock, so a scheme that deadlocked can look best on them. "" when none did, or when the
// metric does not average over finished flows only.
func deadlockNote(all, runs []*Run, metric string) string {
	base := metric
	if kind, rest, ok := strings.Cut(metric, ":"); ok && (kind == "reduction" || kind == "ratio") {
		if i := strings.LastIndex(rest, ":"); i >= 0 {
			base = rest[:i]
		}
	}
	base = baseMetric(base)
	if !strings.HasPrefix(base, "fct_") && !strings.HasPrefix(base, "slowdown") && !strings.Contains(base, "per_flow_completed") {
		return ""
	}
	var notes []string
	flag := func(name string, rs []*Run) {
		dead, done, total := 0, 0, 0
		for _, r := range rs {
			if r.Summary == nil {
				continue
			}
			if r.Summary.Deadlock.Detected {
				dead++
			}
			done += r.Summary.Flows.Completed
			total += r.Summary.Flows.Total
		}
		if dead > 0 {
			notes = append(notes, fmt.Sprintf("%s DEADLOCKED in %d of %d seeds (%.1f%% of flows finished; only they count)", name, dead, len(rs), 100*float64(done)/float64(max(total, 1))))
		}
	}
	if len(runs) > 0 {
		flag(runs[0].Name, runs)
	}
	if kind, rest, ok := strings.Cut(metric, ":"); ok && (kind == "reduction" || kind == "ratio") {
		if i := strings.LastIndex(rest, ":"); i >= 0 {
			other := rest[i+1:]
			seeds := map[int64]bool{}
			for _, r := range runs {
				seeds[r.Seed] = true
			}
			var rs []*Run
			for _, r := range all {
				if r.Name == other && seeds[r.Seed] && (len(runs) == 0 || r.Tree == runs[0].Tree) {
					rs = append(rs, r)
				}
			}
			flag(other, rs)
		}
	}
	return strings.Join(notes, "; ")
}

// GroupMeasure is a metric of g over its seeds, the cross-run forms (reduction:<m>:<run>,
// ratio:<m>:<run>) paired by seed and sweep point as in AggregateExpectations.
func (t *Tree) GroupMeasure(g *Group, name string) CI {
	all := t.Runs()
	var xs []float64
	bad, first := 0, ""
	for _, r := range g.Runs {
		v, err := measurePaired(all, r, name)
		if err != nil || math.IsNaN(v) {
			bad++
			if first == "" && err != nil {
				first = err.Error()
			}
			continue
		}
		xs = append(xs, v)
	}
	c := MeanCI(xs, Level)
	c.Undefined, c.FirstError = bad, first
	return c
}

// measurePaired is Measure with cross-run forms paired by seed and sweep point.
func measurePaired(all []*Run, r *Run, name string) (float64, error) {
	kind, rest, ok := strings.Cut(name, ":")
	if !ok || (kind != "reduction" && kind != "ratio") {
		return Measure(all, r, name)
	}
	i := strings.LastIndex(rest, ":")
	if i < 0 {
		return 0, fmt.Errorf("want %s:<metric>:<run>", kind)
	}
	o, err := pairedRun(all, r, rest[i+1:])
	if err != nil {
		return 0, err
	}
	return Measure([]*Run{r, o}, r, name)
}

// units for the aggregate table: seconds as us, bit/s as Gb/s.
func scaleFor(name string) (float64, string) {
	d, _ := LookupMetric(name)
	switch d.Unit {
	case "s":
		return 1e6, "us"
	case "bps":
		return 1e-9, "Gb/s"
	}
	return 1, ""
}

// tableName is how the aggregate table names metric m, whose values it prints scaled (scaleFor): the
// unit the name ends in becomes the one printed, so fct_avg_s in microseconds reads "fct_avg (us)", not
// "fct_avg_s" over a number of microseconds. aggregate.csv and expect: keep the metric's own name.
func tableName(m string) string {
	_, unit := scaleFor(m)
	if unit == "" {
		return m
	}
	d, _ := LookupMetric(m)
	return strings.TrimSuffix(m, "_"+d.Unit) + " (" + unit + ")"
}

func fmtCI(c CI, scale float64) string {
	if c.N == 0 {
		return "-"
	}
	if c.N < 2 || math.IsNaN(c.Half) {
		return num(c.Mean * scale)
	}
	return fmt.Sprintf("%s ±%s", num(c.Mean*scale), num(c.Half*scale))
}

// aggregateRows are the metrics of the aggregate table: every MetricDefs metric, then per class the
// FCT and goodput readings.
func aggregateRows(t *Tree) []string {
	names := metricNames()
	set := map[string]bool{}
	for _, r := range t.Runs() {
		for c := range r.Summary.Classes {
			set[c] = true
		}
	}
	var cls []string
	for c := range set {
		cls = append(cls, c)
	}
	sort.Strings(cls)
	for _, c := range cls {
		for _, m := range []string{"flows_completed_fraction", "fct_avg_s", "fct_p99_s", "goodput_per_flow_all_bps",
			"goodput_per_flow_completed_bps", "goodput_aggregate_bps", "goodput_aggregate_completed_bps"} {
			names = append(names, "class."+c+"."+m)
		}
	}
	return names
}

// AggregateTable is every metric's mean ± 95% CI half-width over each group's seeds, one column per
// group (FCTs in us, goodputs in Gb/s).
func AggregateTable(t *Tree) Table {
	tb := Table{Title: "mean ±95% CI half-width over seeds (Student t; times in us, rates in Gb/s; aggregate.csv: metric names, seconds, bit/s)",
		Header: []string{"metric"}}
	for _, g := range t.Groups {
		tb.Header = append(tb.Header, g.Label())
	}
	seeds := []string{"seeds"}
	for _, g := range t.Groups {
		seeds = append(seeds, strconv.Itoa(len(g.Runs)))
	}
	tb.Rows = append(tb.Rows, seeds)
	// A group that deadlocked has FCTs of the flows finished before the deadlock only: it can look best
	// on them, so the table says which groups did, next to their seed counts.
	dead, anyDead := []string{"DEADLOCKED seeds (FCTs: finished flows only)"}, false
	for _, g := range t.Groups {
		n := 0
		for _, r := range g.Runs {
			if r.Summary != nil && r.Summary.Deadlock.Detected {
				n++
			}
		}
		cell := "-"
		if n > 0 {
			cell, anyDead = fmt.Sprintf("DEADLOCK %d/%d", n, len(g.Runs)), true
		}
		dead = append(dead, cell)
	}
	if anyDead {
		tb.Rows = append(tb.Rows, dead)
	}
	for _, m := range aggregateRows(t) {
		scale, _ := scaleFor(m)
		row := []string{tableName(m)}
		any := false
		for _, g := range t.Groups {
			c := g.GroupMetric(m)
			if c.N > 0 {
				any = true
			}
			row = append(row, fmtCI(c, scale))
		}
		if any {
			tb.Rows = append(tb.Rows, row)
		}
	}
	return tb
}

// AggregateCSV is AggregateTable with mean, CI half-width and n in their own columns, unscaled (seconds,
// bit/s), for scripts.
func AggregateCSV(t *Tree) Table {
	tb := Table{Header: []string{"group", "name"}}
	for _, a := range t.Axes {
		tb.Header = append(tb.Header, a.Path)
	}
	tb.Header = append(tb.Header, "metric", "n", "mean", "ci95_half", "sd")
	for _, g := range t.Groups {
		for _, m := range aggregateRows(t) {
			c := g.GroupMetric(m)
			if c.N == 0 {
				continue
			}
			row := []string{g.Label(), g.Name}
			for _, a := range t.Axes {
				row = append(row, g.Value(a.Path))
			}
			row = append(row, m, strconv.Itoa(c.N), ftoa(c.Mean), ftoaNaN(c.Half), ftoaNaN(c.SD))
			tb.Rows = append(tb.Rows, row)
		}
	}
	return tb
}

func ftoaNaN(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return ftoa(x)
}

// ExpectationsCI is the measured-vs-published table over seeds.
func ExpectationsCI(es []AggExpectation) Table {
	t := Table{Title: "measured (mean ±95% CI over seeds) vs published", Header: []string{"run", "metric", "n", "measured", "95% CI", "published", "unit", "verdict", "source"}}
	for _, e := range es {
		ci, meas := "-", "n/a"
		if e.N > 0 {
			meas = num(e.Mean)
		}
		if IsZeroClaim(e.Metric, e.Published.Value) {
			ci = "(a count)"
		} else if e.N >= 2 {
			ci = fmt.Sprintf("[%s, %s]", num(e.Mean-e.Half), num(e.Mean+e.Half))
		}
		v := e.Verdict
		if e.Error != "" {
			v += " (" + e.Error + ")"
		}
		t.Rows = append(t.Rows, []string{e.Group, e.Metric, strconv.Itoa(e.N), meas, ci, num(e.Published.Value), e.Published.Unit, v, e.Published.Source})
	}
	return t
}

// DefinitionsTable names what each metric of the report measures, and each expect: key's definition.
func DefinitionsTable(es []AggExpectation) Table {
	t := Table{Title: "metric definitions", Header: []string{"metric", "definition"}}
	seen := map[string]bool{}
	for _, d := range MetricDefs {
		if d.Alias != "" {
			continue
		}
		seen[d.Name] = true
		t.Rows = append(t.Rows, []string{d.Name, d.Definition})
	}
	for _, e := range es {
		if !seen[e.Metric] {
			seen[e.Metric] = true
			t.Rows = append(t.Rows, []string{e.Metric, e.Definition})
		}
	}
	return t
}

// writeLeft writes a table left-aligned, for columns of sentences (definitions).
func (t Table) writeLeft(w *strings.Builder) {
	if t.Title != "" {
		fmt.Fprintf(w, "%s\n", t.Title)
	}
	width := 0
	for _, r := range t.Rows {
		width = max(width, len(r[0]))
	}
	for _, r := range t.Rows {
		fmt.Fprintf(w, "  %-*s  %s\n", width, r[0], strings.Join(r[1:], " "))
	}
}

// DefinitionsText is the definitions table as left-aligned text.
func DefinitionsText(es []AggExpectation) string {
	var b strings.Builder
	DefinitionsTable(es).writeLeft(&b)
	return b.String()
}

// AggregateJSON is aggregate.json: every group's metrics (mean, CI, values) and the expectations.
type AggregateJSON struct {
	Level        float64              `json:"level"`
	Axes         []ManifestAxis       `json:"axes,omitempty"`
	Groups       []AggregateGroup     `json:"groups"`
	Expectations []AggExpectationJSON `json:"expectations,omitempty"`
	Definitions  map[string]string    `json:"definitions"`
	Skipped      []string             `json:"skipped,omitempty"`
}

// AggregateGroup is one group in aggregate.json.
type AggregateGroup struct {
	Label   string                `json:"label"`
	Name    string                `json:"name"`
	Set     []Setting             `json:"set,omitempty"`
	Seeds   []int64               `json:"seeds"`
	Metrics map[string]MetricJSON `json:"metrics"`
}

// MetricJSON is a CI as JSON (no NaN in JSON: absent half-width means one seed).
type MetricJSON struct {
	N      int       `json:"n"`
	Mean   float64   `json:"mean"`
	Half   *float64  `json:"ci95_half,omitempty"`
	Values []float64 `json:"values"`
}

// AggExpectationJSON is AggExpectation as JSON.
type AggExpectationJSON struct {
	Group      string    `json:"group"`
	Metric     string    `json:"metric"`
	Definition string    `json:"definition"`
	Published  float64   `json:"published"`
	Unit       string    `json:"unit,omitempty"`
	Source     string    `json:"source"`
	N          int       `json:"n"`
	Mean       *float64  `json:"mean,omitempty"`
	Half       *float64  `json:"ci95_half,omitempty"`
	Values     []float64 `json:"values"`
	Verdict    string    `json:"verdict"`
	Error      string    `json:"error,omitempty"`
}

func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// Aggregate builds aggregate.json's content.
func Aggregate(t *Tree, es []AggExpectation) AggregateJSON {
	out := AggregateJSON{Level: Level, Axes: t.Axes, Definitions: map[string]string{}, Skipped: t.Skipped}
	for _, g := range t.Groups {
		ag := AggregateGroup{Label: g.Label(), Name: g.Name, Set: g.Set, Seeds: g.Seeds, Metrics: map[string]MetricJSON{}}
		for _, m := range aggregateRows(t) {
			c := g.GroupMetric(m)
			if c.N == 0 {
				continue
			}
			ag.Metrics[m] = MetricJSON{N: c.N, Mean: c.Mean, Half: finite(c.Half), Values: c.Values}
		}
		out.Groups = append(out.Groups, ag)
	}
	for _, e := range es {
		out.Expectations = append(out.Expectations, AggExpectationJSON{Group: e.Group, Metric: e.Metric,
			Definition: e.Definition, Published: e.Published.Value, Unit: e.Published.Unit, Source: e.Published.Source,
			N: e.N, Mean: finite(e.Mean), Half: finite(e.Half), Values: e.Values, Verdict: e.Verdict, Error: e.Error})
	}
	for _, d := range MetricDefs {
		if d.Alias == "" {
			out.Definitions[d.Name] = d.Definition
		}
	}
	for _, e := range es {
		out.Definitions[e.Metric] = e.Definition
	}
	return out
}

// RunDefinitionsText is DefinitionsText for runs reported one by one: every metric and every expect:
// key of the runs.
func RunDefinitionsText(runs []*Run) string {
	var es []AggExpectation
	for _, r := range runs {
		keys := make([]string, 0, len(r.Expect))
		for k := range r.Expect {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			es = append(es, AggExpectation{Metric: k, Definition: MetricDefinition(k)})
		}
	}
	return DefinitionsText(es)
}

// AggregateBucketTable is BucketTable over seeds: per NetBench size bucket, each group's FCT avg and
// p99 and mean per-flow goodput (completed flows), mean ±95% CI half-width.
func AggregateBucketTable(t *Tree) Table {
	tb := Table{Title: "per size bucket (NetBench), mean ±95% CI over seeds: FCT in us, per-flow goodput (completed flows) in Gb/s",
		Header: []string{"bucket", "figure"}}
	per := make([][][]Bucket, len(t.Groups)) // group, run, bucket
	for gi, g := range t.Groups {
		tb.Header = append(tb.Header, g.Label())
		for _, r := range g.Runs {
			per[gi] = append(per[gi], SizeBuckets(r.Rows, nil))
		}
	}
	for b := range NetBenchBuckets {
		for _, f := range []struct {
			name  string
			scale float64
			get   func(Bucket) (float64, bool)
		}{
			{"FCT avg", 1e6, func(x Bucket) (float64, bool) { return x.FCT.Avg, x.Flows.Completed > 0 }},
			{"FCT p99", 1e6, func(x Bucket) (float64, bool) { return x.FCT.P99, x.Flows.Completed > 0 }},
			{"goodput", 1e-9, func(x Bucket) (float64, bool) { return x.GoodputBps, x.Flows.Completed > 0 }},
		} {
			row := []string{NetBenchBuckets[b].Name, f.name}
			any := false
			for gi := range t.Groups {
				var xs []float64
				for _, bs := range per[gi] {
					if v, ok := f.get(bs[b]); ok {
						xs = append(xs, v)
					}
				}
				c := MeanCI(xs, Level)
				any = any || c.N > 0
				cell := fmtCI(c, f.scale)
				if c.N > 0 && c.N < len(per[gi]) {
					cell += fmt.Sprintf(" (n=%d)", c.N)
				}
				row = append(row, cell)
			}
			if any {
				tb.Rows = append(tb.Rows, row)
			}
		}
	}
	return tb
}

// SummariesCI is a metric's mean and 95% CI over summaries (one per seed), as lab report computes it
// for a run tree; suites that run seeds in process (virtual.Summaries) assert on it.
func SummariesCI(sums []*Summary, metric string) (CI, error) {
	var xs []float64
	for i, s := range sums {
		v, ok := SummaryMetric(s, metric)
		if !ok {
			return CI{}, fmt.Errorf("summary %d: no metric %q", i, metric)
		}
		xs = append(xs, v)
	}
	return MeanCI(xs, Level), nil
}

// PairedCI is a cross-run form's mean and 95% CI over seed pairs: a[i] and b[i] are the same seed's
// runs of two specs; kind is "reduction" ((1 - a/b) x 100) or "ratio" (a/b), as expect: writes
// reduction:<metric>:<run> and ratio:<metric>:<run>.
func PairedCI(a, b []*Summary, metric, kind string) (CI, error) {
	if len(a) != len(b) {
		return CI{}, fmt.Errorf("%d runs against %d: pairs need one of each per seed", len(a), len(b))
	}
	var xs []float64
	for i := range a {
		x, ok1 := SummaryMetric(a[i], metric)
		y, ok2 := SummaryMetric(b[i], metric)
		if !ok1 || !ok2 {
			return CI{}, fmt.Errorf("no metric %q", metric)
		}
		if y == 0 {
			return CI{}, fmt.Errorf("pair %d: %s of the baseline is 0", i, metric)
		}
		switch kind {
		case "reduction":
			xs = append(xs, (1-x/y)*100)
		case "ratio":
			xs = append(xs, x/y)
		default:
			return CI{}, fmt.Errorf("kind %q: want reduction or ratio", kind)
		}
	}
	return MeanCI(xs, Level), nil
}
