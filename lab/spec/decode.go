package spec

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/fabriclab/fabriclab/bounded"
)

// Load reads, decodes, defaults and validates a spec file. Errors carry the file name and line. A
// missing name defaults to the file's base name; relative trace and cdf file paths are made relative
// to the spec's directory, so a spec runs the same from any working directory.
func Load(path string) (*Spec, error) {
	data, err := bounded.ReadFile(path, MaxSpecBytes)
	if err != nil {
		return nil, err
	}
	s, errs := decode(data)
	if s != nil {
		if s.Name == "" {
			s.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		}
		resolvePaths(s, filepath.Dir(path))
	}
	return finish(s, errs, path)
}

// Parse decodes, defaults and validates a spec. Every problem found is reported, as Errors.
func Parse(data []byte) (*Spec, error) {
	s, errs := decode(data)
	return finish(s, errs, "")
}

func finish(s *Spec, errs Errors, file string) (*Spec, error) {
	if s != nil {
		emptyIsAbsent(reflect.ValueOf(s).Elem())
		zeroErrs := s.checkExplicitZeros(false)
		s.ApplyDefaults()
		zeroErrs = append(zeroErrs, s.checkExplicitZeros(true)...)
		s.zeros = nil
		errs = errs.merge(zeroErrs)
		if len(zeroErrs) == 0 {
			errs = errs.merge(s.validate())
		}
	}
	if len(errs) == 0 {
		return s, nil
	}
	for _, e := range errs {
		if e.Line == 0 && s != nil {
			e.Line = s.lineOf(e.Field)
		}
		e.File = file
	}
	errs.sort()
	return nil, errs
}

// emptyIsAbsent makes an empty list or map (`via: []`, `params: {}`) the same as an absent one, as the
// spec's printed form has it (empty values are omitted): otherwise a spec and its own printout, which a
// run directory stores and `lab run` replays, would differ (found by FuzzParse).
func emptyIsAbsent(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			emptyIsAbsent(v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				emptyIsAbsent(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			if !v.IsNil() && v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		}
		for i := 0; i < v.Len(); i++ {
			emptyIsAbsent(v.Index(i))
		}
	case reflect.Map:
		if v.Len() == 0 && !v.IsNil() && v.CanSet() {
			v.Set(reflect.Zero(v.Type()))
		}
	}
}

func resolvePaths(s *Spec, dir string) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	for i := range s.Workload {
		w := &s.Workload[i]
		if w.Kind == "trace" {
			w.Path = abs(w.Path)
		}
		if f, ok := strings.CutPrefix(w.CDF, "file:"); ok {
			w.CDF = "file:" + abs(f)
		}
	}
}

// decoder walks the YAML node tree against the Go types itself (rather than yaml.v3's KnownFields) so
// that it can name the full path of a bad key, suggest the key meant, apply workload kind rules, and
// report every problem rather than the first.
type decoder struct {
	errs  Errors
	lines map[string]int
	// aliased counts values walked through YAML aliases (inside an alias's expansion): they make a
	// small file expand without bound. Values written out in the file are bounded by its size instead
	// (MaxSpecBytes), so a long list of explicit flows is not mistaken for an alias bomb.
	aliased int
	inAlias int // depth of alias expansions around the value being walked
	// zeros are the fields the file sets to zero (0, 0s, 0B, "") or to an empty list, where they are:
	// ApplyDefaults fills zero fields, so finish checks these before and after it (explicit.go).
	zeros []explicitZero
}

// Limits on what a spec may be: far above any real one (the largest in the repo is a few KB and a
// few hundred values). MaxSpecValues bounds the values YAML aliases expand to, low enough that a file
// whose aliases expand without bound is refused in a fraction of a second; written-out values are
// bounded by the file's size and the work budget (flows).
const (
	MaxSpecBytes  = bounded.Spec
	MaxSpecValues = 1 << 16
)

func decode(data []byte) (*Spec, Errors) {
	if len(data) > MaxSpecBytes {
		return nil, Errors{{Msg: fmt.Sprintf("%d bytes is more than %d, the largest spec", len(data), MaxSpecBytes)}}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if err.Error() == "EOF" {
			return nil, Errors{{Msg: "empty spec"}}
		}
		e := &FieldError{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
		// Syntax errors arrive as "yaml: line N: ..."; keep the line where Load can prefix the file.
		if m := syntaxLine.FindStringSubmatch(e.Msg); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = m[2]
		}
		return nil, Errors{e}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, Errors{{Line: extra.Line, Msg: "more than one YAML document; a spec is one"}}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, Errors{{Line: root.Line, Msg: "a spec is a mapping (name:, topology:, ...)"}}
	}
	d := &decoder{lines: map[string]int{}}
	s := &Spec{}
	d.value(root, reflect.ValueOf(s).Elem(), "")
	if d.aliased > MaxSpecValues {
		// What was decoded is a fraction of the file: validating it would only bury the reason.
		for _, e := range d.errs {
			if strings.HasPrefix(e.Msg, "the spec expands") {
				return nil, Errors{e}
			}
		}
	}
	s.lines = d.lines
	s.zeros = d.zeros
	return s, d.errs
}

var syntaxLine = regexp.MustCompile(`^line (\d+): (.*)$`)

