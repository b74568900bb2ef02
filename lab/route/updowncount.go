package route

import (
	"fmt"
	"runtime"
	"sync"
)

// PathCounts is how many switch paths with at most nlp-1 down-up turns (nlp = 1: the up-down paths of
// FC and FC+) join the ordered pairs of distinct switches, by length: ByHops[h] sums over all Pairs the
// paths of h switch-to-switch links. It is every such path, not DF-KSP's K of them (FC+ paper Tables
// III and IV count N_P, N_P6 and N_P4 this way).
type PathCounts struct {
	Pairs  int
	ByHops []int64
}

// PerPair is the mean number of paths per ordered pair within maxHops links (maxHops < 0: any length).
func (c PathCounts) PerPair(maxHops int) float64 {
	if c.Pairs == 0 {
		return 0
	}
	var n int64
	for h, x := range c.ByHops {
		if maxHops < 0 || h <= maxHops {
			n += x
		}
	}
	return float64(n) / float64(c.Pairs)
}

// CountUpDownPaths counts, for every ordered pair of distinct switches, the paths of at most maxHops
// links (maxHops < 0: no limit; an up-down path has at most 2(k-1) links anyway) that are simple in
// switches, as DF-KSP's are, and have at most nlp-1 down-up turns, intra-switch moves included (FC+
// paper §III-B). A path of the class graph (updownksp.go) is one such physical path and every one is a
// path there, so a depth-first walk of it from each switch's start state, never entering a switch twice,
// visits each counted path exactly once: the cost is the number of paths times the out-degree, with no
// list of paths kept. Sources are split among GOMAXPROCS workers.
func (f *Fabric) CountUpDownPaths(nlp, maxHops int) (PathCounts, error) {
	if nlp < 1 {
		return PathCounts{}, fmt.Errorf("count up-down paths: lossless priorities %d, want at least 1", nlp)
	}
	succ, sw, start := f.classCSR(nlp)
	n := len(f.Sw)
	out := PathCounts{Pairs: n * (n - 1)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := &pathDFS{succ: succ, sw: sw, seen: make([]bool, n), max: maxHops}
			for a := range next {
				d.seen[a] = true
				d.walk(start[a], 0)
				d.seen[a] = false
			}
			mu.Lock()
			for h, x := range d.by {
				for len(out.ByHops) <= h {
					out.ByHops = append(out.ByHops, 0)
				}
				out.ByHops[h] += x
			}
			mu.Unlock()
		}()
	}
	for a := 0; a < n; a++ {
		next <- a
	}
	close(next)
	wg.Wait()
	return out, nil
}

// classCSR flattens the class graph for the walk: succ[id] are the states one trunk arc away from state
// id (sink arcs dropped), sw[id] the switch of a state, start[a] switch a's start state.
func (f *Fabric) classCSR(nlp int) (succ [][]int32, sw []int32, start []int32) {
	u := newClassGraph(f, nlp)
	sink := make(map[int64]bool, len(u.sink))
	for _, id := range u.sink {
		sink[id] = true
	}
	succ = make([][]int32, len(u.sw))
	sw = make([]int32, len(u.sw))
	for id := range u.sw {
		sw[id] = int32(u.sw[id])
		if sink[int64(id)] {
			continue
		}
		for it := u.g.From(int64(id)); it.Next(); {
			if t := it.Node().ID(); !sink[t] {
				succ[id] = append(succ[id], int32(t))
			}
		}
	}
	for _, id := range u.start {
		start = append(start, int32(id))
	}
	return succ, sw, start
}

// pathDFS is one worker's depth-first walk: seen marks the switches on the current path.
type pathDFS struct {
	succ [][]int32
	sw   []int32
	seen []bool
	max  int
	by   []int64
}

func (d *pathDFS) walk(state int32, depth int) {
	if len(d.by) <= depth+1 {
		d.by = append(d.by, make([]int64, depth+2-len(d.by))...)
	}
	for _, t := range d.succ[state] {
		b := d.sw[t]
		if d.seen[b] {
			continue
		}
		d.by[depth+1]++
		if d.max < 0 || depth+1 < d.max {
			d.seen[b] = true
			d.walk(t, depth+1)
			d.seen[b] = false
		}
	}
}
