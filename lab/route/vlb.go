package route

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// vlb: Valiant load balancing (expander thesis §4.2.1). Each flow picks an intermediate switch w,
// uniformly among all switches but its source and destination ToR ([R] RangeValiantSwitch re-draws
// those), and travels a shortest path src ToR -> w then a shortest path w -> dst ToR, with the ECMP choice
// on each hop drawn too. The choice is per flow, not per flowlet: the engines carry a flow's source route
// for its whole life, and re-pathing a flowlet would need the NIC to re-draw on idle gaps.
//
// hybrid: HYBRID (§2.4): the flow's first `threshold` bytes (default 100 KB) are forwarded by the
// switches' ECMP tables like `shortest`, the rest takes the flow's VLB path; the NIC switches the
// source route it stamps once the byte offset of a packet passes the threshold (nodes.Flow.Then).
//
// Both are decided at schedule time from a hash of (seed, src, dst, flow id), so the same spec and seed
// give the same paths, independent of the order flows are routed in.

func init() {
	Register("vlb", newVLB)
	Register("hybrid", newHybrid)
}

// FlowRoute is how one flow travels.
type FlowRoute struct {
	// Path is the flow's path from its first byte. With Table set the switches forward the flow by their
	// ECMP tables and Path is one shortest path, the one its ideal FCT is computed on.
	Path  Path
	Table bool
	// Then, when it has nodes, is the path of the bytes past After: packets whose last payload byte lies
	// beyond After carry Then's source route.
	Then  Path
	After int64
}

// FlowRouter is a Router that chooses each flow's path itself (VLB, HYBRID) rather than leaving it to
// the switches' tables: the lab asks it per flow and stamps the answer as the flow's source route.
type FlowRouter interface {
	Router
	FlowRoute(src, dst int, id uint32, size int64) (FlowRoute, error)
}

// DefaultVLBSeed is the seed when neither the routing block nor the spec gives one.
const DefaultVLBSeed = 1

// DefaultHybridThreshold is HYBRID's Q (expander thesis §4.2.1, §4.3.3), when the factory is called without a
// threshold (the spec resolves its own default to the same value).
const DefaultHybridThreshold = 100_000

// VLB is the vlb and hybrid router.
type VLB struct {
	name string
	f    *Fabric
	seed uint64
	// Threshold is HYBRID's Q in bytes; 0 for plain vlb.
	Threshold int64

	// dist[a][b] is the trunk-hop distance between switch positions a and b (-1: unreachable).
	dist [][]int16
}

func newVLB(g *topo.Graph, params map[string]string) (Router, error) {
	if err := CheckParams("vlb", params, "seed"); err != nil {
		return nil, err
	}
	return buildVLB("vlb", g, params, 0)
}

func newHybrid(g *topo.Graph, params map[string]string) (Router, error) {
	if err := CheckParams("hybrid", params, "threshold", "seed"); err != nil {
		return nil, err
	}
	q := int64(DefaultHybridThreshold)
	if s, ok := params["threshold"]; ok {
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("routing hybrid: threshold=%q, want a positive number of bytes", s)
		}
		q = v
	}
	return buildVLB("hybrid", g, params, q)
}

func buildVLB(name string, g *topo.Graph, params map[string]string, threshold int64) (*VLB, error) {
	seed, err := IntParam(name, params, "seed", DefaultVLBSeed)
	if err != nil {
		return nil, err
	}
	f, err := NewFabric(g)
	if err != nil {
		return nil, fmt.Errorf("routing %s: %w", name, err)
	}
	if len(f.Sw) < 3 {
		return nil, fmt.Errorf("routing %s: %d switches leave no intermediate besides source and destination ToR", name, len(f.Sw))
	}
	r := &VLB{name: name, f: f, seed: uint64(seed), Threshold: threshold, dist: make([][]int16, len(f.Sw))}
	queue := make([]int, 0, len(f.Sw))
	for b := range f.Sw {
		d := make([]int16, len(f.Sw))
		for i := range d {
			d[i] = -1
		}
		d[b] = 0
		queue = append(queue[:0], b)
		for qi := 0; qi < len(queue); qi++ {
			u := queue[qi]
			for _, a := range f.Out[u] {
				if d[a.To] < 0 {
					d[a.To] = d[u] + 1
					queue = append(queue, a.To)
				}
			}
		}
		r.dist[b] = d
	}
	for a := range f.Sw {
		for b := range f.Sw {
			if r.dist[a][b] < 0 {
				return nil, fmt.Errorf("routing %s: switch %s cannot reach %s", name, g.Nodes[f.Sw[a]].Name, g.Nodes[f.Sw[b]].Name)
			}
		}
	}
	return r, nil
}

func (r *VLB) Name() string { return r.name }

