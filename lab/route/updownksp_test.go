package route

import (
	"slices"
	"testing"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// The directed up-down graph gives the k shortest up-down paths: all up-down, distinct, physically
// loop-free, and with the same lengths as filtering Yen's undirected enumeration (ties may pick other
// paths of equal length), and more of them where filtering gives up.
func TestUpDownGraphMatchesFilteredYen(t *testing.T) {
	for _, kv := range [][]string{{"switches=16", "s=6", "seed=1"}} {
		g := topo.MustBuild("fcplus", append(kv, "hosts_per_switch=1")...)
		f, err := NewFabric(g)
		if err != nil {
			t.Fatal(err)
		}
		ud := newUpDownGraph(f)
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
					if f.DownUps(sp) != 0 {
						t.Fatalf("%v: s%d->s%d path %v is not up-down", kv, a, b, sp.Switches(a))
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
					if f.DownUps(sp) == 0 && len(wantLen) < k {
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
