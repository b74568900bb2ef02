package bound

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/fabriclab/fabriclab/lab/route"
)

// Traffic matrices of the FC+ and Fibre Channel papers, at switch level, in host-link units per unit of
// throughput (a switch's row sums to what its hosts send at g = 1).

// TMNames lists the matrices `lab analyze --tm` takes.
var TMNames = []string{"uniform", "permutation", "random", "near-worst", "workload"}

// Permutation is a random host permutation (no host sends to itself) aggregated per switch pair: each
// host sends one unit to one host.
func Permutation(f *route.Fabric, r *rand.Rand) TM {
	n := len(f.HostSw)
	tm := zero(len(f.Sw))
	if n < 2 {
		return tm
	}
	p := r.Perm(n)
	// A derangement: rotate fixed points into a cycle (Sattolo-free and uniform enough for a bound).
	for i := range p {
		if p[i] == i {
			j := (i + 1) % n
			p[i], p[j] = p[j], p[i]
		}
	}
	for h, d := range p {
		tm[f.HostSw[h]][f.HostSw[d]] += 1
	}
	return tm
}

// RandomFraction is the FC+ paper's "uniform random" matrix: every switch sends its hosts' traffic in
// equal shares to a random frac (12.5% in the paper) of the other switches.
func RandomFraction(f *route.Fabric, r *rand.Rand, frac float64) TM {
	n := len(f.Sw)
	tm := zero(n)
	k := max(1, int(math.Round(frac*float64(n-1))))
	for a := range tm {
		others := make([]int, 0, n-1)
		for b := 0; b < n; b++ {
			if b != a {
				others = append(others, b)
			}
		}
		r.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
		for _, b := range others[:min(k, len(others))] {
			tm[a][b] = float64(f.Terminals[a]) / float64(k)
		}
	}
	return tm
}

// NearWorst is the near-worst permutation the FC+ paper takes from FC (Jyothi et al.'s longest
// matching, FC+ paper §V-A): the switch-level permutation without fixed points that maximises the total
// shortest-path distance (an assignment problem, solved exactly by the Hungarian method), each switch
// sending all its hosts' traffic to its partner.
func NearWorst(f *route.Fabric) TM {
	n := len(f.Sw)
	dist := hops(f)
	// Minimise -distance; the diagonal is forbidden by a cost no permutation would pay.
	cost := make([][]float64, n)
	big := float64(n*n + 1)
	for a := range cost {
		cost[a] = make([]float64, n)
		for b := range cost[a] {
			if a == b {
				cost[a][b] = big
			} else {
				cost[a][b] = -float64(dist[a][b])
			}
		}
	}
	tm := zero(n)
	for a, b := range hungarian(cost) {
		if a != b {
			tm[a][b] = float64(f.Terminals[a])
		}
	}
	return tm
}

// Flows is a workload as a matrix: bytes per switch pair, scaled so the busiest host sends one unit
// (g = 1: that host at its link rate for the workload's duration, every other in proportion).
func Flows(f *route.Fabric, src, dst []int, bytes []int64) (TM, error) {
	tm := zero(len(f.Sw))
	sent := make([]float64, len(f.HostSw))
	for i := range src {
		if src[i] < 0 || src[i] >= len(f.HostSw) || dst[i] < 0 || dst[i] >= len(f.HostSw) {
			return nil, fmt.Errorf("bound: flow %d between h%d and h%d: no such host", i, src[i], dst[i])
		}
		sent[src[i]] += float64(bytes[i])
		tm[f.HostSw[src[i]]][f.HostSw[dst[i]]] += float64(bytes[i])
	}
	top := 0.0
	for _, s := range sent {
		top = math.Max(top, s)
	}
	if top == 0 {
		return nil, fmt.Errorf("bound: the workload sends no bytes")
	}
	for a := range tm {
		for b := range tm[a] {
			tm[a][b] /= top
		}
	}
	return tm, nil
}

