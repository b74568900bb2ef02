package traffic

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/fabriclab/fabriclab/clock"
)

// Choose picks floor(len(hosts) x fraction) hosts at random (at least 2), returned sorted. fraction 1
// keeps them all, in order.
func Choose(r *rand.Rand, hosts []int, fraction float64) ([]int, error) {
	if !(fraction > 0 && fraction <= 1) {
		return nil, fmt.Errorf("fraction %v is not in (0, 1]", fraction)
	}
	m := int(math.Floor(float64(len(hosts))*fraction + 1e-9))
	if m < 2 {
		return nil, fmt.Errorf("fraction %v of %d hosts leaves %d: at least 2 must take part", fraction, len(hosts), m)
	}
	c := append([]int(nil), hosts...)
	if m < len(c) {
		r.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		c = c[:m]
	}
	sort.Ints(c)
	return c, nil
}

// Permutation is a random derangement of hosts: every host sends to exactly one other and receives from
// exactly one. It is one cycle through all of them in a random order (Sattolo's shuffle), so no host
// sends to itself and no pair of hosts just swaps traffic (for 3 or more hosts).
func Permutation(r *rand.Rand, hosts []int) Matrix {
	n := len(hosts)
	p := r.Perm(n)
	cyc := make([]int, n)
	for i := range cyc {
		cyc[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := r.IntN(i)
		cyc[i], cyc[j] = cyc[j], cyc[i]
	}
	var m Matrix
	for i := 0; i < n; i++ {
		src, dst := hosts[p[i]], hosts[p[cyc[i]]]
		m.Src, m.Dst = append(m.Src, src), append(m.Dst, []int{dst})
	}
	return m
}

// Groups splits hosts by their group number (Dragonfly group, fat-tree pod), groups in ascending order.
func Groups(hosts []int, group func(host int) int) [][]int {
	by := map[int][]int{}
	var keys []int
	for _, h := range hosts {
		g := group(h)
		if _, ok := by[g]; !ok {
			keys = append(keys, g)
		}
		by[g] = append(by[g], h)
	}
	sort.Ints(keys)
	out := make([][]int, len(keys))
	for i, k := range keys {
		out[i] = by[k]
	}
	return out
}

// Adv1 is Dragonfly's ADV1 adversarial pattern as a shift: every host of group i sends to hosts of group
// i+1 (mod the number of groups), uniformly (telemetry paper §IV-A uses one random pair of groups;
// the shift loads every group's global links the same way and is the common simulator form).
func Adv1(groups [][]int) (Matrix, error) {
	if len(groups) < 2 {
		return Matrix{}, fmt.Errorf("adv1 needs at least 2 groups, the topology has %d", len(groups))
	}
	var m Matrix
	for i, g := range groups {
		next := groups[(i+1)%len(groups)]
		for _, h := range g {
			m.Src, m.Dst = append(m.Src, h), append(m.Dst, next)
		}
	}
	return m, nil
}

// Adv1Pair is ADV1 as the telemetry paper draws it (telemetry paper §IV-A): two distinct random
// groups, every host of the first sends to hosts of the second uniformly. It returns the two groups.
func Adv1Pair(r *rand.Rand, groups [][]int) (Matrix, [2]int, error) {
	if len(groups) < 2 {
		return Matrix{}, [2]int{}, fmt.Errorf("adv1 needs at least 2 groups, the topology has %d", len(groups))
	}
	a := r.IntN(len(groups))
	b := r.IntN(len(groups) - 1)
	if b >= a {
		b++
	}
	var m Matrix
	for _, h := range groups[a] {
		m.Src, m.Dst = append(m.Src, h), append(m.Dst, groups[b])
	}
	return m, [2]int{a, b}, nil
}

// Unf is Dragonfly's UNF (telemetry paper §IV-A): every host sends to hosts outside its own group,
// uniformly.
func Unf(groups [][]int) (Matrix, error) {
	if len(groups) < 2 {
		return Matrix{}, fmt.Errorf("unf needs at least 2 groups, the topology has %d", len(groups))
	}
	var m Matrix
	for i, g := range groups {
		var others []int
		for j, o := range groups {
			if j != i {
				others = append(others, o...)
			}
		}
		for _, h := range g {
			m.Src, m.Dst = append(m.Src, h), append(m.Dst, others)
		}
	}
	return m, nil
}

// Connections is n flows of size bytes at at, each between a source drawn uniformly from m's sources
// and a destination drawn from its row: the telemetry paper's load axis, "N source-destination pairs"
// (a pair may be drawn more than once, as N exceeds the distinct pairs).
func Connections(r *rand.Rand, m Matrix, n int, size int64, at clock.Time, class string) (Schedule, error) {
	if n <= 0 || size <= 0 {
		return nil, fmt.Errorf("connections and size must be positive, got %d and %d", n, size)
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	s := make(Schedule, 0, n)
	for k := 0; k < n; k++ {
		i := r.IntN(len(m.Src))
		s = append(s, Flow{Src: m.Src[i], Dst: m.pick(r, i), Size: size, At: at, Class: class})
	}
	return s.number(), nil
}

// Adv2 is Dragonfly's ADV2: one random group receives, every host of every other group sends to it
// uniformly (a group-level incast, telemetry paper §IV-A).
func Adv2(r *rand.Rand, groups [][]int) (Matrix, int, error) {
	if len(groups) < 2 {
		return Matrix{}, 0, fmt.Errorf("adv2 needs at least 2 groups, the topology has %d", len(groups))
	}
	target := r.IntN(len(groups))
	var m Matrix
	for i, g := range groups {
		if i == target {
			continue
		}
		for _, h := range g {
			m.Src, m.Dst = append(m.Src, h), append(m.Dst, groups[target])
		}
	}
	return m, target, nil
}

// Once is one flow of size bytes at at for every (source, destination) of m: every destination of a row
// (all-to-all, permutation), or one drawn per source when draw is set (ADV patterns).
func Once(r *rand.Rand, m Matrix, size int64, at clock.Time, draw bool, class string) (Schedule, error) {
	if size <= 0 {
		return nil, fmt.Errorf("size must be positive, got %d", size)
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	var s Schedule
	for i, src := range m.Src {
		if draw {
			s = append(s, Flow{Src: src, Dst: m.pick(r, i), Size: size, At: at, Class: class})
			continue
		}
		for _, dst := range m.Dst[i] {
			s = append(s, Flow{Src: src, Dst: dst, Size: size, At: at, Class: class})
		}
	}
	return s.number(), nil
}

// Skewed is a ProjecToR-style skewed rack-to-rack matrix (expander thesis §4.3.2; the released
// 128-ToR ProjecToR probabilities are not available here): every rack i gets a sender weight a_i and a
// receiver weight b_j, each rank^-zipf over its own random order of the racks, a rack pair (i != j) has
// probability a_i b_j / sum, split evenly over its host pairs. zipf 0 is uniform over rack pairs. It
// returns each (src, dst) host pair with its probability, the pairs of one source adjacent.
func Skewed(r *rand.Rand, racks [][]int, zipf float64) ([][2]int, []float64, error) {
	if len(racks) < 2 {
		return nil, nil, fmt.Errorf("a skewed matrix needs at least 2 racks, got %d", len(racks))
	}
	if zipf < 0 || math.IsNaN(zipf) {
		return nil, nil, fmt.Errorf("zipf %v must be non-negative", zipf)
	}
	weights := func() []float64 {
		w := make([]float64, len(racks))
		for rank, i := range r.Perm(len(racks)) {
			w[i] = math.Pow(float64(rank+1), -zipf)
		}
		return w
	}
	a, b := weights(), weights()
	var pairs [][2]int
	var p []float64
	var sum float64
	for i, ri := range racks {
		for j, rj := range racks {
			if i == j {
				continue
			}
			w := a[i] * b[j] / float64(len(ri)*len(rj))
			for _, s := range ri {
				for _, d := range rj {
					pairs = append(pairs, [2]int{s, d})
					p = append(p, w)
					sum += w
				}
			}
		}
	}
	for k := range p {
		p[k] /= sum
	}
	return pairs, p, nil
}

// PairPoisson is network-wide Poisson arrivals at lambda flows per second from start for duration, each
// flow's (src, dst) drawn from pairs with probabilities p (the thesis' λ with a pair distribution).
func PairPoisson(r *rand.Rand, pairs [][2]int, p []float64, lambda float64, sizes SizeDist, start, duration clock.Time, class string) (Schedule, error) {
	if len(pairs) == 0 || len(p) != len(pairs) {
		return nil, fmt.Errorf("no pairs to draw from")
	}
	if !(lambda > 0) || duration <= 0 || sizes == nil {
		return nil, fmt.Errorf("lambda %v, duration %v and a size distribution are required", lambda, duration)
	}
	cum := make([]float64, len(p))
	var c float64
	for i, x := range p {
		c += x
		cum[i] = c
	}
	end := clock.Add(start, duration)
	var s Schedule
	for t := start; ; {
		t = clock.Add(t, clock.FromSeconds(r.ExpFloat64()/lambda))
		if t >= end {
			break
		}
		k := sort.SearchFloat64s(cum, r.Float64()*c)
		k = min(k, len(pairs)-1)
		s = append(s, Flow{Src: pairs[k][0], Dst: pairs[k][1], Size: sizes.Sample(r), At: t, Class: class})
	}
	return s.number(), nil
}
