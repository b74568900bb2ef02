package route

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// Router is a routing algorithm bound to one topology: the spec's `routing: {algorithm: NAME, ...}`.
// Algorithms differ in how they choose among paths (ECMP hash, k shortest, Valiant, adaptive...), but all
// can say which paths they would use for a pair, which is what source routing, pinning, the deadlock
// analysis and the LP bound need.
type Router interface {
	// Name is the registry name.
	Name() string
	// Paths returns the candidate paths from host src to host dst, preferred first. Paths[0] is what a
	// flow takes when nothing else (entropy, telemetry) decides.
	Paths(src, dst int) ([]Path, error)
}

// Forwarder is implemented by routers that also yield per-destination forwarding tables (for switches
// that forward by table rather than by source route).
type Forwarder interface {
	Tables() *Tables
}

// Every registered algorithm's router implements Router; shortest's also implements Forwarder, the
// Dragonfly routers Adaptive, VLB FlowRouter.
var (
	_ Router     = (*shortestRouter)(nil)
	_ Router     = (*bcubeRouter)(nil)
	_ Router     = (*switchRouter)(nil)
	_ Router     = (*DFKSP)(nil)
	_ Router     = (*ATE)(nil)
	_ Router     = freeRouter{}
	_ Router     = minimalRouter{}
	_ Forwarder  = (*shortestRouter)(nil)
	_ Adaptive   = (*Dragonfly)(nil)
	_ FlowRouter = (*VLB)(nil)
)

// Factory binds an algorithm to a topology. params are the spec's routing keys other than `algorithm`;
// a factory rejects keys it does not know, naming them.
type Factory func(g *topo.Graph, params map[string]string) (Router, error)

var (
	regMu    sync.RWMutex
	registry = map[string]Factory{}
)

// Register adds an algorithm. Later issues add ksp, dfksp, updown, vlb, ugal, ... here by name; a
// duplicate name is a programming error and panics.
func Register(name string, f Factory) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("route: algorithm " + name + " registered twice")
	}
	registry[name] = f
}

// Names lists the registered algorithms, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	ns := make([]string, 0, len(registry))
	for n := range registry {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// New binds the named algorithm to g.
func New(name string, g *topo.Graph, params map[string]string) (Router, error) {
	regMu.RLock()
	f, ok := registry[name]
	regMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("routing algorithm %q is not known (known: %s)", name, strings.Join(Names(), ", "))
	}
	return f(g, params)
}

// CheckParams rejects keys outside allowed, naming the first unknown one (sorted, for stable messages).
func CheckParams(alg string, params map[string]string, allowed ...string) error {
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !ok[k] {
			if len(allowed) == 0 {
				return fmt.Errorf("routing %s: unknown key %q (it takes none)", alg, k)
			}
			return fmt.Errorf("routing %s: unknown key %q (known: %s)", alg, k, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// IntParam reads a positive integer parameter with a default.
func IntParam(alg string, params map[string]string, key string, def int) (int, error) {
	s, ok := params[key]
	if !ok {
		return def, nil
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("routing %s: %s=%q, want a positive integer", alg, key, s)
	}
	return v, nil
}

func init() {
	Register("shortest", newShortest)
	Register("bcube", newBCube)
}

// shortestRouter is ECMP over all shortest paths.
type shortestRouter struct {
	g        *topo.Graph
	t        *Tables
	maxPaths int
}

// DefaultMaxPaths caps how many shortest paths `shortest` lists per pair: fat-trees have (k/2)^2 between
// pods, and listing them all for every pair is quadratic in hosts.
const DefaultMaxPaths = 64

func newShortest(g *topo.Graph, params map[string]string) (Router, error) {
	if err := CheckParams("shortest", params, "max_paths"); err != nil {
		return nil, err
	}
	mp, err := IntParam("shortest", params, "max_paths", DefaultMaxPaths)
	if err != nil {
		return nil, err
	}
	t, err := Shortest(g)
	if err != nil {
		return nil, err
	}
	return &shortestRouter{g: g, t: t, maxPaths: mp}, nil
}

func (r *shortestRouter) Name() string    { return "shortest" }
func (r *shortestRouter) Tables() *Tables { return r.t }
func (r *shortestRouter) Paths(src, dst int) ([]Path, error) {
	return r.t.Paths(r.g, src, dst, r.maxPaths)
}

// bcubeRouter is digit correction: the lowest-layer-first path, then the rest of BCube's parallel set.
type bcubeRouter struct{ g *topo.Graph }

func newBCube(g *topo.Graph, params map[string]string) (Router, error) {
	if err := CheckParams("bcube", params); err != nil {
		return nil, err
	}
	for _, h := range g.Hosts {
		if len(g.Nodes[h].Addr) == 0 {
			return nil, fmt.Errorf("routing bcube needs an NDC/BCube topology; %s has no BCube address (family %s)", g.Nodes[h].Name, g.Family)
		}
	}
	return &bcubeRouter{g: g}, nil
}

func (r *bcubeRouter) Name() string { return "bcube" }

// Paths puts the lowest-layer-first path first (the harness default), then BCube's
// parallel paths not already listed, shortest first.
func (r *bcubeRouter) Paths(src, dst int) ([]Path, error) {
	first, err := BCubePath(r.g, src, dst, nil)
	if err != nil {
		return nil, err
	}
	par, err := BCubePaths(r.g, src, dst)
	if err != nil {
		return nil, err
	}
	out := []Path{first}
	for _, p := range par {
		if !p.Equal(first) {
			out = append(out, p)
		}
	}
	SortByHops(out)
	return out, nil
}
