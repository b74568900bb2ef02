package topo

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// FC ("Flattened Clos") and FC+ (FC+ paper §III-A): every ToR is split into virtual switches placed on k
// virtual layers; physical links join only virtual switches of different ToRs in adjacent layers, so
// every link has a fixed "up" direction and up-down paths give deadlock-free routing with one lossless
// priority.
//
// Parameters: switches (N ToRs), s (fabric ports per ToR), h (hosts per ToR; or hosts_per_switch /
// hosts as for every switch-only family), seed; fcplus takes v (virtual switches per ToR, default the
// paper's Strategy*: the smallest v ≥ 2+(s−2)/10 making N_gl integral), fc takes k (layers, default the
// smallest k whose uniform split s/(2(k−1)) is integral and gives every ToR pair an up-down path, the
// FC paper's "smallest value to guarantee each switch pair has at least 1 up-down path"). A k given
// whose split is not integral (the FC+ paper's Table III has k = 6 and 8 at s = 18) spreads the s/2
// links each ToR puts on the k−1 bipartite graphs as evenly as whole links allow (fcSplit); the FC
// paper's own rule for that case is in its appendix, which we do not have.
//
// Layering is recorded on the links: a fabric link's Class is "vl<m>" where m is the virtual layer of
// its A end and m+1 that of its B end (A is always the lower end). VLayerOfPort reads it back. Node.VLayer
// is the layer of the ToR's second virtual switch S^2 (the first one placed at random), so two ToRs with
// the same VLayer share their group-1 layer.
func init() {
	keys := append([]paramSpec{{name: "switches", required: true}, {name: "s", required: true},
		{name: "h"}, {name: "seed", def: "1"}}, attachKeys...)
	register("fcplus", append([]paramSpec{{name: "v"}}, keys...), buildFCPlus)
	register("fc", append([]paramSpec{{name: "k"}}, keys...), buildFC)
}

// vswitch is one virtual switch: its ToR, layer, and how many links it takes up and down.
type vswitch struct{ tor, layer, up, down int }

// FCPlusParams resolves Strategy* (FC+ paper §III-A): k = s/2+1 layers, N_gl = (s−2)/(2(v−2)) layers per
// group. v = 0 picks the smallest valid v ≥ 2+(s−2)/10.
func FCPlusParams(s, v int) (k, vOut, ngl int, err error) {
	if s < 4 || s%2 != 0 {
		return 0, 0, 0, fmt.Errorf("s must be even and at least 4")
	}
	k = s/2 + 1
	if v == 0 {
		for c := 3; c <= k; c++ {
			if float64(c) >= 2+float64(s-2)/10 && (s-2)%(2*(c-2)) == 0 {
				v = c
				break
			}
		}
		if v == 0 {
			return 0, 0, 0, fmt.Errorf("no v in 3..%d makes (s-2)/(2(v-2)) integral", k)
		}
	}
	if v <= 2 || v > k {
		return 0, 0, 0, fmt.Errorf("v must satisfy 2 < v <= k = %d", k)
	}
	if (s-2)%(2*(v-2)) != 0 {
		return 0, 0, 0, fmt.Errorf("(s-2)=%d must be divisible by 2(v-2)=%d", s-2, 2*(v-2))
	}
	return k, v, (s - 2) / (2 * (v - 2)), nil
}

func fcCommon(p *params) (n, s int, seed uint64, err error) {
	if n, err = p.int("switches", 2); err != nil {
		return
	}
	if s, err = p.int("s", 2); err != nil {
		return
	}
	if s%2 != 0 {
		return 0, 0, 0, p.errf("s", "must be even (k = s/2+1 layers)")
	}
	if s >= n {
		return 0, 0, 0, p.errf("s", "must be below switches=%d (no parallel links between ToRs)", n)
	}
	seed, err = p.seed("seed")
	if err == nil && p.has("h") {
		if p.given["hosts_per_switch"] || p.given["hosts"] {
			return 0, 0, 0, p.errf("h", "give h, hosts or hosts_per_switch, not two of them")
		}
		if _, err = p.int("h", 0); err != nil {
			return
		}
		p.m["hosts_per_switch"] = p.m["h"]
	}
	return
}

