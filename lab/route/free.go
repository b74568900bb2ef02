package route

import "github.com/fabriclab/fabriclab/lab/topo"

// free is the analysis-only "any path" routing (docs/architecture.md §Contracts: lab analyze): lab/bound
// solves the unrestricted multicommodity-flow LP for it instead of restricting to listed paths. For flows it
// behaves like shortest, so a spec that names it still runs.
type freeRouter struct{ Router }

func init() { Register("free", newFree) }

func newFree(g *topo.Graph, params map[string]string) (Router, error) {
	s, err := newShortest(g, params)
	if err != nil {
		return nil, err
	}
	return freeRouter{s}, nil
}

func (freeRouter) Name() string { return "free" }