// Paths is a deterministic candidate set for analyses (deadlock, LP): one path per intermediate switch
// w in position order, each leg the lowest-port shortest path, loops cut out. Two hosts on one switch
// have the one direct path (the destination ToR delivers at once, [R] rule 4). Paths that coincide
// after loop removal are listed once. For hybrid the direct lowest-port shortest path comes first (a
// flow's first bytes take it).
func (r *VLB) Paths(src, dst int) ([]Path, error) {
	if err := r.hosts(src, dst); err != nil {
		return nil, err
	}
	a, b := r.f.HostSw[src], r.f.HostSw[dst]
	var out []Path
	if r.Threshold > 0 || a == b {
		out = append(out, r.f.HostPath(src, dst, r.leg(a, b, nil)))
		if a == b {
			return out, nil
		}
	}
	for w := range r.f.Sw {
		if w == a || w == b {
			continue
		}
		p := r.f.HostPath(src, dst, r.valiant(a, w, b, nil))
		dup := false
		for _, q := range out {
			dup = dup || q.Equal(p)
		}
		if !dup {
			out = append(out, p)
		}
	}
	return out, nil
}

// FlowRoute draws flow id's Valiant path; for hybrid the flow starts on the switches' tables and takes
// the Valiant path past Threshold bytes (flows no longer than the threshold never leave the tables).
func (r *VLB) FlowRoute(src, dst int, id uint32, size int64) (FlowRoute, error) {
	if err := r.hosts(src, dst); err != nil {
		return FlowRoute{}, err
	}
	h := splitmix(r.seed ^ uint64(src)<<40 ^ uint64(dst)<<20 ^ uint64(id)<<1)
	a, b := r.f.HostSw[src], r.f.HostSw[dst]
	vlb := r.f.HostPath(src, dst, r.Pick(a, b, h))
	if r.Threshold == 0 {
		return FlowRoute{Path: vlb}, nil
	}
	direct := r.f.HostPath(src, dst, r.leg(a, b, nil))
	fr := FlowRoute{Path: direct, Table: true}
	if size > r.Threshold && a != b {
		fr.Then, fr.After = vlb, r.Threshold
	}
	return fr, nil
}

// Intermediate is the Valiant switch (position) entropy h picks for switches a != b: uniform among the
// others.
func (r *VLB) Intermediate(a, b int, h uint64) int {
	n := uint64(len(r.f.Sw) - 2)
	w := int(splitmix(h) % n)
	// Skip a and b in position order so every other switch is equally likely.
	lo, hi := min(a, b), max(a, b)
	if w >= lo {
		w++
	}
	if w >= hi {
		w++
	}
	return w
}

// Pick is the switch-level Valiant path entropy h selects from switch a to switch b: through
// Intermediate(a, b, h), each hop's ECMP member drawn from h as well.
func (r *VLB) Pick(a, b int, h uint64) SwPath {
	if a == b {
		return SwPath{}
	}
	w := r.Intermediate(a, b, h)
	// The legs draw from their own stream: Intermediate already consumed splitmix(h).
	e := h ^ 0x5851f42d4c957f2d
	return r.valiant(a, w, b, &e)
}

// valiant joins a -> w and w -> b and cuts out loops: when the second leg returns to a switch the first
// visited (b on the way to w, or the two legs crossing), the packet goes on from that switch's first
// visit, as a destination ToR that delivers at once would ([R] rule 4). h nil takes lowest ports.
func (r *VLB) valiant(a, w, b int, h *uint64) SwPath {
	p := append(r.leg(a, w, h), r.leg(w, b, h)...)
	return cutLoops(a, p)
}

// cutLoops removes every cycle from a switch path starting at from, keeping first visits.
func cutLoops(from int, p SwPath) SwPath {
	at := map[int]int{from: 0} // switch -> number of arcs kept when it was reached
	out := SwPath{}
	for _, arc := range p {
		if k, seen := at[arc.To]; seen {
			for _, dropped := range out[k:] {
				delete(at, dropped.To)
			}
			out = out[:k]
			at[arc.To] = k
			continue
		}
		out = append(out, arc)
		at[arc.To] = len(out)
	}
	return out
}

// leg is a shortest switch path from a to b: at each hop among the arcs that get one hop closer, the
// lowest port (h nil) or a member drawn from *h, which advances so later hops are independent draws.
func (r *VLB) leg(a, b int, h *uint64) SwPath {
	var p SwPath
	for u := a; u != b; {
		var next []Arc
		for _, arc := range r.f.Out[u] {
			if r.dist[b][arc.To] == r.dist[b][u]-1 {
				next = append(next, arc)
			}
		}
		arc := next[0]
		if h != nil && len(next) > 1 {
			*h = splitmix(*h)
			arc = next[*h%uint64(len(next))]
		}
		p = append(p, arc)
		u = arc.To
	}
	return p
}

func (r *VLB) hosts(src, dst int) error { return r.f.checkPair(r.name, src, dst) }

// splitmix is SplitMix64's finalizer: a full-avalanche hash, so nearby flow ids pick unrelated paths.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