func buildFCPlus(p *params) (*Graph, error) {
	n, s, seed, err := fcCommon(p)
	if err != nil {
		return nil, err
	}
	v := 0
	if p.has("v") {
		if v, err = p.int("v", 3); err != nil {
			return nil, err
		}
	}
	k, v, ngl, err := FCPlusParams(s, v)
	if err != nil {
		return nil, p.errf("v", "%v", err)
	}
	if n%ngl != 0 {
		return nil, p.errf("switches", "must be divisible by N_gl = %d (each layer of a group holds switches/N_gl virtual switches)", ngl)
	}
	p.m["v"], p.m["k"] = strconv.Itoa(v), strconv.Itoa(k)
	r := newRand(seed)
	for try := 0; try < attempts; try++ {
		var vs []vswitch
		for i := 0; i < n; i++ {
			vs = append(vs, vswitch{tor: i, layer: 1, up: 1}, vswitch{tor: i, layer: k, down: 1})
		}
		for grp := 0; grp < v-2; grp++ {
			// Each layer of the group gets exactly n/ngl ToRs, chosen at random.
			perm := r.Perm(n)
			for idx, tor := range perm {
				vs = append(vs, vswitch{tor: tor, layer: 2 + grp*ngl + idx%ngl, up: ngl, down: ngl})
			}
		}
		if g, ok := wireLayers(p, n, k, vs, r); ok {
			return g, nil
		}
	}
	return nil, p.errf("seed", "no simple FC+ wiring found after %d attempts (s too close to switches?)", attempts)
}

func buildFC(p *params) (*Graph, error) {
	n, s, seed, err := fcCommon(p)
	if err != nil {
		return nil, err
	}
	var ks []int
	if p.has("k") {
		k, err := p.int("k", 2)
		if err != nil {
			return nil, err
		}
		if k-1 > s/2 {
			return nil, p.errf("k", "at most s/2+1 = %d layers (every bipartite graph needs a link per ToR)", s/2+1)
		}
		ks = []int{k}
	} else {
		for k := 2; k <= s/2+1; k++ {
			if s%(2*(k-1)) == 0 {
				ks = append(ks, k)
			}
		}
	}
	for _, k := range ks {
		d := fcSplit(s, k)
		r := newRand(seed)
		for try := 0; try < attempts; try++ {
			var vs []vswitch
			for i := 0; i < n; i++ {
				for m := 1; m <= k; m++ {
					x := vswitch{tor: i, layer: m}
					if m > 1 {
						x.down = d[m-2]
					}
					if m < k {
						x.up = d[m-1]
					}
					vs = append(vs, x)
				}
			}
			g, ok := wireLayers(p, n, k, vs, r)
			if !ok {
				continue
			}
			if len(ks) == 1 || upDownConnected(g) {
				p.m["k"] = strconv.Itoa(k)
				return g, nil
			}
			break // this k wires but leaves a pair without an up-down path: try more layers
		}
	}
	return nil, p.errf("s", "no FC wiring with an up-down path between every ToR pair (tried k = %v)", ks)
}

// fcSplit is how many links each ToR puts on each of FC's k−1 bipartite graphs (up from layer m is
// d[m−1]): s/(2(k−1)) each when that is whole; otherwise one more on r = (s/2) mod (k−1) graphs spaced
// evenly along the stack (graph ⌊(i+½)(k−1)/r⌋ for i < r), which is symmetric about the middle layer.
func fcSplit(s, k int) []int {
	half := s / 2
	d := make([]int, k-1)
	for m := range d {
		d[m] = half / (k - 1)
	}
	r := half % (k - 1)
	for i := 0; i < r; i++ {
		d[(2*i+1)*(k-1)/(2*r)]++
	}
	return d
}