// MeanHops is the demand-weighted mean shortest-path distance of tm in switch hops (Eq. 6's Σ t·P / Σ t).
func MeanHops(f *route.Fabric, tm TM) float64 {
	d := hops(f)
	num, den := 0.0, 0.0
	for a := range tm {
		for b, t := range tm[a] {
			if a != b && t > 0 {
				num += t * float64(d[a][b])
				den += t
			}
		}
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// Eq6 is the FC+ paper's Eq. (6) upper bound (from Namyar et al.): θ(T) ≤ Σ_e c_e / Σ_uv t_uv·P_uv,
// total directed trunk capacity over the capacity the matrix needs on shortest paths.
func Eq6(f *route.Fabric, tm TM, unit float64) float64 {
	_, caps, _ := arcIndex(f)
	c := 0.0
	for _, x := range caps {
		c += x / unit
	}
	d := hops(f)
	need := 0.0
	for a := range tm {
		for b, t := range tm[a] {
			if a != b {
				need += t * float64(d[a][b])
			}
		}
	}
	if need == 0 {
		return math.Inf(1)
	}
	return c / need
}

func zero(n int) TM {
	tm := make(TM, n)
	for i := range tm {
		tm[i] = make([]float64, n)
	}
	return tm
}

// hops is the switch-to-switch BFS distance matrix.
func hops(f *route.Fabric) [][]int {
	n := len(f.Sw)
	d := make([][]int, n)
	for s := range d {
		d[s] = make([]int, n)
		for i := range d[s] {
			d[s][i] = -1
		}
		d[s][s] = 0
		q := []int{s}
		for len(q) > 0 {
			x := q[0]
			q = q[1:]
			for _, a := range f.Out[x] {
				if d[s][a.To] < 0 {
					d[s][a.To] = d[s][x] + 1
					q = append(q, a.To)
				}
			}
		}
	}
	return d
}

// hungarian returns the minimum-cost assignment row -> column of a square cost matrix (Kuhn-Munkres
// with potentials, O(n^3)).
func hungarian(cost [][]float64) []int {
	n := len(cost)
	inf := math.Inf(1)
	u, v := make([]float64, n+1), make([]float64, n+1)
	p, way := make([]int, n+1), make([]int, n+1)
	for i := 1; i <= n; i++ {
		p[0] = i
		j0 := 0
		minv := make([]float64, n+1)
		used := make([]bool, n+1)
		for j := range minv {
			minv[j] = inf
		}
		for {
			used[j0] = true
			i0, delta, j1 := p[j0], inf, 0
			for j := 1; j <= n; j++ {
				if used[j] {
					continue
				}
				cur := cost[i0-1][j-1] - u[i0] - v[j]
				if cur < minv[j] {
					minv[j], way[j] = cur, j0
				}
				if minv[j] < delta {
					delta, j1 = minv[j], j
				}
			}
			for j := 0; j <= n; j++ {
				if used[j] {
					u[p[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
			if p[j0] == 0 {
				break
			}
		}
		for {
			j1 := way[j0]
			p[j0] = p[j1]
			j0 = j1
			if j0 == 0 {
				break
			}
		}
	}
	out := make([]int, n)
	for j := 1; j <= n; j++ {
		if p[j] > 0 {
			out[p[j]-1] = j - 1
		}
	}
	return out
}

// Analytic is the Fibre Channel paper's closed-form bound for uniform traffic (Fibre Channel paper
// §2.5-2.6): S switches of c ports, N terminals, L = (cS-N)/2 trunks.
type Analytic struct {
	S, C, N    int
	PathLength float64 `json:"path_length"` // (cS-N)·S² / (N·(2S² - (2+c)·S + N))
	Cut        float64 `json:"cut"`         // N·(c-⌈N/S⌉) / (⌈N/S⌉·(N-⌈N/S⌉))
	Bound      float64 `json:"bound"`       // the smaller
}

// FibreChannelBound evaluates Analytic for f, c being the largest switch's port count.
func FibreChannelBound(f *route.Fabric) (Analytic, error) {
	a := Analytic{S: len(f.Sw)}
	for i, n := range f.Sw {
		a.C = max(a.C, len(f.G.Nodes[n].Ports))
		a.N += f.Terminals[i]
	}
	return a, a.eval()
}

// AnalyticBound is the bound for S switches of c ports and N terminals.
func AnalyticBound(s, c, n int) (Analytic, error) {
	a := Analytic{S: s, C: c, N: n}
	return a, a.eval()
}

func (a *Analytic) eval() error {
	S, c, N := float64(a.S), float64(a.C), float64(a.N)
	if a.S < 2 || a.N < 2 || c*S <= N {
		return fmt.Errorf("bound: S=%d switches of c=%d ports cannot hold N=%d terminals and a trunk", a.S, a.C, a.N)
	}
	a.PathLength = (c*S - N) * S * S / (N * (2*S*S - (2+c)*S + N))
	r := math.Ceil(N / S)
	a.Cut = N * (c - r) / (r * (N - r))
	a.Bound = math.Min(a.PathLength, a.Cut)
	return nil
}
