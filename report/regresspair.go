package report

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabriclab/fabriclab/bounded"
)

// groupPair is a BASE group and the NEW group it is compared with.
type groupPair struct{ b, n *Group }

// pairGroups pairs BASE's groups with NEW's: first the explicit pairs (--pair), then groups with the
// same label (spec name and sweep point), then, across a changed setting, the one remaining group of a
// spec name on each side (BASE run as the spec is, NEW with --set switch.xoff=12bdp: one point per
// spec on each side). A BASE group left without a partner is missing from NEW (rg.Missing); a NEW
// group left over is noted (rg.OnlyIn). Each pair across a setting is described in rg.Pairs.
func pairGroups(base, new *Tree, explicit [][2]string, rg *Regression) ([]groupPair, error) {
	usedB, usedN := map[*Group]bool{}, map[*Group]bool{}
	var pairs []groupPair
	add := func(b, n *Group) {
		usedB[b], usedN[n] = true, true
		pairs = append(pairs, groupPair{b, n})
		if b.Label() != n.Label() {
			rg.Pairs = append(rg.Pairs, fmt.Sprintf("%s ~ %s: %s", b.Label(), n.Label(), settingDiff(b, n)))
		}
	}
	for _, e := range explicit {
		b, err := findGroup(base, e[0], "BASE")
		if err != nil {
			return nil, err
		}
		n, err := findGroup(new, e[1], "NEW")
		if err != nil {
			return nil, err
		}
		if usedB[b] || usedN[n] {
			return nil, PairError{fmt.Errorf("--pair %s=%s: %s is already paired by an earlier --pair (each group pairs once)", e[0], e[1], alreadyPaired(usedB[b], e[0], e[1]))}
		}
		add(b, n)
	}
	newBy := map[string]*Group{}
	for _, g := range new.Groups {
		if !usedN[g] {
			newBy[g.Label()] = g
		}
	}
	for _, b := range base.Groups {
		if n, ok := newBy[b.Label()]; ok && !usedB[b] {
			add(b, n)
		}
	}
	// Across a changed setting: the one unpaired group of a spec name on each side, when the spec has
	// one group per side in all (several points per spec would pair by guess: --pair says which).
	count := func(t *Tree, name string) int {
		k := 0
		for _, g := range t.Groups {
			if g.Name == name {
				k++
			}
		}
		return k
	}
	for _, b := range base.Groups {
		if usedB[b] || count(base, b.Name) != 1 || count(new, b.Name) != 1 {
			continue
		}
		for _, n := range new.Groups {
			if n.Name == b.Name && !usedN[n] {
				add(b, n)
			}
		}
	}
	for _, b := range base.Groups {
		if !usedB[b] {
			rg.Missing = append(rg.Missing, fmt.Sprintf("BASE %s (%d runs) has no counterpart in NEW (pair a changed setting with --pair)", b.Label(), len(b.Runs)))
		}
	}
	for _, n := range new.Groups {
		if !usedN[n] {
			rg.OnlyIn = append(rg.OnlyIn, "NEW only: "+n.Label())
		}
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("no spec is in both trees (%s)", strings.Join(append(append([]string(nil), rg.Missing...), rg.OnlyIn...), "; "))
	}
	return pairs, nil
}

// PairError is a --pair that cannot be honoured as given (a group paired twice): the command line is
// wrong, not the trees, so lab compare exits with its usage status rather than "cannot decide".
type PairError struct{ Err error }

func (e PairError) Error() string { return e.Err.Error() }
func (e PairError) Unwrap() error { return e.Err }

func alreadyPaired(base bool, a, b string) string {
	if base {
		return "BASE group " + strconv.Quote(a)
	}
	return "NEW group " + strconv.Quote(b)
}

// findGroup finds the group a --pair side names: its label, or a spec name with one group in the tree.
func findGroup(t *Tree, name, side string) (*Group, error) {
	var byName []*Group
	for _, g := range t.Groups {
		if g.Label() == name {
			return g, nil
		}
		if g.Name == name {
			byName = append(byName, g)
		}
	}
	if len(byName) == 1 {
		return byName[0], nil
	}
	var labels []string
	for _, g := range t.Groups {
		labels = append(labels, strconv.Quote(g.Label()))
	}
	if len(byName) > 1 {
		return nil, fmt.Errorf("--pair: %s has %d groups of spec %s: name one by its label (%s)", side, len(byName), name, strings.Join(labels, ", "))
	}
	return nil, fmt.Errorf("--pair: %s has no group %q (groups: %s)", side, name, strings.Join(labels, ", "))
}

// SplitPair splits a --pair value A=B, where A and B may themselves contain '=' (a group label
// "pfcstar switch.xoff=12bdp"): the split is the one '=' at which A names a BASE group and B a NEW
// group (findGroup), or, when none does, the first.
func SplitPair(v string, base, new *Tree) ([2]string, error) {
	var found [][2]string
	for i := 0; i < len(v); i++ {
		if v[i] != '=' || i == 0 || i == len(v)-1 {
			continue
		}
		a, b := v[:i], v[i+1:]
		if _, err := findGroup(base, a, "BASE"); err != nil {
			continue
		}
		if _, err := findGroup(new, b, "NEW"); err != nil {
			continue
		}
		found = append(found, [2]string{a, b})
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		a, b, ok := strings.Cut(v, "=")
		if !ok || a == "" || b == "" {
			return [2]string{}, fmt.Errorf("--pair %q: want BASE=NEW, each a spec name or a group label", v)
		}
		if _, err := findGroup(base, a, "BASE"); err != nil {
			return [2]string{}, err
		}
		_, err := findGroup(new, b, "NEW")
		return [2]string{}, err
	}
	return [2]string{}, fmt.Errorf("--pair %q splits into BASE=NEW groups in %d ways", v, len(found))
}

// settingDiff says how two paired groups' settings differ, path by path: "switch.xoff 6bdp -> 12bdp".
// A path set on one side only takes the other side's value from its first run's resolved spec.yaml.
func settingDiff(b, n *Group) string {
	paths := map[string]bool{}
	for _, s := range append(append([]Setting(nil), b.Set...), n.Set...) {
		paths[s.Path] = true
	}
	var keys []string
	for p := range paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	var parts []string
	for _, p := range keys {
		bv, nv := b.Value(p), n.Value(p)
		if bv == nv {
			continue
		}
		if bv == "" {
			bv = specValue(b, p)
		}
		if nv == "" {
			nv = specValue(n, p)
		}
		parts = append(parts, fmt.Sprintf("%s %s -> %s", p, bv, nv))
	}
	if b.Name != n.Name {
		parts = append([]string{fmt.Sprintf("spec %s -> %s", b.Name, n.Name)}, parts...)
	}
	if len(parts) == 0 {
		return "the same settings"
	}
	return strings.Join(parts, ", ")
}

// specValue is a field's value, by dotted path (workload.0.load), in a group's first run's resolved
// spec.yaml; "(the spec's)" when it cannot be read.
func specValue(g *Group, path string) string {
	const unknown = "(the spec's)"
	if len(g.Runs) == 0 || g.Runs[0].Dir == "" {
		return unknown
	}
	b, err := bounded.ReadFile(filepath.Join(g.Runs[0].Dir, SpecFile), bounded.Spec)
	if err != nil {
		return unknown
	}
	var v any
	if yaml.Unmarshal(b, &v) != nil {
		return unknown
	}
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return "(unset)"
			}
			v = x[i]
		default:
			return "(unset)"
		}
	}
	if v == nil {
		return "(unset)"
	}
	return fmt.Sprint(v)
}