func (d *decoder) errf(n *yaml.Node, path, format string, a ...any) {
	d.errs = append(d.errs, &FieldError{Field: path, Line: n.Line, Msg: fmt.Sprintf(format, a...)})
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.AliasNode {
		d.inAlias++
		defer func() { d.inAlias-- }()
		n = n.Alias
	}
	if d.inAlias > 0 {
		if d.aliased++; d.aliased > MaxSpecValues {
			if d.aliased == MaxSpecValues+1 {
				d.errf(n, path, "the spec expands to more than %d values through YAML aliases", MaxSpecValues)
			}
			return
		}
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // "ecn:" with nothing after it: not given
	}
	if v.CanAddr() && v.Addr().Type().Implements(unmarshalerType) {
		if err := v.Addr().Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
			d.errf(n, path, "%v", err)
		} else {
			d.noteZero(n, v, path)
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		d.value(n, p.Elem(), path)
		v.Set(p)
	case reflect.Struct:
		d.structure(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.errf(n, path, "want a list, got a %s", kindName(n))
			return
		}
		if len(n.Content) == 0 {
			d.zeros = append(d.zeros, explicitZero{path: path, line: n.Line, v: v, empty: true})
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.lines[p] = c.Line
			d.value(c, s.Index(i), p)
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.errf(n, path, "want a mapping, got a %s", kindName(n))
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			p := join(path, k.Value)
			if seen[k.Value] {
				d.errf(k, p, "given twice")
				continue
			}
			seen[k.Value] = true
			d.lines[p] = k.Line
			e := reflect.New(v.Type().Elem()).Elem()
			d.value(val, e, p)
			v.SetMapIndex(reflect.ValueOf(k.Value), e)
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.errf(n, path, "want a single value, got a %s", kindName(n))
			return
		}
		v.SetString(n.Value)
		d.noteZero(n, v, path)
	default: // numbers and booleans: yaml.v3's own scalar rules
		if n.Kind != yaml.ScalarNode {
			d.errf(n, path, "want a single value, got a %s", kindName(n))
			return
		}
		// yaml.v3 truncates a float into an integer field (seed: 1.5 ran as seed 1, seeds: 2.5 as 2): a
		// value with a fraction or an exponent is no integer here.
		if isInt(v.Kind()) && n.ShortTag() == "!!float" {
			d.errf(n, path, "%q is not %s", n.Value, wantOf(v.Kind()))
			return
		}
		p := reflect.New(v.Type())
		if err := n.Decode(p.Interface()); err != nil {
			d.errf(n, path, "%q is not %s", n.Value, wantOf(v.Kind()))
			return
		}
		// yaml.v3 reads .nan and .inf as floats; no spec number means them.
		if f := p.Elem(); f.CanFloat() && (math.IsNaN(f.Float()) || math.IsInf(f.Float(), 0)) {
			d.errf(n, path, "%q is not a finite number", n.Value)
			return
		}
		v.Set(p.Elem())
		d.noteZero(n, v, path)
	}
}

func isInt(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func wantOf(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "an integer"
}

func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errf(n, path, "want a mapping (key: value, ...), got a %s", kindName(n))
		return
	}
	fields := fieldsOf(v.Type())
	// A workload's keys depend on its kind, so read the kind first.
	var allowed map[string]bool
	var kind string
	if v.Type() == reflect.TypeFor[Workload]() {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "kind" {
				kind = n.Content[i+1].Value
			}
		}
		if keys, ok := WorkloadFields[kind]; ok {
			allowed = map[string]bool{"kind": true, "name": true}
			for _, k := range keys {
				allowed[k] = true
			}
		}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		p := join(path, k.Value)
		if k.Kind != yaml.ScalarNode {
			d.errf(k, path, "keys must be names")
			continue
		}
		if seen[k.Value] {
			d.errf(k, p, "given twice")
			continue
		}
		seen[k.Value] = true
		d.lines[p] = k.Line
		idx, ok := fields.byName[k.Value]
		if !ok && fields.inline >= 0 {
			// Topology family keys: scalars, kept as typed for the builder.
			if val.Kind != yaml.ScalarNode {
				d.errf(val, p, "want a single value, got a %s", kindName(val))
				continue
			}
			m := v.Field(fields.inline)
			if m.IsNil() {
				m.Set(reflect.MakeMap(m.Type()))
			}
			m.SetMapIndex(reflect.ValueOf(k.Value), reflect.ValueOf(val.Value))
			continue
		}
		if !ok {
			d.errf(k, p, "unknown field%s", suggest(k.Value, fields.names))
			continue
		}
		if allowed != nil && !allowed[k.Value] {
			d.errf(k, p, "not a field of workload kind %s (its fields: %s)", kind, strings.Join(WorkloadFields[kind], ", "))
			continue
		}
		d.value(val, v.Field(idx), p)
	}
}

type fieldTable struct {
	byName map[string]int
	names  []string
	inline int // index of the ",inline" map field, or -1
}

var fieldCache sync.Map // reflect.Type -> *fieldTable

func fieldsOf(t reflect.Type) *fieldTable {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*fieldTable)
	}
	ft := &fieldTable{byName: map[string]int{}, inline: -1}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			ft.inline = i
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		ft.byName[name] = i
		ft.names = append(ft.names, name)
	}
	sort.Strings(ft.names)
	fieldCache.Store(t, ft)
	return ft
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// suggest returns " (did you mean X?)" for the closest candidate within a small edit distance: one
// edit for short words (or every two-letter key would suggest every other one), two for longer ones.
func suggest(word string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(word), c); d < bestD {
			best, bestD = c, d
		}
	}
	limit := 2
	if len(word) <= 4 {
		limit = 1
	}
	if best == "" || bestD > limit {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// editDistance is the optimal-string-alignment distance: insertions, deletions, substitutions and
// transpositions of neighbours ("xfo" for "xof") each cost one.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
