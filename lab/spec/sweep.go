package spec

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabriclab/fabriclab/bounded"
)

// A Setting gives the spec field at Path (dotted: workload.0.load, switch.ecn.kmin; workload[0].load
// also reads) the YAML value Value.
type Setting struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// An Axis is one swept field and its values, in order.
type Axis struct {
	Path   string
	Values []string
}

// Point is one run of an expanded spec: its sweep settings (in axis order), its seed and the spec
// with both applied, decoded, defaulted and validated like any spec file.
type Point struct {
	Set  []Setting
	Seed int64
	Spec *Spec
}

// Label names the point's settings as "path=value,path=value" ("" without a sweep).
func (p Point) Label() string {
	parts := make([]string, len(p.Set))
	for i, s := range p.Set {
		parts[i] = s.Path + "=" + s.Value
	}
	return strings.Join(parts, ",")
}

// ParseSet reads a command-line sweep: "path=v1,v2,v3" (commas inside [] or {} belong to a value, so
// "workload.0.hosts=[h0,h1],[h2,h3]" is two values).
func ParseSet(arg string) (Axis, error) {
	path, vals, ok := strings.Cut(arg, "=")
	path = strings.TrimSpace(path)
	if !ok || path == "" {
		return Axis{}, fmt.Errorf("--set %q: want path=value[,value...], e.g. workload.0.load=0.3,0.5", arg)
	}
	if path == "name" {
		// A run tree's runs are named by the tree (its spec's name and sweep point); a swept name
		// would be ignored by every run.
		return Axis{}, fmt.Errorf("--set %q: the name is not swept: a tree's runs keep their spec's name (give each tree its own -o, or edit name: in the spec)", arg)
	}
	a := Axis{Path: path}
	depth, start := 0, 0
	for i := 0; i <= len(vals); i++ {
		if i < len(vals) {
			switch vals[i] {
			case '[', '{':
				depth++
			case ']', '}':
				depth--
			}
			if vals[i] != ',' || depth > 0 {
				continue
			}
		}
		v := strings.TrimSpace(vals[start:i])
		if v == "" {
			return Axis{}, fmt.Errorf("--set %q: empty value", arg)
		}
		a.Values = append(a.Values, v)
		start = i + 1
	}
	return a, nil
}

// ParseSets reads every --set of a command line. A path given twice is refused naming it (the later
// --set silently replaced the earlier one), and so is a value given twice on one axis (both runs would
// write the same directory).
func ParseSets(args []string) ([]Axis, error) {
	var axes []Axis
	first := map[string]string{}
	for _, arg := range args {
		a, err := ParseSet(arg)
		if err != nil {
			return nil, err
		}
		p := normPath(a.Path)
		if prev, dup := first[p]; dup {
			return nil, fmt.Errorf("--set %s: path %s is already swept by --set %s; give each path once, with all its values (--set %s=v1,v2,...)", arg, a.Path, prev, a.Path)
		}
		first[p] = arg
		seen := map[string]bool{}
		for _, v := range a.Values {
			if seen[v] {
				return nil, fmt.Errorf("--set %s: value %q given twice", arg, v)
			}
			seen[v] = true
		}
		axes = append(axes, a)
	}
	return axes, nil
}

// Expand reads the spec file at path and returns its runs: one per combination of sweep values (the
// spec's sweep: block, then the axes given, which replace a spec axis of the same path; the first axis
// varies slowest) and per seed (seeds > 0 replaces the spec's seeds:). Every run is checked before
// Expand returns, so a bad value fails before anything runs; an error names the run's settings. It
// holds every run's spec at once: Plan counts the runs first and makes them one at a time.
func Expand(path string, axes []Axis, seeds int) ([]Point, error) {
	e, err := Plan(path, axes, seeds)
	if err != nil {
		return nil, err
	}
	return e.all()
}

// ExpandData is Expand on a spec's text (suites that write specs in Go strings); relative file paths
// in it are relative to dir.
func ExpandData(data []byte, dir string, axes []Axis, seeds int) ([]Point, error) {
	e, err := PlanData(data, dir, axes, seeds)
	if err != nil {
		return nil, err
	}
	return e.all()
}

// An Expansion is a spec file's runs before any is made: its axes and seeds, so the runs can be
// counted without expanding them and any one made by its index (the first axis varies slowest, the
// seed fastest). Nothing in it grows with the number of runs.
type Expansion struct {
	Path string // the spec file (errors name it)
	Base *Spec  // the file as written, without sweep and seeds applied
	Axes []Axis // the sweep axes, seed excluded
	root *yaml.Node
	// The seeds: seedN of them from seedFrom on, or seedList when seed is swept.
	seedFrom int64
	seedN    int64
	seedList []int64
}

