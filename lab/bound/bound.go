// Package bound computes LP throughput bounds: the maximum concurrent multicommodity flow g such that
// every terminal pair can exchange g times its traffic-matrix demand at once, with trunk links the only
// bottleneck (Fibre Channel paper §2.4). Either over any path (routing "free": arc formulation, one
// commodity per destination switch) or restricted to the paths a router lists (path formulation, the
// LP "balancing" of a static routing). Solved by the Garg-Könemann/Fleischer scheme to a certified gap
// (mcf.go: a feasible flow G and a dual bound Upper), which reaches the FC+ paper's scale; gonum's dense
// simplex (Simplex) solves small instances exactly, for cross-checks.
package bound

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"

	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// TM is a switch-level traffic matrix: TM[a][b] is the demand from switch position a to switch position
// b per unit of throughput g, in host-link bandwidths. Same-switch demand never crosses a trunk and is
// ignored.
type TM [][]float64

// Uniform is all-to-all traffic from every terminal to every terminal: TM[a][b] = P_a·P_b/N, so g is the
// fraction of its port bandwidth each terminal sends. N, not N−1, is the paper's normalization (it gives
// the published 15.4% on Petersen; N−1 gives 15.27%).
func Uniform(f *route.Fabric) TM {
	n := 0
	for _, p := range f.Terminals {
		n += p
	}
	tm := make(TM, len(f.Sw))
	for a := range tm {
		tm[a] = make([]float64, len(f.Sw))
		for b := range tm[a] {
			if a != b && n > 0 {
				tm[a][b] = float64(f.Terminals[a]*f.Terminals[b]) / float64(n)
			}
		}
	}
	return tm
}

// Result is an LP solution.
type Result struct {
	// G is the max concurrent flow: every switch pair can carry G times its demand at once. It can exceed
	// 1 (the FC+ paper's all-to-all 1.204): host links are not constrained, trunks are (FC+ paper §V-A).
	// Throughput's G is a feasible flow (a lower bound on the optimum) and Upper a dual bound on it;
	// Simplex's G is the optimum and Upper equals it.
	G, Upper float64
	// Vars and Rows are the simplex LP's size, for reports and benchmarks; Phases the scheme's work.
	Vars, Rows, Phases int
	// Lengths is the dual certificate (arc lengths, Arcs order) for Upper; nil from Simplex.
	Lengths []float64
}

// Throughput is the max concurrent flow of tm (nil: Uniform) under router r: any path for route "free"
// (or nil), otherwise only r's paths between one representative host pair of each switch pair; to a
// certified gap of 1% (mcf.go).
func Throughput(g *topo.Graph, r route.Router, tm TM) (Result, error) {
	return ThroughputTol(g, r, tm, 0)
}

// ThroughputTol is Throughput stopping at certified relative gap tol (0: 1%).
func ThroughputTol(g *topo.Graph, r route.Router, tm TM, tol float64) (Result, error) {
	f, tm, err := fabricTM(g, tm)
	if err != nil {
		return Result{}, err
	}
	m, err := Instance(f, tm, hostRate(g), routerPaths(f, r))
	if err != nil {
		return Result{}, err
	}
	m.Tol = tol
	res, err := m.Solve()
	if err != nil {
		return Result{}, err
	}
	return Result{G: res.G, Upper: res.Upper, Phases: res.Phases, Lengths: res.Lengths}, nil
}

// fabricTM builds g's switch fabric and checks tm against it (nil: Uniform).
func fabricTM(g *topo.Graph, tm TM) (*route.Fabric, TM, error) {
	f, err := route.NewFabric(g)
	if err != nil {
		return nil, nil, err
	}
	if tm == nil {
		tm = Uniform(f)
	}
	if len(tm) != len(f.Sw) {
		return nil, nil, fmt.Errorf("bound: traffic matrix has %d rows, topology has %d switches", len(tm), len(f.Sw))
	}
	return f, tm, nil
}

// routerPaths lists r's paths for a switch pair as arc keys; nil for any path.
func routerPaths(f *route.Fabric, r route.Router) func(a, b int) ([][]int, error) {
	if r == nil || r.Name() == "free" {
		return nil
	}
	return func(a, b int) ([][]int, error) {
		ha, hb := rep(f, a), rep(f, b)
		if ha < 0 || hb < 0 {
			return nil, fmt.Errorf("bound: switch pair s%d-s%d has demand but a switch has no host to route from", a, b)
		}
		ps, err := r.Paths(ha, hb)
		if err != nil {
			return nil, err
		}
		out := make([][]int, len(ps))
		for i, p := range ps {
			for h := 1; h+1 < len(p.Ports); h++ {
				out[i] = append(out[i], arcKey(f, p.Nodes[h], p.Ports[h]))
			}
		}
		return out, nil
	}
}

