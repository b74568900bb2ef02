package topo

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/units"
)

// ParamError is a bad, missing or unknown topology parameter. Spec validation and the CLI surface it
// as is; Param lets callers map it back to the field a user typed.
type ParamError struct {
	Family string
	Param  string
	Value  string // as given; empty when the parameter is missing or the error concerns a combination
	Reason string
}

func (e *ParamError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s: %s", e.Family, e.Param, e.Reason)
	}
	return fmt.Sprintf("%s: %s=%s: %s", e.Family, e.Param, e.Value, e.Reason)
}

// paramSpec declares one key a family accepts. required keys have no default; optional keys with an
// empty default are simply absent from the resolved params when not given.
type paramSpec struct {
	name     string
	def      string
	required bool
}

type family struct {
	keys  []paramSpec
	build func(p *params) (*Graph, error)
}

// Keys every family takes: the link rate and propagation delay of links the family does not
// otherwise specify.
var commonKeys = []paramSpec{{name: "rate", def: "100Gbps"}, {name: "delay", def: "1us"}}

// Keys of families whose hosts hang off switches.
var attachKeys = []paramSpec{{name: "hosts_per_switch", def: "1"}, {name: "hosts"}, {name: "server_links", def: "true"}}

var families = map[string]family{}

func register(name string, keys []paramSpec, build func(p *params) (*Graph, error)) {
	all := append(append([]paramSpec{}, keys...), commonKeys...)
	families[name] = family{keys: all, build: build}
}

// Families lists the family names Build accepts, sorted.
func Families() []string {
	out := make([]string, 0, len(families))
	for n := range families {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// FamilyKeys lists the parameter keys a family accepts, sorted, or nil for an unknown family.
func FamilyKeys(name string) []string {
	f, ok := families[name]
	if !ok {
		return nil
	}
	out := make([]string, 0, len(f.keys))
	for _, k := range f.keys {
		out = append(out, k.name)
	}
	sort.Strings(out)
	return out
}

// Build makes a topology of the named family from string parameters as typed on the command line
// ({"n":"4","k":"1"}). Every family accepts rate (default 100Gbps) and delay (default 1us). Unknown
// keys, missing required keys and impossible values are *ParamError naming the key. The returned graph's
// Params hold every resolved parameter, defaults included, so a graph describes itself.
func Build(name string, in map[string]string) (*Graph, error) { return BuildWithin(name, in, 0) }

// BuildWithin is Build refusing a topology of more than maxDevices hosts and switches: by its
// parameters before it is built when the family has an estimator (budget.go), else when the builder
// reaches the limit (never more than maxDevices nodes allocated). maxDevices <= 0: no limit beyond the
// builders' own.
func BuildWithin(name string, in map[string]string, maxDevices int) (g *Graph, err error) {
	f, ok := families[name]
	if !ok {
		return nil, fmt.Errorf("unknown topology family %q (families: %s)", name, strings.Join(Families(), ", "))
	}
	valid := map[string]paramSpec{}
	for _, k := range f.keys {
		valid[k.name] = k
	}
	// Sorted so the first error reported does not depend on map order.
	given := make([]string, 0, len(in))
	for k := range in {
		given = append(given, k)
	}
	sort.Strings(given)
	for _, k := range given {
		if _, ok := valid[k]; !ok {
			return nil, &ParamError{Family: name, Param: k, Value: in[k],
				Reason: "unknown parameter (valid: " + strings.Join(FamilyKeys(name), ", ") + ")"}
		}
	}
	resolved := map[string]string{}
	for _, k := range f.keys {
		v, ok := in[k.name]
		v = strings.TrimSpace(v)
		switch {
		case ok && v != "":
			resolved[k.name] = v
		case k.required:
			return nil, &ParamError{Family: name, Param: k.name,
				Reason: "required (valid keys: " + strings.Join(FamilyKeys(name), ", ") + ")"}
		case k.def != "":
			resolved[k.name] = k.def
		}
	}
	p := &params{family: name, m: resolved, given: map[string]bool{}}
	for _, k := range given {
		p.given[k] = true
	}
	rate, err := p.rate("rate")
	if err != nil {
		return nil, err
	}
	delay, err := p.time("delay")
	if err != nil {
		return nil, err
	}
	p.rateBps, p.delay = rate, delay
	if err := checkDevices(p, maxDevices); err != nil {
		return nil, err
	}
	p.maxDevices = maxDevices
	defer recoverTooMany(name, &err)
	g, err = f.build(p)
	if err != nil {
		return nil, err
	}
	if p.has("server_links") {
		on, err := p.bool("server_links")
		if err != nil {
			return nil, err
		}
		if !on {
			withoutServerLinks(g)
		}
	}
	if g.Params == nil {
		g.Params = resolved
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("%s: builder produced an invalid graph (a bug): %w", name, err)
	}
	return g, nil
}

// withoutServerLinks is the expander thesis' "without server up-links" mode (§4.3, ProjecToR panels
// a/b): the ToR itself is the traffic endpoint, so a host's link must never bind. Each host link runs
// at its switch's whole fabric capacity (the sum of its switch-to-switch link rates), which no traffic
// through that switch can exceed; the hosts stand for the ToR's endpoint.
func withoutServerLinks(g *Graph) {
	for i := range g.Links {
		l := &g.Links[i]
		h, s := l.A.Node, l.B.Node
		if g.Nodes[h].Kind != Host {
			h, s = s, h
		}
		if g.Nodes[h].Kind != Host || g.Nodes[s].Kind != Switch {
			continue
		}
		var fabric float64
		for _, li := range g.Nodes[s].Ports {
			o := g.Links[li]
			if g.Nodes[o.A.Node].Kind == Switch && g.Nodes[o.B.Node].Kind == Switch {
				fabric += o.RateBps
			}
		}
		if fabric > l.RateBps {
			l.RateBps = fabric
		}
	}
}

// MustBuild is Build for tests and examples, with parameters written "key=value".
func MustBuild(name string, kv ...string) *Graph {
	m, err := ParseParams(kv)
	if err != nil {
		panic(err)
	}
	g, err := Build(name, m)
	if err != nil {
		panic(err)
	}
	return g
}

// ParseParams turns "key=value" words into a parameter map; a word without '=' or a repeated key is an
// error, because silently keeping one of two values hides typos.
func ParseParams(words []string) (map[string]string, error) {
	m := map[string]string{}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("parameter %q: want key=value", w)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("parameter %s given twice", k)
		}
		m[k] = v
	}
	return m, nil
}