// Plan reads the spec file at path and plans its runs as Expand would, without making any.
func Plan(path string, axes []Axis, seeds int) (*Expansion, error) {
	base, err := Load(path)
	if err != nil {
		return nil, err
	}
	data, err := bounded.ReadFile(path, bounded.Spec)
	if err != nil {
		return nil, err
	}
	return plan(data, path, base, axes, seeds)
}

// PlanData is Plan on a spec's text; relative file paths in it are relative to dir.
func PlanData(data []byte, dir string, axes []Axis, seeds int) (*Expansion, error) {
	base, err := Parse(data)
	if err != nil {
		return nil, err
	}
	resolvePaths(base, dir)
	return plan(data, filepath.Join(dir, "spec"), base, axes, seeds)
}

func plan(data []byte, path string, base *Spec, axes []Axis, seeds int) (*Expansion, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	root := doc.Content[0]
	dropKey(root, "sweep")
	dropKey(root, "seeds")

	var all []Axis
	for _, p := range sortedKeys(base.Sweep) {
		all = append(all, Axis{Path: p, Values: base.Sweep[p]})
	}
	for _, a := range axes {
		replaced := false
		for i := range all {
			if normPath(all[i].Path) == normPath(a.Path) {
				all[i], replaced = a, true
			}
		}
		if !replaced {
			all = append(all, a)
		}
	}
	if seeds <= 0 {
		seeds = base.Seeds
	}
	if seeds <= 0 {
		seeds = 1
	}
	// The seeds: base.Seed (defaulted: never 0) onwards, or a swept seed's values. They are counted,
	// not listed: --seeds 1000000000 listed them all and ran out of memory.
	e := &Expansion{Path: path, Base: base, root: root, seedFrom: base.Seed, seedN: int64(seeds)}
	if base.Seed > math.MaxInt64-e.seedN {
		return nil, fmt.Errorf("%s: seeds %d from seed %d pass the largest seed, %d", path, seeds, base.Seed, int64(math.MaxInt64))
	}
	for i, a := range all {
		if normPath(a.Path) != "seed" {
			continue
		}
		if seeds > 1 {
			return nil, fmt.Errorf("%s: seed is swept (%s) and %d seeds are asked for: use one of them", path, strings.Join(a.Values, ","), seeds)
		}
		e.seedList = nil
		for _, v := range a.Values {
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil || x <= 0 {
				return nil, fmt.Errorf("%s: seed=%s: want a positive integer", path, v)
			}
			e.seedList = append(e.seedList, x)
		}
		e.seedN = int64(len(e.seedList))
		all = append(all[:i:i], all[i+1:]...)
		break
	}
	e.Axes = all
	return e, nil
}

// Count is how many runs the expansion makes: the product of the axes' sizes and the seeds, saturating
// at math.MaxInt64 rather than overflowing.
func (e *Expansion) Count() int64 {
	n := e.seedN
	for _, a := range e.Axes {
		n = MulCount(n, int64(len(a.Values)))
	}
	return n
}

// Seeds is how many seeds each sweep point runs.
func (e *Expansion) Seeds() int64 { return e.seedN }