// Instance is the max-concurrent-flow instance of tm on f's trunks, capacities in units of unit bps;
// paths (arc keys per switch pair) restricts each pair to its listed paths, nil allows any.
func Instance(f *route.Fabric, tm TM, unit float64, paths func(a, b int) ([][]int, error)) (*MCF, error) {
	idx, caps, arcs := arcIndex(f)
	m := &MCF{Nodes: len(f.Sw)}
	for i, a := range arcs {
		m.From = append(m.From, a.From)
		m.To = append(m.To, a.To)
		m.Cap = append(m.Cap, caps[i]/unit)
	}
	for a := range f.Sw {
		for b := range f.Sw {
			if a == b || tm[a][b] == 0 {
				continue
			}
			c := Commodity{Src: a, Dst: b, Demand: tm[a][b]}
			if paths != nil {
				ps, err := paths(a, b)
				if err != nil {
					return nil, err
				}
				if len(ps) == 0 {
					return nil, fmt.Errorf("bound: routing lists no path from s%d to s%d", a, b)
				}
				for _, p := range ps {
					var ix []int
					for _, k := range p {
						i, ok := idx[k]
						if !ok {
							return nil, fmt.Errorf("bound: a path from s%d to s%d crosses a non-trunk port", a, b)
						}
						ix = append(ix, i)
					}
					c.Paths = append(c.Paths, ix)
				}
			}
			m.Comms = append(m.Comms, c)
		}
	}
	return m, nil
}

// Simplex is Throughput solved exactly by gonum's dense simplex: small instances only (MaxCells), for
// cross-checking the scheme.
func Simplex(g *topo.Graph, r route.Router, tm TM) (Result, error) {
	f, tm, err := fabricTM(g, tm)
	if err != nil {
		return Result{}, err
	}
	unit := hostRate(g)
	if r == nil || r.Name() == "free" {
		return free(f, tm, unit)
	}
	return restricted(f, tm, unit, routerPaths(f, r))
}

// SwitchPaths is Throughput restricted to explicit switch-level paths per pair (paths(a, b) for every
// pair with demand), for routings that are not Routers yet.
func SwitchPaths(g *topo.Graph, tm TM, paths func(a, b int) []route.SwPath) (Result, error) {
	f, tm, err := fabricTM(g, tm)
	if err != nil {
		return Result{}, err
	}
	return restricted(f, tm, hostRate(g), swPathArcs(f, paths))
}

func rep(f *route.Fabric, sw int) int {
	for h, s := range f.HostSw {
		if s == sw {
			return h
		}
	}
	return -1
}

// hostRate is the capacity unit: a host link's rate (the first host's), so g is a fraction of a port.
func hostRate(g *topo.Graph) float64 {
	if len(g.Hosts) == 0 {
		return 1
	}
	return g.LinkAt(g.Hosts[0], 0).RateBps
}

// arcs indexes the directed trunk arcs of f: key = node*256+port.
func arcIndex(f *route.Fabric) (map[int]int, []float64, []route.Arc) {
	idx := map[int]int{}
	var caps []float64
	var list []route.Arc
	for _, arcs := range f.Out {
		for _, a := range arcs {
			idx[arcKey(f, f.Sw[a.From], a.Port)] = len(caps)
			caps = append(caps, f.G.Links[a.Link].RateBps)
			list = append(list, a)
		}
	}
	return idx, caps, list
}

func arcKey(f *route.Fabric, node int, port uint8) int { return node*256 + int(port) }

// lpBuilder accumulates equality rows over non-negative variables; variable 0 is g.
type lpBuilder struct {
	nvar int
	rows []map[int]float64
	rhs  []float64
}

func (b *lpBuilder) newVar() int { b.nvar++; return b.nvar - 1 }

func (b *lpBuilder) row(coef map[int]float64, rhs float64) {
	b.rows = append(b.rows, coef)
	b.rhs = append(b.rhs, rhs)
}

// MaxCells bounds the dense LP gonum's simplex is given (variables × rows): past it the solve takes
// minutes (measured: 4,400 path variables × 700 rows, FC+ with 24 ToRs and K=8, ran > 4 min).
var MaxCells = 1_000_000