// params is a family's resolved parameters with typed accessors whose errors name the key.
type params struct {
	family  string
	m       map[string]string
	given   map[string]bool // keys the caller set, as opposed to defaults
	rateBps float64
	delay   clock.Time
	// maxDevices stops the builder past this many nodes (0: no limit), BuildWithin's backstop.
	maxDevices int
}

func (p *params) errf(key, format string, a ...any) error {
	return &ParamError{Family: p.family, Param: key, Value: p.m[key], Reason: fmt.Sprintf(format, a...)}
}

func (p *params) has(key string) bool { _, ok := p.m[key]; return ok }

// int parses key as an integer no smaller than min.
func (p *params) int(key string, min int) (int, error) {
	v, err := strconv.Atoi(p.m[key])
	if err != nil {
		return 0, p.errf(key, "want an integer")
	}
	if v < min {
		return 0, p.errf(key, "must be at least %d", min)
	}
	return v, nil
}

func (p *params) float(key string) (float64, error) {
	v, err := strconv.ParseFloat(p.m[key], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, p.errf(key, "want a finite number")
	}
	return v, nil
}

func (p *params) bool(key string) (bool, error) {
	if !p.has(key) {
		return false, nil
	}
	v, err := strconv.ParseBool(p.m[key])
	if err != nil {
		return false, p.errf(key, "want true or false")
	}
	return v, nil
}

func (p *params) rate(key string) (float64, error) {
	v, err := units.ParseRate(p.m[key])
	if err != nil {
		return 0, p.errf(key, "%v", err)
	}
	return v, nil
}

func (p *params) time(key string) (clock.Time, error) {
	v, err := units.ParseTime(p.m[key])
	if err != nil {
		return 0, p.errf(key, "%v", err)
	}
	return v, nil
}

func (p *params) seed(key string) (uint64, error) {
	v, err := strconv.ParseInt(p.m[key], 10, 64)
	if err != nil {
		return 0, p.errf(key, "want an integer")
	}
	return uint64(v), nil
}

func (p *params) builder() *Builder {
	b := NewBuilder(p.family, p.m, p.rateBps, p.delay)
	b.limit = p.maxDevices
	return b
}

// maxNodes bounds what a builder will allocate: far beyond anything a namespace lab or the virtual
// backend runs, but small enough that a typo (n=1000 k=3) fails fast instead of exhausting memory.
const maxNodes = 1 << 21

// hostCounts resolves hosts_per_switch / hosts for switch-centric families: per-switch host counts, the
// extra hosts of an uneven split going to the lowest-numbered switches.
func (p *params) hostCounts(switches int) ([]int, error) {
	counts := make([]int, switches)
	if p.has("hosts") {
		if p.given["hosts_per_switch"] {
			return nil, p.errf("hosts", "give hosts or hosts_per_switch, not both")
		}
		total, err := p.int("hosts", 0)
		if err != nil {
			return nil, err
		}
		if total > maxNodes {
			return nil, p.errf("hosts", "more than %d hosts", maxNodes)
		}
		// hosts_per_switch keeps its default in Params otherwise, which would contradict hosts.
		delete(p.m, "hosts_per_switch")
		for i := range counts {
			counts[i] = total / switches
			if i < total%switches {
				counts[i]++
			}
		}
		return counts, nil
	}
	per, err := p.int("hosts_per_switch", 0)
	if err != nil {
		return nil, err
	}
	if per*switches > maxNodes {
		return nil, p.errf("hosts_per_switch", "more than %d hosts in all", maxNodes)
	}
	for i := range counts {
		counts[i] = per
	}
	return counts, nil
}

// attachHosts adds counts[i] hosts to switch sw[i], in switch order, so host numbering follows switch
// numbering and each switch's host ports come before its fabric ports (callers attach hosts first).
func (b *Builder) attachHosts(sw []int, counts []int) {
	for i, s := range sw {
		for j := 0; j < counts[i]; j++ {
			h := b.AddHost()
			b.G.Nodes[h].Group = b.G.Nodes[s].Group
			b.ConnectWith(h, s, b.RateBps, b.Delay, "host")
		}
	}
}
