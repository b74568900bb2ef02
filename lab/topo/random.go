package topo

import (
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

func init() {
	randKeys := append([]paramSpec{{name: "switches", required: true}, {name: "degree", required: true},
		{name: "seed", def: "1"}}, attachKeys...)
	register("jellyfish", randKeys, buildJellyfish)
	register("xpander", append([]paramSpec{{name: "lifts"}}, randKeys...), buildXpander)
}

// attempts bounds the retries of random constructions. A connected d-regular graph (d ≥ 3) comes out
// of the first attempt almost always; d = 2 needs a single Hamiltonian cycle, whose odds fall like
// 1/sqrt(n), so the bound is generous rather than tight.
const attempts = 2000

// newRand is the one seeded source for random families: PCG's output is specified by math/rand/v2,
// so a seed means the same graph on every Go version and platform.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909)) }

// randomCommon checks the parameters Jellyfish and Xpander share.
func randomCommon(p *params) (switches, degree int, seed uint64, err error) {
	if switches, err = p.int("switches", 2); err != nil {
		return
	}
	if switches > maxNodes {
		err = p.errf("switches", "more than %d switches", maxNodes)
		return
	}
	if degree, err = p.int("degree", 1); err != nil {
		return
	}
	if degree >= switches {
		err = p.errf("degree", "must be less than switches=%d (a simple graph has no more neighbours)", switches)
		return
	}
	if degree == 1 && switches > 2 {
		err = p.errf("degree", "degree 1 cannot connect more than 2 switches")
		return
	}
	seed, err = p.seed("seed")
	return
}

// buildJellyfish builds a random degree-regular graph among switches (the Jellyfish of
// expander thesis §2.2.1, Algorithm 1), with hosts_per_switch or hosts attached. The thesis' Algorithm 1 joins
// random pairs of switches with free ports; when it gets stuck, the original Jellyfish paper's
// edge-swap step (break a random link x–y and join both ends to the stuck switch) finishes the graph.
// Disconnected results are discarded and drawn again from the same seeded stream.
//
// Numbering: switches s0.. are the random graph's vertices; hosts by switch. Ports: hosts first, then
// switch neighbours in increasing switch number. Links: host links, then fabric links sorted by
// (lower, higher) switch number.
func buildJellyfish(p *params) (*Graph, error) {
	n, d, seed, err := randomCommon(p)
	if err != nil {
		return nil, err
	}
	if n*d%2 != 0 {
		return nil, p.errf("degree", "switches×degree = %d×%d is odd: a regular graph needs an even number of port ends", n, d)
	}
	counts, err := p.hostCounts(n)
	if err != nil {
		return nil, err
	}
	r := newRand(seed)
	for try := 0; try < attempts; try++ {
		adj, ok := jellyfishOnce(r, n, d)
		if ok && connected(adj) {
			return switchGraph(p, adj, counts, nil), nil
		}
	}
	return nil, p.errf("degree", "no connected %d-regular graph on %d switches after %d attempts", d, n, attempts)
}

// jellyfishOnce returns adjacency sets of a d-regular simple graph, or false when the swaps could not
// finish it.
func jellyfishOnce(r *rand.Rand, n, d int) ([]map[int]bool, bool) {
	adj := make([]map[int]bool, n)
	for i := range adj {
		adj[i] = map[int]bool{}
	}
	free := func(v int) int { return d - len(adj[v]) }
	left := make([]int, n)
	for i := range left {
		left[i] = i
	}
	link := func(u, v int) { adj[u][v], adj[v][u] = true, true }
	unlink := func(u, v int) { delete(adj[u], v); delete(adj[v], u) }
	prune := func() {
		out := left[:0]
		for _, v := range left {
			if free(v) > 0 {
				out = append(out, v)
			}
		}
		left = out
	}
	for len(left) > 1 {
		// Random probing is cheap while many pairs are open; an exhaustive scan decides when it is not.
		joined := false
		for t := 0; t < 64; t++ {
			u, v := left[r.IntN(len(left))], left[r.IntN(len(left))]
			if u != v && !adj[u][v] {
				link(u, v)
				joined = true
				break
			}
		}
		if !joined {
			var pairs [][2]int
			for i, u := range left {
				for _, v := range left[i+1:] {
					if !adj[u][v] {
						pairs = append(pairs, [2]int{u, v})
					}
				}
			}
			if len(pairs) == 0 {
				break
			}
			pr := pairs[r.IntN(len(pairs))]
			link(pr[0], pr[1])
		}
		prune()
	}
	// Edge swaps: a switch with two free ports takes over a random link x–y it is adjacent to neither end of.
	edges := func() [][2]int {
		var es [][2]int
		for u := range adj {
			for v := range adj[u] {
				if u < v {
					es = append(es, [2]int{u, v})
				}
			}
		}
		sort.Slice(es, func(i, j int) bool { return es[i][0] < es[j][0] || es[i][0] == es[j][0] && es[i][1] < es[j][1] })
		return es
	}
	for guard := 0; guard < 4*n*d+16; guard++ {
		prune()
		if len(left) == 0 {
			return adj, true
		}
		es := edges()
		if len(es) == 0 {
			return nil, false
		}
		e := es[r.IntN(len(es))]
		x, y := e[0], e[1]
		two := -1
		for _, v := range left {
			if free(v) >= 2 {
				two = v
				break
			}
		}
		if two >= 0 {
			v := two
			if v != x && v != y && !adj[v][x] && !adj[v][y] {
				unlink(x, y)
				link(v, x)
				link(v, y)
			}
			continue
		}
		// Two switches with one free port each, already adjacent to each other: u takes x, v takes y.
		if len(left) < 2 {
			return nil, false
		}
		u, v := left[0], left[1]
		if u != x && u != y && v != x && v != y && !adj[u][x] && !adj[v][y] {
			unlink(x, y)
			link(u, x)
			link(v, y)
		}
	}
	return nil, false
}

// buildXpander builds an Xpander (expander thesis §2.2.2): the complete graph K_(degree+1) lifted once
// by L = switches/(degree+1), each base edge u–v becoming a random perfect matching between u's and v's
// L copies. A lift of a simple graph is simple and degree-regular by construction; disconnected lifts
// are drawn again. The thesis' spectral-gap local search and incremental expansion to sizes that are
// not multiples of degree+1 are not done here.
//
// Numbering: copy i of meta-node u is switch s(u·L+i), with Node.Group = u and Node.Addr = [u, i].
// Ports and link order as for jellyfish.
func buildXpander(p *params) (*Graph, error) {
	n, d, seed, err := randomCommon(p)
	if err != nil {
		return nil, err
	}
	lifts, err := xpanderLifts(p, n, d)
	if err != nil {
		return nil, err
	}
	P := 1
	for _, k := range lifts {
		P *= k
	}
	extra := n - (d+1)*P
	if extra > 0 && d%2 == 1 {
		return nil, p.errf("switches", "%d is not a multiple of degree+1 = %d (lifted to %d); adding switches one by one keeps the graph %d-regular only for an even degree", n, d+1, (d+1)*P, d)
	}
	counts, err := p.hostCounts(n)
	if err != nil {
		return nil, err
	}
	r := newRand(seed)
	for try := 0; try < attempts; try++ {
		adj := make([]map[int]bool, d+1) // K_{d+1}
		for u := range adj {
			adj[u] = map[int]bool{}
			for v := 0; v <= d; v++ {
				if v != u {
					adj[u][v] = true
				}
			}
		}
		for _, k := range lifts {
			adj = lift(adj, k, r)
		}
		var ok bool
		if adj, ok = grow(adj, n, d, r); !ok {
			continue
		}
		if connected(adj) {
			meta := make([][2]int, n)
			for s := range meta {
				meta[s] = [2]int{s / P, s % P} // base vertex of K_{d+1}, copy index
				if s >= (d+1)*P {
					meta[s] = [2]int{d + 1, s - (d+1)*P} // added one by one
				}
			}
			return switchGraph(p, adj[:n], counts, meta), nil
		}
	}
	return nil, p.errf("degree", "no connected lift of K_%d to %d switches after %d attempts", d+1, n, attempts)
}

// xpanderLifts is the lift sequence from K_{d+1} (expander thesis §2.2.2: lift repeatedly until the
// vertex count's lower bound, then add switches one by one to the exact n): topology.lifts "2,2,4"
// (or "2x2x4"), or by default one lift to the largest multiple of degree+1 not above n.
func xpanderLifts(p *params, n, d int) ([]int, error) {
	if !p.has("lifts") {
		if n < d+1 {
			return nil, p.errf("switches", "must be at least degree+1 = %d (Xpander lifts K_%d)", d+1, d+1)
		}
		return []int{n / (d + 1)}, nil
	}
	var out []int
	prod := d + 1
	for _, f := range strings.FieldsFunc(p.m["lifts"], func(c rune) bool { return c == ',' || c == 'x' || c == ' ' }) {
		k, err := strconv.Atoi(f)
		if err != nil || k < 1 {
			return nil, p.errf("lifts", "%q: want lift factors >= 1 such as 2,2,4", p.m["lifts"])
		}
		out = append(out, k)
		prod *= k
	}
	if len(out) == 0 || prod > n {
		return nil, p.errf("lifts", "%q lifts K_%d to %d switches, want at least one factor and at most switches=%d", p.m["lifts"], d+1, prod, n)
	}
	return out, nil
}

// lift is a random k-lift: k copies of every vertex (copy i of u is u*k+i) and a random perfect
// matching between the copies of u and of v for every edge u-v, edges taken in (u, v) order. One lift
// of K_{d+1} draws exactly what the single-lift construction always drew.
func lift(adj []map[int]bool, k int, r *rand.Rand) []map[int]bool {
	out := make([]map[int]bool, len(adj)*k)
	for i := range out {
		out[i] = map[int]bool{}
	}
	for u := range adj {
		for _, v := range sortedKeys(adj[u]) {
			if v <= u {
				continue
			}
			perm := r.Perm(k)
			for i := 0; i < k; i++ {
				a, c := u*k+i, v*k+perm[i]
				out[a][c], out[c][a] = true, true
			}
		}
	}
	return out
}

// grow adds vertices until there are n (d even): each new vertex takes d/2 random edges a-b whose ends
// are not yet its neighbours, and replaces each by a-x and b-x (the Xpander paper's incremental
// expansion), keeping every degree d. It reports false when no such edges were found.
func grow(adj []map[int]bool, n, d int, r *rand.Rand) ([]map[int]bool, bool) {
	for len(adj) < n {
		x := len(adj)
		nx := map[int]bool{}
		var edges [][2]int
		for u := range adj {
			for _, v := range sortedKeys(adj[u]) {
				if u < v {
					edges = append(edges, [2]int{u, v})
				}
			}
		}
		r.Shuffle(len(edges), func(i, j int) { edges[i], edges[j] = edges[j], edges[i] })
		for _, e := range edges {
			if len(nx) == d {
				break
			}
			a, b := e[0], e[1]
			if nx[a] || nx[b] || !adj[a][b] {
				continue
			}
			delete(adj[a], b)
			delete(adj[b], a)
			nx[a], nx[b] = true, true
		}
		if len(nx) < d {
			return adj, false
		}
		adj = append(adj, nx)
		for v := range nx {
			adj[v][x] = true
		}
	}
	return adj, true
}

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func connected(adj []map[int]bool) bool {
	if len(adj) == 0 {
		return true
	}
	seen := make([]bool, len(adj))
	stack := []int{0}
	seen[0] = true
	count := 1
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for v := range adj[u] {
			if !seen[v] {
				seen[v] = true
				count++
				stack = append(stack, v)
			}
		}
	}
	return count == len(adj)
}

// switchGraph materializes a switch adjacency: switches s0.., hosts first on every switch, then fabric
// links in sorted order. meta, when given, sets each switch's Group and Addr.
func switchGraph(p *params, adj []map[int]bool, counts []int, meta [][2]int) *Graph {
	b := p.builder()
	sw := make([]int, len(adj))
	for i := range sw {
		sw[i] = b.AddSwitch()
		if meta != nil {
			b.G.Nodes[sw[i]].Group = meta[i][0]
			b.G.Nodes[sw[i]].Addr = []int{meta[i][0], meta[i][1]}
		}
	}
	b.attachHosts(sw, counts)
	for u := range adj {
		nb := make([]int, 0, len(adj[u]))
		for v := range adj[u] {
			if v > u {
				nb = append(nb, v)
			}
		}
		sort.Ints(nb)
		for _, v := range nb {
			b.Connect(sw[u], sw[v])
		}
	}
	return b.G
}
