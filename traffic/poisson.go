package traffic

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/fabriclab/fabriclab/clock"
)

// Matrix says who sends to whom: each source in Src draws its destinations from the matching row of
// Dst, uniformly, or by the row's Weight when given.
type Matrix struct {
	Src    []int
	Dst    [][]int
	Weight [][]float64 // nil: uniform within each row
}

// Uniform is every host in hosts sending to every other one of them, uniformly (HPCC's convention).
func Uniform(hosts []int) Matrix {
	var m Matrix
	for _, s := range hosts {
		var row []int
		for _, d := range hosts {
			if d != s {
				row = append(row, d)
			}
		}
		m.Src, m.Dst = append(m.Src, s), append(m.Dst, row)
	}
	return m
}

// Pairs is the matrix of the listed (src, dst) pairs: a pair listed twice is drawn twice as often by its
// source.
func Pairs(pairs [][2]int) Matrix {
	row := map[int]int{}
	var m Matrix
	for _, p := range pairs {
		i, ok := row[p[0]]
		if !ok {
			i = len(m.Src)
			row[p[0]] = i
			m.Src, m.Dst = append(m.Src, p[0]), append(m.Dst, nil)
		}
		m.Dst[i] = append(m.Dst[i], p[1])
	}
	return m
}

func (m Matrix) check() error {
	if len(m.Src) == 0 {
		return fmt.Errorf("no source hosts")
	}
	if len(m.Dst) != len(m.Src) || (m.Weight != nil && len(m.Weight) != len(m.Src)) {
		return fmt.Errorf("matrix rows do not match its sources")
	}
	for i, s := range m.Src {
		if len(m.Dst[i]) == 0 {
			return fmt.Errorf("host h%d has no destination", s)
		}
		for _, d := range m.Dst[i] {
			if d == s {
				return fmt.Errorf("host h%d sends to itself", s)
			}
		}
		if m.Weight != nil {
			if len(m.Weight[i]) != len(m.Dst[i]) {
				return fmt.Errorf("host h%d: %d weights for %d destinations", s, len(m.Weight[i]), len(m.Dst[i]))
			}
			var sum float64
			for _, w := range m.Weight[i] {
				if w < 0 || math.IsNaN(w) {
					return fmt.Errorf("host h%d: weight %v", s, w)
				}
				sum += w
			}
			if sum <= 0 {
				return fmt.Errorf("host h%d: weights sum to zero", s)
			}
		}
	}
	return nil
}

// pick draws a destination from row i.
func (m Matrix) pick(r *rand.Rand, i int) int {
	row := m.Dst[i]
	if m.Weight == nil {
		return row[r.IntN(len(row))]
	}
	return row[weighted(r, m.Weight[i])]
}

func weighted(r *rand.Rand, w []float64) int {
	var sum float64
	for _, x := range w {
		sum += x
	}
	u := r.Float64() * sum
	for i, x := range w {
		if u < x {
			return i
		}
		u -= x
	}
	return len(w) - 1
}

// Arrivals is a Poisson source (the HPCC simulator's traffic_gen convention): every source host is an
// independent Poisson process whose mean inter-arrival is mean_size*8 / (rate*load), so the bytes it
// offers average load x its link rate; sizes come from Sizes and destinations from Matrix.
type Arrivals struct {
	Sizes    SizeDist
	RateBps  float64 // each source's link rate
	Load     float64 // offered load per source link, (0, 1]
	Start    clock.Time
	Duration clock.Time // arrivals in [Start, Start+Duration)
	Matrix   Matrix
	Class    string
}

