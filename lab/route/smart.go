package route

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// Smart routing (Fibre Channel paper §3.3): start from every turn except U-turns, and while the buffer
// dependency graph (nodes: directed trunk arcs; edges: allowed turns) has a cycle, cut the turn on it
// whose removal hurts the average routing distance p̄ least, spreading cuts across switches on ties;
// if every cut on a cycle disconnects a pair, start over in tree mode (the turns of a BFS spanning tree
// are never cut). Then restore cuts, most expensive first, where that creates no cycle.

type turn struct{ in, out Arc }

// Smart is one smart-routing result.
type Smart struct {
	Turns
	Cut      map[turn]bool
	TreeMode bool
}

// NewSmart runs SMART_ONCE, falling back to tree mode.
func NewSmart(f *Fabric, r *rand.Rand) (*Smart, error) {
	if s, ok := smartOnce(f, r, false); ok {
		return s, nil
	}
	if s, ok := smartOnce(f, r, true); ok {
		return s, nil
	}
	return nil, fmt.Errorf("smart routing: no deadlock-free routing keeps every pair connected (graph disconnected?)")
}

func smartOnce(f *Fabric, r *rand.Rand, tree bool) (*Smart, bool) {
	s := &Smart{Cut: map[turn]bool{}, TreeMode: tree}
	s.Turns = Turns{F: f, Allowed: func(x, y Arc) bool { return y.To != x.From && !s.Cut[turn{x, y}] }}
	essential := map[turn]bool{}
	if tree {
		root := r.IntN(len(f.Sw))
		inTree := map[int]bool{} // link indices of a BFS tree
		seen := map[int]bool{root: true}
		q := []int{root}
		for len(q) > 0 {
			x := q[0]
			q = q[1:]
			for _, a := range f.Out[x] {
				if !seen[a.To] {
					seen[a.To], inTree[a.Link] = true, true
					q = append(q, a.To)
				}
			}
		}
		for _, arcs := range f.Out {
			for _, x := range arcs {
				for _, y := range f.Out[x.To] {
					if inTree[x.Link] && inTree[y.Link] && y.To != x.From {
						essential[turn{x, y}] = true
					}
				}
			}
		}
	}
	cutsAt := map[int]int{} // per switch, to spread cuts
	type cutRec struct {
		t       turn
		expense float64
	}
	var cuts []cutRec
	for {
		cyc := s.findCycle()
		if cyc == nil {
			break
		}
		before := s.PBar()
		var best []turn
		bestP := math.Inf(1)
		bestSpread := math.MaxInt
		for _, t := range cyc {
			if essential[t] {
				continue
			}
			s.Cut[t] = true
			p := s.PBar()
			delete(s.Cut, t)
			if math.IsInf(p, 1) {
				continue
			}
			spread := cutsAt[t.in.To]
			switch {
			case p < bestP-1e-12 || (math.Abs(p-bestP) <= 1e-12 && spread < bestSpread):
				best, bestP, bestSpread = []turn{t}, p, spread
			case math.Abs(p-bestP) <= 1e-12 && spread == bestSpread:
				best = append(best, t)
			}
		}
		if best == nil {
			return nil, false
		}
		t := best[r.IntN(len(best))]
		s.Cut[t] = true
		cutsAt[t.in.To]++
		cuts = append(cuts, cutRec{t, bestP - before})
	}
	sort.SliceStable(cuts, func(i, j int) bool { return cuts[i].expense > cuts[j].expense })
	for _, c := range cuts {
		delete(s.Cut, c.t)
		if s.findCycle() != nil {
			s.Cut[c.t] = true
		}
	}
	return s, true
}

// findCycle returns the turns of one cycle of the dependency graph, or nil.
func (s *Smart) findCycle() []turn {
	f := s.F
	const (
		white = iota
		grey
		black
	)
	color := map[Arc]int{}
	var stack []Arc
	var found []turn
	var dfs func(x Arc) bool
	dfs = func(x Arc) bool {
		color[x] = grey
		stack = append(stack, x)
		for _, y := range f.Out[x.To] {
			if !s.Allowed(x, y) {
				continue
			}
			switch color[y] {
			case grey:
				i := len(stack) - 1
				for stack[i] != y {
					i--
				}
				cyc := append(append([]Arc(nil), stack[i:]...), y)
				for j := 0; j+1 < len(cyc); j++ {
					found = append(found, turn{cyc[j], cyc[j+1]})
				}
				return true
			case white:
				if dfs(y) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[x] = black
		return false
	}
	for _, arcs := range f.Out {
		for _, x := range arcs {
			if color[x] == white && dfs(x) {
				return found
			}
		}
	}
	return nil
}

func newSmart(g *topo.Graph, params map[string]string) (Router, error) {
	trials, limit, seed, err := turnParams("smart", params)
	if err != nil {
		return nil, err
	}
	if _, ok := params["trials"]; !ok {
		trials = 3 // the paper: "typically run several times"
	}
	f, err := NewFabric(g)
	if err != nil {
		return nil, fmt.Errorf("routing smart: %w", err)
	}
	r := rand.New(rand.NewPCG(seed, 0x5bd1e995))
	var cands []Turns
	for i := 0; i < trials; i++ {
		s, err := NewSmart(f, r)
		if err != nil {
			return nil, err
		}
		cands = append(cands, s.Turns)
	}
	return bestTurns("smart", f, cands, limit), nil
}
