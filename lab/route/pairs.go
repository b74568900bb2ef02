package route

import (
	"fmt"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// PairPaths is a router's paths between every ordered pair of representative hosts: on switch-centric
// fabrics one host per switch (every host pair between the same two switches shares the switch-level
// paths, so the channel dependencies and link loads are the same), on server-centric fabrics every host.
func PairPaths(g *topo.Graph, r Router) ([][]Path, error) {
	var reps []int
	if f, err := NewFabric(g); err == nil {
		seen := map[int]bool{}
		for h, s := range f.HostSw {
			if !seen[s] {
				seen[s] = true
				reps = append(reps, h)
			}
		}
	} else {
		for h := range g.Hosts {
			reps = append(reps, h)
		}
	}
	var out [][]Path
	for _, a := range reps {
		for _, b := range reps {
			if a == b {
				continue
			}
			ps, err := r.Paths(a, b)
			if err != nil {
				return nil, fmt.Errorf("h%d -> h%d: %w", a, b, err)
			}
			out = append(out, ps)
		}
	}
	return out, nil
}