// wireLayers draws one random bipartite graph between each pair of adjacent layers with the virtual
// switches' degrees, forbidding links inside a ToR and parallel links between ToRs (FC+ paper §III-A
// recommends simple graphs), repairing conflicts by edge swaps inside the same bipartite graph.
func wireLayers(p *params, n, k int, vs []vswitch, r *rand.Rand) (*Graph, bool) {
	type edge struct{ lo, hi int } // ToRs at the lower and upper layer
	used := map[[2]int]bool{}
	key := func(a, b int) [2]int {
		if a > b {
			a, b = b, a
		}
		return [2]int{a, b}
	}
	var all [][]edge
	for m := 1; m < k; m++ {
		var lo, hi []int
		for _, x := range vs {
			if x.layer == m {
				for i := 0; i < x.up; i++ {
					lo = append(lo, x.tor)
				}
			}
			if x.layer == m+1 {
				for i := 0; i < x.down; i++ {
					hi = append(hi, x.tor)
				}
			}
		}
		if len(lo) != len(hi) {
			return nil, false
		}
		r.Shuffle(len(hi), func(i, j int) { hi[i], hi[j] = hi[j], hi[i] })
		es := make([]edge, len(lo))
		for i := range lo {
			es[i] = edge{lo[i], hi[i]}
		}
		bad := func(e edge) bool { return e.lo == e.hi || used[key(e.lo, e.hi)] }
		// Place good edges first, then repair each bad one by swapping upper ends with a random edge.
		var pending []int
		for i, e := range es {
			if bad(e) {
				pending = append(pending, i)
				continue
			}
			used[key(e.lo, e.hi)] = true
		}
		for _, i := range pending {
			fixed := false
			for tries := 0; tries < 200*len(es) && !fixed; tries++ {
				j := r.IntN(len(es))
				if j == i {
					continue
				}
				// Only placed (good) edges are swap partners; a pending one is not in used yet.
				if isPending(pending, j) {
					continue
				}
				a, b := es[i], es[j]
				na, nb := edge{a.lo, b.hi}, edge{b.lo, a.hi}
				delete(used, key(b.lo, b.hi))
				if bad(na) || bad(nb) || key(na.lo, na.hi) == key(nb.lo, nb.hi) {
					used[key(b.lo, b.hi)] = true
					continue
				}
				used[key(na.lo, na.hi)], used[key(nb.lo, nb.hi)] = true, true
				es[i], es[j] = na, nb
				fixed = true
			}
			if !fixed {
				return nil, false
			}
		}
		all = append(all, es)
	}
	counts, err := p.hostCounts(n)
	if err != nil {
		return nil, false
	}
	b := p.builder()
	sw := make([]int, n)
	for i := range sw {
		sw[i] = b.AddSwitch()
	}
	for _, x := range vs {
		if x.layer != 1 && x.layer != k && b.G.Nodes[sw[x.tor]].VLayer == 0 {
			b.G.Nodes[sw[x.tor]].VLayer = x.layer
		}
	}
	b.attachHosts(sw, counts)
	for m, es := range all {
		for _, e := range es {
			b.ConnectWith(sw[e.lo], sw[e.hi], b.RateBps, b.Delay, "vl"+strconv.Itoa(m+1))
		}
	}
	return b.G, true
}

func isPending(pending []int, j int) bool {
	for _, x := range pending {
		if x == j {
			return true
		}
	}
	return false
}

// VLayerOfPort is the virtual layer of the virtual switch that owns node n's port p on an FC/FC+ graph,
// or 0 for host ports and graphs without layering.
func VLayerOfPort(g *Graph, n, p int) int {
	l := g.LinkAt(n, p)
	m, ok := strings.CutPrefix(l.Class, "vl")
	if !ok {
		return 0
	}
	lo, err := strconv.Atoi(m)
	if err != nil {
		return 0
	}
	if l.A.Node == n && l.A.Port == p {
		return lo
	}
	return lo + 1
}

// upDownConnected reports whether every ordered ToR pair has a path that only goes up in virtual layer
// and then only down (intra-switch moves included), i.e. a deadlock-free FC route exists.
func upDownConnected(g *Graph) bool {
	// States (switch, layer, phase): phase 0 still climbing, 1 descending.
	for _, src := range g.Switches {
		type st struct{ n, layer, phase int }
		seen := map[st]bool{}
		var q []st
		reach := map[int]bool{src: true}
		for p := range g.Nodes[src].Ports {
			if l := VLayerOfPort(g, src, p); l > 0 {
				s0 := st{src, l, 0}
				if !seen[s0] {
					seen[s0] = true
					q = append(q, s0)
				}
			}
		}
		for len(q) > 0 {
			cur := q[0]
			q = q[1:]
			for p := range g.Nodes[cur.n].Ports {
				out := VLayerOfPort(g, cur.n, p)
				if out == 0 {
					continue
				}
				// Intra-switch move from cur.layer to out, then the link.
				ph := cur.phase
				if out < cur.layer {
					ph = 1
				} else if out > cur.layer && ph == 1 {
					continue
				}
				peer := g.Peer(cur.n, p)
				in := VLayerOfPort(g, peer.Node, peer.Port)
				if in < out {
					ph = 1
				} else if ph == 1 {
					continue
				}
				ns := st{peer.Node, in, ph}
				reach[peer.Node] = true
				if !seen[ns] {
					seen[ns] = true
					q = append(q, ns)
				}
			}
		}
		if len(reach) < len(g.Switches) {
			return false
		}
	}
	return true
}
