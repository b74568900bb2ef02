package route

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// ATE is PortFC's Asymmetric Traffic Engineering (Algorithm 5, §III-E) for NDC/BCube, Rail-only above
// all: the candidates of a pair are its minimal BCube digit-correction paths with distinct first hops,
// the one whose first hop is the layer-0 switch (the high-bandwidth domain in a Rail-only NDC) first.
// For k = 1 a pair differing in both digits has two: HBD first then ND, or ND first then HBD; a pair
// differing in one digit has only its direct path and keeps it. The sending NIC picks, per flow at
// its start, the first with probability w^H and an ND-first one otherwise (nodes/ate.go); the router
// only lists them and carries p.
type ATE struct {
	g *topo.Graph
	// P is the asymmetric threshold p (routing.p, the paper's 0.9 by default).
	P float64
	// Measure is what the NICs count as T^H (routing.measure, nodes.ATEConfig.Measure): "inflight"
	// ("" too), "assigned" or "offered".
	Measure string
}

// DefaultATEP is the paper's "generally set to 0.9".
const DefaultATEP = 0.9

func init() {
	Register("ate", func(g *topo.Graph, params map[string]string) (Router, error) {
		// seed is accepted because the lab passes the spec's seed to every randomized algorithm; the
		// draws are the NIC's, from its own seed.
		if err := CheckParams("ate", params, "p", "measure", "seed"); err != nil {
			return nil, err
		}
		a, err := NewATE(g, params["p"])
		if err != nil {
			return nil, err
		}
		switch m := params["measure"]; m {
		case "", "inflight", "assigned", "offered":
			a.Measure = m
		default:
			return nil, fmt.Errorf("routing ate: measure=%q, want inflight (bytes sent, not acknowledged), assigned (every byte of the flows on the HBD not yet acknowledged) or offered (rate of bytes put on the HBD)", m)
		}
		return a, nil
	})
}

// NewATE binds ATE to g, an NDC topology; p is routing.p as written ("" = DefaultATEP).
func NewATE(g *topo.Graph, p string) (*ATE, error) {
	if g.Family != "ndc" {
		return nil, fmt.Errorf("routing ate needs an NDC topology (family ndc, rail=true for the Rail-only HBD/ND split it is made for): its candidates are BCube first hops, got family %s", g.Family)
	}
	for _, h := range g.Hosts {
		if len(g.Nodes[h].Addr) == 0 {
			return nil, fmt.Errorf("routing ate: %s has no BCube address", g.Nodes[h].Name)
		}
	}
	a := &ATE{g: g, P: DefaultATEP}
	if p != "" {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(v > 0 && v < 1) {
			return nil, fmt.Errorf("routing ate: p=%q, want a number in (0,1) (the HBD share ATE fills before spilling to the ND)", p)
		}
		a.P = v
	}
	return a, nil
}

func (a *ATE) Name() string       { return "ate" }
func (a *ATE) PathSelect() string { return "ate" }

// Paths returns the minimal BCube paths with distinct first-hop layers, lowest layer first (layer 0,
// the HBD, is what static bcube routing also takes first). BCube's parallel path i corrects digit i
// first, so among the minimal ones each first hop appears once; detours (digit i already right) are
// longer and left out: ATE moves a flow's first hop, not its length.
func (a *ATE) Paths(src, dst int) ([]Path, error) {
	par, err := BCubePaths(a.g, src, dst)
	if err != nil {
		return nil, err
	}
	best := par[0].Hops()
	for _, p := range par {
		best = min(best, p.Hops())
	}
	var out []Path
	seen := map[int]bool{}
	for _, p := range par { // index order is first-corrected digit order: layer 0 first
		if p.Hops() != best || seen[p.Nodes[1]] {
			continue
		}
		seen[p.Nodes[1]] = true
		out = append(out, p)
	}
	return out, nil
}
