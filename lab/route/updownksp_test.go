package route

import (
	"fmt"
	"slices"
	"testing"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// The directed up-down graph gives the k shortest up-down paths: all up-down, distinct, physically
// loop-free, and with the same lengths as filtering Yen's undirected enumeration (ties may pick other
// paths of equal length), and more of them where filtering gives up.
func TestUpDownGraphMatchesFilteredYen(t *testing.T) {
	for _, nlp := range []int{1, 2} {
		kv := []string{"switches=16", "s=6", "seed=1", fmt.Sprintf("nlp=%d", nlp)}
		g := topo.MustBuild("fcplus", "switches=16", "s=6", "seed=1", "hosts_per_switch=1")
		f, err := NewFabric(g)
		if err != nil {
			t.Fatal(err)
		}
		ud := newClassGraph(f, nlp)
		sg := f.switchGraph()
		const k = 8
		for a := 0; a < 4; a++ { // four sources keep the unit test fast (Yen on 128 undirected paths)
			for b := range f.Sw {
				if a == b {
					continue
				}
				got := ud.paths(a, b, k)
				var gotLen, wantLen []int
				seen := map[string]bool{}
				for _, sp := range got {
					if f.DownUps(sp) > nlp-1 {
						t.Fatalf("%v: s%d->s%d path %v has %d down-up turns", kv, a, b, sp.Switches(a), f.DownUps(sp))
					}
					key := string(rune(len(sp)))
					for _, x := range sp {
						key += string(rune(x.Link + 1))
					}
					if seen[key] {
						t.Fatalf("%v: s%d->s%d path listed twice", kv, a, b)
					}
					seen[key] = true
					sw := sp.Switches(a)
					if sw[len(sw)-1] != b || len(slices.Compact(slices.Sorted(slices.Values(sw)))) != len(sw) {
						t.Fatalf("%v: s%d->s%d bad path %v", kv, a, b, sw)
					}
					gotLen = append(gotLen, len(sp))
				}
				all, err := f.Yen(sg, a, b, 16*k)
				if err != nil {
					t.Fatal(err)
				}
				for _, sp := range all {
					if f.DownUps(sp) <= nlp-1 && len(wantLen) < k {
						wantLen = append(wantLen, len(sp))
					}
				}
				// The filtered enumeration stops at 16k paths and may find fewer than k; what it finds must
				// be the same lengths.
				if len(gotLen) < len(wantLen) || !slices.Equal(gotLen[:len(wantLen)], wantLen) {
					t.Errorf("%v: s%d->s%d lengths %v, filtered Yen %v", kv, a, b, gotLen, wantLen)
				}
			}
		}
	}
}

// fc's paths are up-down, pairwise disjoint in directed trunk arcs, and as many as the max flow: never
// fewer than the greedy choice from Yen's order finds.
func TestFCDisjointByMaxFlow(t *testing.T) {
	g := topo.MustBuild("fc", "switches=16", "s=8", "seed=1", "hosts_per_switch=1")
	f, _ := NewFabric(g)
	r, err := New("fc", g, nil)
	if err != nil {
		t.Fatal(err)
	}
	df, _ := New("dfksp", g, map[string]string{"k": "64", "lossless_priorities": "1"})
	total, greedyTotal, pairs := 0, 0, 0
	for a := range f.Sw {
		for b := range f.Sw {
			if a == b {
				continue
			}
			ps, err := r.(*switchRouter).SwitchPaths(a, b)
			if err != nil {
				t.Fatal(err)
			}
			used := map[[2]int]bool{}
			for _, sp := range ps {
				if f.DownUps(sp) != 0 {
					t.Fatalf("s%d->s%d: path %v not up-down", a, b, sp.Switches(a))
				}
				for _, x := range sp {
					k := [2]int{x.Link, x.From}
					if used[k] {
						t.Fatalf("s%d->s%d: paths share arc %v", a, b, k)
					}
					used[k] = true
				}
			}
			all, _ := df.(*DFKSP).SwitchPaths(a, b)
			greedy := map[[2]int]bool{}
			n := 0
			for _, sp := range all {
				free := true
				for _, x := range sp {
					free = free && !greedy[[2]int{x.Link, x.From}]
				}
				if free {
					for _, x := range sp {
						greedy[[2]int{x.Link, x.From}] = true
					}
					n++
				}
			}
			if len(ps) < n {
				t.Errorf("s%d->s%d: max flow %d paths, greedy %d", a, b, len(ps), n)
			}
			total += len(ps)
			greedyTotal += n
			pairs++
		}
	}
	t.Logf("FC N=16 s=8: %.2f disjoint paths per pair by max flow, %.2f greedy", float64(total)/float64(pairs), float64(greedyTotal)/float64(pairs))
}

// FilterDepth counts Yen's paths up to the k-th with few enough down-up turns: at least k, exactly k
// with no turn limit that binds (nlp large), and the depth's last path is one that is kept.
func TestFilterDepth(t *testing.T) {
	g := topo.MustBuild("fcplus", "switches=16", "s=6", "seed=1", "hosts_per_switch=1")
	f, err := NewFabric(g)
	if err != nil {
		t.Fatal(err)
	}
	sg := f.SwitchGraph()
	deeper := 0
	for b := 1; b < 8; b++ {
		d, ok, err := f.FilterDepth(sg, 0, b, 4, 1, 256)
		if err != nil || !ok || d < 4 {
			t.Fatalf("s0->s%d: depth %d ok %v err %v", b, d, ok, err)
		}
		all, _ := f.Yen(sg, 0, b, d)
		if f.DownUps(all[d-1]) != 0 {
			t.Errorf("s0->s%d: the %d-th path has %d down-up turns", b, d, f.DownUps(all[d-1]))
		}
		if d > 4 {
			deeper++
		}
		if d2, ok, _ := f.FilterDepth(sg, 0, b, 4, 99, 256); !ok || d2 != 4 {
			t.Errorf("s0->s%d: no turn limit, depth %d", b, d2)
		}
	}
	if deeper == 0 {
		t.Error("1L filtering never had to read past k: the test does not exercise the filter")
	}
}