func (b *lpBuilder) solve() (Result, error) {
	if cells := b.nvar * len(b.rows); cells > MaxCells {
		return Result{}, fmt.Errorf("bound: LP of %d variables x %d rows exceeds bound.MaxCells = %d for gonum's dense simplex", b.nvar, len(b.rows), MaxCells)
	}
	A := mat.NewDense(len(b.rows), b.nvar, nil)
	for i, r := range b.rows {
		for j, v := range r {
			A.Set(i, j, v)
		}
	}
	c := make([]float64, b.nvar)
	c[0] = -1
	opt, _, err := lp.Simplex(c, A, b.rhs, 1e-10, nil)
	if err != nil {
		return Result{}, fmt.Errorf("bound: LP: %w", err)
	}
	return Result{G: -opt, Upper: -opt, Vars: b.nvar, Rows: len(b.rows)}, nil
}

// capRows adds Σ load(arc) + slack = capacity for every arc.
func (b *lpBuilder) capRows(load []map[int]float64, caps []float64, unit float64) {
	for i, coef := range load {
		coef[b.newVar()] = 1
		b.row(coef, caps[i]/unit)
	}
}

func free(f *route.Fabric, tm TM, unit float64) (Result, error) {
	_, caps, arcs := arcIndex(f)
	b := &lpBuilder{nvar: 1}
	load := make([]map[int]float64, len(arcs))
	for i := range load {
		load[i] = map[int]float64{}
	}
	for t := range f.Sw {
		in := 0.0
		for s := range f.Sw {
			in += tm[s][t]
		}
		if in == 0 {
			continue
		}
		vars := make([]int, len(arcs))
		for i := range arcs {
			vars[i] = b.newVar()
			load[i][vars[i]] = 1
		}
		for u := range f.Sw {
			if u == t {
				continue
			}
			coef := map[int]float64{}
			for i, a := range arcs {
				if a.From == u {
					coef[vars[i]] += 1
				}
				if a.To == u {
					coef[vars[i]] -= 1
				}
			}
			if tm[u][t] != 0 {
				coef[0] = -tm[u][t]
			}
			b.row(coef, 0)
		}
	}
	b.capRows(load, caps, unit)
	return b.solve()
}

func restricted(f *route.Fabric, tm TM, unit float64, paths func(a, b int) ([][]int, error)) (Result, error) {
	idx, caps, _ := arcIndex(f)
	b := &lpBuilder{nvar: 1}
	load := make([]map[int]float64, len(caps))
	for i := range load {
		load[i] = map[int]float64{}
	}
	for a := range f.Sw {
		for c := range f.Sw {
			if a == c || tm[a][c] == 0 {
				continue
			}
			ps, err := paths(a, c)
			if err != nil {
				return Result{}, err
			}
			if len(ps) == 0 {
				return Result{}, fmt.Errorf("bound: routing lists no path from s%d to s%d", a, c)
			}
			coef := map[int]float64{0: -tm[a][c]}
			for _, p := range ps {
				v := b.newVar()
				coef[v] = 1
				for _, k := range p {
					i, ok := idx[k]
					if !ok {
						return Result{}, fmt.Errorf("bound: a path from s%d to s%d crosses a non-trunk port", a, c)
					}
					load[i][v] += 1
				}
			}
			b.row(coef, 0)
		}
	}
	b.capRows(load, caps, unit)
	return b.solve()
}

// swPathArcs lists switch-level paths as arc keys.
func swPathArcs(f *route.Fabric, paths func(a, b int) []route.SwPath) func(a, b int) ([][]int, error) {
	return func(a, b int) ([][]int, error) {
		var out [][]int
		for _, sp := range paths(a, b) {
			var arcs []int
			for _, x := range sp {
				arcs = append(arcs, arcKey(f, f.Sw[x.From], x.Port))
			}
			out = append(out, arcs)
		}
		return out, nil
	}
}

// TrialLP is route.TrialScore by the LP: the max concurrent flow of uniform all-to-all traffic over
// the trial's paths (certified to 1%; the lower end, a flow the routing can carry). A trial the LP
// cannot solve scores 0.
func TrialLP(f *route.Fabric, paths func(a, b int) []route.SwPath) float64 {
	m, err := Instance(f, Uniform(f), hostRate(f.G), swPathArcs(f, paths))
	if err != nil {
		return 0
	}
	res, err := m.Solve()
	if err != nil {
		return 0
	}
	return res.G
}
