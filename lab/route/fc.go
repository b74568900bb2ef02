package route

import (
	"fmt"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// fc is the FC paper's routing baseline as the FC+ paper describes it (fcplus.md §2.4, §10.6): up-down
// paths only (one lossless priority), pairwise edge-disjoint. Here the disjoint set is chosen greedily,
// shortest first, from up to max_paths×2 up-down paths in Yen order: a lower bound on the max-flow
// count FC uses, kept because it is what a path table over the same enumeration can install.
func init() { Register("fc", newFC) }

func newFC(g *topo.Graph, params map[string]string) (Router, error) {
	if err := CheckParams("fc", params, "max_paths"); err != nil {
		return nil, err
	}
	limit, err := IntParam("fc", params, "max_paths", 8)
	if err != nil {
		return nil, err
	}
	inner, err := newDFKSP(g, map[string]string{"k": fmt.Sprint(limit * 2), "lossless_priorities": "1"})
	if err != nil {
		return nil, fmt.Errorf("routing fc: %w", err)
	}
	df := inner.(*DFKSP)
	return newSwitchRouter("fc", df.f, func(a, b int) ([]SwPath, error) {
		all, err := df.SwitchPaths(a, b)
		if err != nil {
			return nil, err
		}
		used := map[int]bool{}
		var out []SwPath
		for _, sp := range all {
			free := true
			for _, x := range sp {
				free = free && !used[x.Link]
			}
			if !free {
				continue
			}
			for _, x := range sp {
				used[x.Link] = true
			}
			out = append(out, sp)
			if len(out) == limit {
				break
			}
		}
		return out, nil
	}), nil
}
