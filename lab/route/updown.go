package route

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// Turn-restricted routings (Fibre Channel paper §3): a routing given as the set of allowed turns
// (arc in -> arc out at a switch) of the buffer dependency graph. up*/down* forbids DOWN then UP; smart
// routing cuts turns greedily until the graph is acyclic. Their paths are every simple path through
// allowed turns, shortest first, capped at max_paths per pair; the LP (lab/bound) balances over them.

// DefaultTurnPaths caps paths per switch pair for turn-restricted routings.
const DefaultTurnPaths = 16

func init() {
	Register("updown", newUpDown)
	Register("smart", newSmart)
}

// Turns is a turn-restricted routing over a fabric. Allowed(x, y) says whether a packet that arrived on
// arc x may leave on arc y (y.From == x.To); first hops are always allowed (injection buffers never
// wait, so they are not in the dependency graph).
type Turns struct {
	F       *Fabric
	Allowed func(x, y Arc) bool
}

// Dist returns the routing distance in trunk hops from switch s to every switch (−1: unreachable), by
// BFS over arc states.
func (t Turns) Dist(s int) []int {
	f := t.F
	d := make([]int, len(f.Sw))
	for i := range d {
		d[i] = -1
	}
	d[s] = 0
	seen := map[Arc]bool{}
	var q []Arc
	depth := map[Arc]int{}
	for _, a := range f.Out[s] {
		seen[a], depth[a] = true, 1
		q = append(q, a)
	}
	for len(q) > 0 {
		x := q[0]
		q = q[1:]
		if d[x.To] < 0 {
			d[x.To] = depth[x]
		}
		for _, y := range f.Out[x.To] {
			if !seen[y] && t.Allowed(x, y) {
				seen[y], depth[y] = true, depth[x]+1
				q = append(q, y)
			}
		}
	}
	return d
}

// PBar is the terminal-weighted average routing distance (Fibre Channel paper §3.3 PBAR), +Inf if some pair
// of switches with terminals cannot reach each other.
func (t Turns) PBar() float64 {
	f := t.F
	var sum, n float64
	for s := range f.Sw {
		n += float64(f.Terminals[s])
		if f.Terminals[s] == 0 {
			continue
		}
		d := t.Dist(s)
		for u, du := range d {
			if f.Terminals[u] == 0 {
				continue
			}
			if du < 0 {
				return math.Inf(1)
			}
			sum += float64(du * f.Terminals[s] * f.Terminals[u])
		}
	}
	return sum / (n * n)
}

// Paths enumerates simple paths from a to b through allowed turns, shortest first, at most limit,
// no longer than the shortest plus slack hops.
func (t Turns) Paths(a, b, limit, slack int) []SwPath {
	f := t.F
	d := t.Dist(a)[b]
	if d < 0 {
		return nil
	}
	var out []SwPath
	visited := make([]bool, len(f.Sw))
	var cur SwPath
	var walk func(u, budget int)
	walk = func(u, budget int) {
		if u == b {
			out = append(out, append(SwPath(nil), cur...))
			return
		}
		if budget == 0 {
			return
		}
		for _, y := range f.Out[u] {
			if visited[y.To] || (len(cur) > 0 && !t.Allowed(cur[len(cur)-1], y)) {
				continue
			}
			visited[y.To] = true
			cur = append(cur, y)
			walk(y.To, budget-1)
			cur = cur[:len(cur)-1]
			visited[y.To] = false
		}
	}
	visited[a] = true
	walk(a, d+slack)
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) < len(out[j]) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// TrialScore scores one randomized trial of updown or smart by the throughput of uniform all-to-all
// traffic over its paths; the best-scoring trial is the routing. The Fibre Channel paper picks by the LP
// (Fibre Channel paper §3.2): lab/bound cannot be imported here (it imports route), so package lab sets
// TrialScore to bound.TrialLP at init; EvenSplitThroughput is what a caller without it gets.
var TrialScore = EvenSplitThroughput