// Poisson generates the arrivals of a. Each source draws from the one RNG in source order, so the
// schedule is a pure function of the seed.
func Poisson(r *rand.Rand, a Arrivals) (Schedule, error) {
	if a.Sizes == nil {
		return nil, fmt.Errorf("poisson: no flow-size distribution")
	}
	mean := a.Sizes.Mean()
	switch {
	case !(mean > 0):
		return nil, fmt.Errorf("poisson: the flow-size distribution has mean %v", mean)
	case !(a.RateBps > 0):
		return nil, fmt.Errorf("poisson: link rate %v must be positive", a.RateBps)
	case !(a.Load > 0 && a.Load <= 1):
		return nil, fmt.Errorf("poisson: load %v is not in (0, 1]", a.Load)
	case a.Duration <= 0:
		return nil, fmt.Errorf("poisson: duration %v must be positive", a.Duration)
	}
	if err := a.Matrix.check(); err != nil {
		return nil, fmt.Errorf("poisson: %w", err)
	}
	gap := mean * 8 / (a.RateBps * a.Load) // mean inter-arrival, seconds
	end := clock.Add(a.Start, a.Duration)
	var s Schedule
	for i, src := range a.Matrix.Src {
		t := a.Start
		for {
			// Saturating: a gap beyond the clock's range (load 1e-12) ends the arrivals instead of
			// wrapping to a negative time that would run first.
			t = clock.Add(t, clock.FromSeconds(r.ExpFloat64()*gap))
			if t >= end {
				break
			}
			s = append(s, Flow{Src: src, Dst: a.Matrix.pick(r, i), Size: a.Sizes.Sample(r), At: t, Class: a.Class})
		}
	}
	sort.SliceStable(s, func(i, j int) bool { return s[i].At < s[j].At })
	return s.number(), nil
}

// IncastArrivals is Poisson-arriving incasts (HPCC's incast background, e.g. 2% load of 60->1 x 500 KB):
// events arrive so that incast bytes average Load of the participating hosts' link capacity
// (rate x len(Hosts)); each event picks a random receiver and Senders random other hosts, each sending
// Size bytes.
type IncastArrivals struct {
	Hosts    []int
	Senders  int
	Size     int64
	RateBps  float64
	Load     float64
	Start    clock.Time
	Duration clock.Time
	Class    string
}

// PoissonIncast generates a's incast events.
func PoissonIncast(r *rand.Rand, a IncastArrivals) (Schedule, error) {
	n := len(a.Hosts)
	switch {
	case a.Senders < 1 || a.Senders > n-1:
		return nil, fmt.Errorf("incast: senders must be 1..%d (hosts other than the receiver), got %d", n-1, a.Senders)
	case a.Size <= 0:
		return nil, fmt.Errorf("incast: size must be positive, got %d", a.Size)
	case !(a.RateBps > 0):
		return nil, fmt.Errorf("incast: link rate %v must be positive", a.RateBps)
	case !(a.Load > 0 && a.Load <= 1):
		return nil, fmt.Errorf("incast: load %v is not in (0, 1]", a.Load)
	case a.Duration <= 0:
		return nil, fmt.Errorf("incast: duration %v must be positive", a.Duration)
	}
	perEvent := float64(a.Senders) * float64(a.Size) * 8
	gap := perEvent / (a.RateBps * float64(n) * a.Load)
	var s Schedule
	t, end := a.Start, clock.Add(a.Start, a.Duration)
	for {
		t = clock.Add(t, clock.FromSeconds(r.ExpFloat64()*gap))
		if t >= end {
			break
		}
		recv := a.Hosts[r.IntN(n)]
		others := make([]int, 0, n-1)
		for _, h := range a.Hosts {
			if h != recv {
				others = append(others, h)
			}
		}
		r.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
		snd := others[:a.Senders]
		sort.Ints(snd)
		for _, src := range snd {
			s = append(s, Flow{Src: src, Dst: recv, Size: a.Size, At: t, Class: a.Class})
		}
	}
	return s.number(), nil
}

// OfferedLoad is the schedule's bytes over [from, to) divided by the capacity of hosts links of rate
// rateBps over that span: what Poisson's Load should come out as.
func OfferedLoad(s Schedule, hosts int, rateBps float64, from, to clock.Time) float64 {
	var bytes float64
	for _, f := range s {
		if f.At >= from && f.At < to {
			bytes += float64(f.Size)
		}
	}
	return bytes * 8 / (rateBps * float64(hosts) * (to - from).Seconds())
}