// MulCount is a*b for counts (>= 0), saturating at math.MaxInt64.
func MulCount(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// Setting returns run i's sweep settings (in axis order) and seed, without making its spec; i is in
// [0, Count()).
func (e *Expansion) Setting(i int64) ([]Setting, int64) {
	var seed int64
	if e.seedList != nil {
		seed = e.seedList[i%e.seedN]
	} else {
		seed = e.seedFrom + i%e.seedN
	}
	i /= e.seedN
	set := make([]Setting, len(e.Axes))
	for k := len(e.Axes) - 1; k >= 0; k-- {
		n := int64(len(e.Axes[k].Values))
		set[k] = Setting{Path: e.Axes[k].Path, Value: e.Axes[k].Values[i%n]}
		i /= n
	}
	return set, seed
}

// Point makes run i: its settings and seed applied to the file, decoded, defaulted and validated like
// any spec file. An error names the run's settings.
func (e *Expansion) Point(i int64) (Point, error) {
	set, seed := e.Setting(i)
	pt := Point{Set: set, Seed: seed}
	s, err := pointSpec(e.root, e.Path, pt, e.Base.Name)
	if err != nil {
		what := "seed " + strconv.FormatInt(pt.Seed, 10)
		if l := pt.Label(); l != "" {
			what = l + ", " + what
		}
		var lines []string
		for _, line := range strings.Split(err.Error(), "\n") {
			lines = append(lines, fmt.Sprintf("%s (%s): %s", e.Path, what, line))
		}
		return pt, fmt.Errorf("%s", strings.Join(lines, "\n"))
	}
	pt.Spec = s
	return pt, nil
}

// all makes every run (Expand).
func (e *Expansion) all() ([]Point, error) {
	var points []Point
	var errs []string
	for i, n := int64(0), e.Count(); i < n; i++ {
		pt, err := e.Point(i)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		points = append(points, pt)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return points, nil
}

// pointSpec applies a point's settings and seed to a copy of the document and decodes it as a spec
// file, so every field keeps its own parsing and validation.
func pointSpec(root *yaml.Node, file string, pt Point, name string) (*Spec, error) {
	doc := cloneNode(root)
	for _, st := range pt.Set {
		var v yaml.Node
		if err := yaml.Unmarshal([]byte(st.Value), &v); err != nil || len(v.Content) == 0 {
			return nil, fmt.Errorf("%s: value %q is not YAML", st.Path, st.Value)
		}
		if err := setPath(doc, st.Path, v.Content[0]); err != nil {
			return nil, err
		}
	}
	if err := setPath(doc, "seed", &yaml.Node{Kind: yaml.ScalarNode, Value: strconv.FormatInt(pt.Seed, 10)}); err != nil {
		return nil, err
	}
	if err := setPath(doc, "name", &yaml.Node{Kind: yaml.ScalarNode, Value: name, Style: yaml.DoubleQuotedStyle}); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	s, errs := decode(b.Bytes())
	if s != nil {
		resolvePaths(s, filepath.Dir(file))
	}
	// Lines point into the rewritten document, not the file: leave them out.
	if s != nil {
		s.lines = nil
	}
	return finish(s, errs, "")
}

// normPath writes workload[0].load as workload.0.load.
func normPath(p string) string {
	p = strings.ReplaceAll(p, "[", ".")
	p = strings.ReplaceAll(p, "]", "")
	return strings.Trim(p, ".")
}

// setPath puts v at the dotted path under a mapping, creating missing mapping keys (a field the file
// leaves to its default) but never list entries.
func setPath(n *yaml.Node, path string, v *yaml.Node) error {
	parts := strings.Split(normPath(path), ".")
	for i, key := range parts {
		where := strings.Join(parts[:i+1], ".")
		last := i == len(parts)-1
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == key {
					next = n.Content[j+1]
					if last {
						n.Content[j+1] = v
					}
				}
			}
			if last {
				if next == nil {
					n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
				}
				return nil
			}
			if next == nil || (next.Kind == yaml.ScalarNode && next.Tag == "!!null") {
				next = &yaml.Node{Kind: yaml.MappingNode}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, next)
			}
			n = next
		case yaml.SequenceNode:
			idx, err := strconv.Atoi(key)
			if err != nil || idx < 0 || idx >= len(n.Content) {
				return fmt.Errorf("%s: %s has %d entries, want an index 0..%d", where, strings.Join(parts[:i], "."), len(n.Content), len(n.Content)-1)
			}
			if last {
				n.Content[idx] = v
				return nil
			}
			n = n.Content[idx]
		default:
			return fmt.Errorf("%s: %s is a single value, it has no fields", where, strings.Join(parts[:i], "."))
		}
	}
	return nil
}

func dropKey(m *yaml.Node, key string) {
	for j := 0; j+1 < len(m.Content); j += 2 {
		if m.Content[j].Value == key {
			m.Content = append(m.Content[:j], m.Content[j+2:]...)
			return
		}
	}
}

func cloneNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = cloneNode(x)
	}
	if n.Alias != nil {
		c.Alias = cloneNode(n.Alias)
	}
	return &c
}

func (s *Spec) validateSweep(c *checker) {
	if s.Seeds < 0 {
		c.add("seeds", "%d: want how many seeds to run (1 or more)", s.Seeds)
	}
	for _, k := range sortedKeys(s.Sweep) {
		f := "sweep." + k
		switch p := normPath(k); {
		case p == "seed" && s.Seeds > 1:
			c.add(f, "sweeps seed while seeds: also asks for seeds; use one of them")
		case p == "sweep" || p == "seeds" || strings.HasPrefix(p, "sweep.") || p == "name":
			c.add(f, "cannot be swept")
		}
		if len(s.Sweep[k]) == 0 {
			c.add(f, "required: the values to sweep, e.g. [0.3, 0.5, 0.7]")
		}
		seen := map[string]bool{}
		for _, v := range s.Sweep[k] {
			if seen[v] {
				c.add(f, "value %q given twice", v)
			}
			seen[v] = true
		}
	}
}