// EvenSplitThroughput scores a routing without an LP: uniform all-to-all traffic split evenly over each
// pair's paths; the throughput is 1 / (most loaded arc's load).
func EvenSplitThroughput(f *Fabric, paths func(a, b int) []SwPath) float64 {
	load := map[int]float64{} // by arc: link*2+direction
	var n float64
	for _, p := range f.Terminals {
		n += float64(p)
	}
	for a := range f.Sw {
		for b := range f.Sw {
			if a == b || f.Terminals[a] == 0 || f.Terminals[b] == 0 {
				continue
			}
			ps := paths(a, b)
			if len(ps) == 0 {
				return 0
			}
			dem := float64(f.Terminals[a]*f.Terminals[b]) / n / float64(len(ps))
			for _, p := range ps {
				for _, x := range p {
					load[x.From*4096+int(x.Port)] += dem
				}
			}
		}
	}
	worst := 0.0
	for _, l := range load {
		worst = max(worst, l)
	}
	if worst == 0 {
		return math.Inf(1)
	}
	return 1 / worst
}

// UpDown is one up*/down* orientation: a root and a tie-breaking switch order.
type UpDown struct {
	Turns
	Root int
	dist []int
	id   []int
}

// NewUpDown orients every arc by (BFS distance from root, id) (Fibre Channel paper §3.2): u→v is UP iff
// v is closer to the root, ties broken by the lower id; a path may never go DOWN then UP.
func NewUpDown(f *Fabric, root int, id []int) *UpDown {
	u := &UpDown{Root: root, id: id}
	u.dist = make([]int, len(f.Sw))
	for i := range u.dist {
		u.dist[i] = -1
	}
	u.dist[root] = 0
	q := []int{root}
	for len(q) > 0 {
		x := q[0]
		q = q[1:]
		for _, a := range f.Out[x] {
			if u.dist[a.To] < 0 {
				u.dist[a.To] = u.dist[x] + 1
				q = append(q, a.To)
			}
		}
	}
	u.Turns = Turns{F: f, Allowed: func(x, y Arc) bool {
		return y.To != x.From && !(!u.Up(x) && u.Up(y))
	}}
	return u
}

// Up reports whether arc a points toward the root.
func (u *UpDown) Up(a Arc) bool {
	dv, du := u.dist[a.To], u.dist[a.From]
	return dv < du || dv == du && u.id[a.To] < u.id[a.From]
}

func turnParams(alg string, params map[string]string, extra ...string) (trials, limit int, seed uint64, err error) {
	if err = CheckParams(alg, params, append([]string{"trials", "seed", "max_paths"}, extra...)...); err != nil {
		return
	}
	if trials, err = IntParam(alg, params, "trials", 10); err != nil {
		return
	}
	if limit, err = IntParam(alg, params, "max_paths", DefaultTurnPaths); err != nil {
		return
	}
	s, err := IntParam(alg, params, "seed", 1)
	return trials, limit, uint64(s), err
}

// UpDownTrials draws n random up*/down* orientations (root and ids uniformly at random), for callers
// that want to pick by their own score (TrialScore).
func UpDownTrials(f *Fabric, seed uint64, n int) []*UpDown {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	out := make([]*UpDown, n)
	for i := range out {
		out[i] = NewUpDown(f, r.IntN(len(f.Sw)), r.Perm(len(f.Sw)))
	}
	return out
}

// TurnRouter wraps a turn-restricted routing as a Router.
func TurnRouter(name string, t Turns, limit int) Router {
	return newSwitchRouter(name, t.F, func(a, b int) ([]SwPath, error) {
		ps := t.Paths(a, b, limit, 2)
		if len(ps) == 0 {
			return nil, fmt.Errorf("routing %s: s%d cannot reach s%d through allowed turns", name, a, b)
		}
		return ps, nil
	})
}

func bestTurns(name string, f *Fabric, cands []Turns, limit int) Router {
	best, bestScore := 0, -1.0
	for i, t := range cands {
		score := TrialScore(f, func(a, b int) []SwPath { return t.Paths(a, b, limit, 2) })
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return TurnRouter(name, cands[best], limit)
}

func newUpDown(g *topo.Graph, params map[string]string) (Router, error) {
	trials, limit, seed, err := turnParams("updown", params)
	if err != nil {
		return nil, err
	}
	f, err := NewFabric(g)
	if err != nil {
		return nil, fmt.Errorf("routing updown: %w", err)
	}
	var cands []Turns
	for _, u := range UpDownTrials(f, seed, trials) {
		cands = append(cands, u.Turns)
	}
	return bestTurns("updown", f, cands, limit), nil
}
