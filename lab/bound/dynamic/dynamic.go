// Package dynamic is the flow-level arithmetic the Kassing expander thesis compares static fabrics
// with (expander thesis §2.3, §3.1.4, §3.3.3 and Appendices A-C): the "perfect" and
// "restricted" dynamic-topology bounds, the Cerf/Moore lower bound on a regular graph's average
// shortest path they rest on, the equal-cost oversubscribed fat-tree, and the buffering a round-robin
// dynamic topology needs under all-to-all traffic. Every number is computed from the thesis' stated
// inputs; the tests compare with the numbers the thesis prints or
// that follow from its formulas.
package dynamic

import (
	"fmt"
	"math"
)

// Perfect is the per-server throughput of a perfect dynamic topology (zero switching time, perfect
// on-line matching, thesis L324 and §3.3.3): each node couples its dNet dynamic ports straight to its
// destinations, so a server gets dNet/dServer of its link. Not capped at 1: the thesis prints 25/24 =
// 1.042. At equal cost a dynamic port costs δ static ones, so dNet = (static degree)/δ.
func Perfect(dNet, dServer float64) (float64, error) {
	if dNet <= 0 || dServer <= 0 {
		return 0, fmt.Errorf("dynamic: perfect bound needs dNet > 0 and dServer > 0 (got %g, %g)", dNet, dServer)
	}
	return dNet / dServer, nil
}

// Moore is the Cerf et al. lower bound d* on the average shortest path of an r-regular graph on N
// nodes (thesis Appendix C): a node reaches at most r(r-1)^(j-1) nodes at distance j, so d* fills the
// distances 1..K-1 completely and puts the remaining Rest nodes at distance K.
type Moore struct {
	N, Degree int
	K         int     // the largest k with Rest >= 0
	Rest      int     // R = N-1 - Σ_{j<K} r(r-1)^(j-1)
	DStar     float64 // (Σ_{j<K} j·r(r-1)^(j-1) + K·R) / (N-1)
}

// MooreBound evaluates d* for n nodes of degree r. An r-regular simple graph needs n > r.
func MooreBound(n, r int) (Moore, error) {
	if r < 2 || n <= r {
		return Moore{}, fmt.Errorf("dynamic: no %d-regular graph on %d nodes (want degree >= 2 and nodes > degree)", r, n)
	}
	m := Moore{N: n, Degree: r, K: 1, Rest: n - 1}
	var sum float64 // Σ_{j<K} j·r(r-1)^(j-1)
	layer := r      // r(r-1)^(K-1), the most nodes at distance K
	for m.Rest-layer >= 0 {
		m.Rest -= layer
		sum += float64(m.K * layer)
		m.K++
		layer *= r - 1
	}
	m.DStar = (sum + float64(m.K*m.Rest)) / float64(n-1)
	return m, nil
}

// Restricted is the "restricted" dynamic-topology bound (non-zero switching time, no buffering, thesis
// L325 and Appendix C): the best r-regular static network's all-to-all throughput, r/⟨D⟩ per node, with
// ⟨D⟩ at its Cerf bound d*, so r/(d*·s) of a server link for s servers per node. Not capped at 1, as
// the thesis states it (a cap at 1 would never bind for n = 578, r = 25, s = 24 and the
// fractions x >= 0.1 it lists).
func Restricted(n, r, s int) (float64, Moore, error) {
	if s < 1 {
		return 0, Moore{}, fmt.Errorf("dynamic: restricted bound needs servers per node >= 1 (got %d)", s)
	}
	m, err := MooreBound(n, r)
	if err != nil {
		return 0, m, err
	}
	return float64(r) / (m.DStar * float64(s)), m, nil
}

// ActiveNodes is the thesis' "n = α·n_original" for an all-to-all among a fraction x of the nodes,
// rounded to the nearest node: the thesis gives no rounding; the six values of Fig 3.4 we check need the
// nearest one (x = 0.2 of 578 is 115.6: 116 nodes give 0.584, 115 would give 0.585).
func ActiveNodes(n int, x float64) (int, error) {
	if x <= 0 || x > 1 {
		return 0, fmt.Errorf("dynamic: active fraction %g: want a share in (0,1]", x)
	}
	return int(math.Round(x * float64(n))), nil
}

// FatTree is the equal-cost oversubscribed three-layer fat-tree of thesis Appendix B: Total switches
// of Ports ports carrying Servers servers, with the core half the aggregation layer.
type FatTree struct {
	Total, Ports, Servers int
	Bottom, Agg, Core     float64 // switches per layer (fractional, as the thesis solves it)
	X                     float64 // share of a bottom switch's ports that go up
	Throughput            float64 // t = x/(1-x): up-link over server capacity of a bottom switch
}

// EqualCostFatTree solves Appendix B's system: Total = a + 1.5b, 0.5·b = a·x, (1-x)·a = Servers/Ports,
// whose solution is x = (Total·Ports - Servers) / (Total·Ports + 3·Servers).
func EqualCostFatTree(total, ports, servers int) (FatTree, error) {
	ft := FatTree{Total: total, Ports: ports, Servers: servers}
	T, d, n := float64(total), float64(ports), float64(servers)
	if total < 1 || ports < 2 || servers < 1 || n >= T*d {
		return ft, fmt.Errorf("dynamic: %d switches of %d ports cannot carry %d servers and a fabric", total, ports, servers)
	}
	ft.X = (T*d - n) / (T*d + 3*n)
	ft.Bottom = T / (1 + 3*ft.X)
	ft.Agg = 2 * ft.Bottom * ft.X
	ft.Core = ft.Agg / 2
	ft.Throughput = ft.X / (1 - ft.X)
	return ft, nil
}
