package topo

import "math"

func init() {
	register("fattree", []paramSpec{{name: "k", required: true}, {name: "core_fraction", def: "0"}, {name: "server_links", def: "true"}}, buildFatTree)
}

// buildFatTree builds the k-ary three-tier fat-tree (expander thesis §2.1): k pods of k/2 edge and
// k/2 aggregation switches, (k/2)^2 core switches, k^3/4 hosts (k/2 per edge switch).
//
// Numbering: hosts by edge switch (h0..h(k/2−1) on edge switch 0 of pod 0, ...). Switches: all edge
// switches pod by pod, then all aggregation switches pod by pod, then the core switches that remain.
// Node.Layer is the tier (0 edge, 1 aggregation, 2 core); Node.Group is the pod for hosts, edge and
// aggregation switches (core switches belong to no pod and keep 0). Node.Addr is [pod, index in pod] for
// edge/aggregation switches and [j, c] for core switch c of core group j, the group that aggregation
// switch j of every pod connects to.
//
// Ports: an edge switch has its hosts first, then aggregation switches 0..k/2−1 of its pod; an
// aggregation switch has edge switches 0..k/2−1 of its pod, then its core group in order; a core switch
// has pods 0..k−1 in order.
//
// core_fraction removes round(core_fraction·(k/2)^2) core switches for oversubscription, the thesis'
// "remove β% of the core uniformly": removal takes the highest-numbered core of group 0, then of group
// 1, ..., then the next-highest of each group, so aggregation switches keep up-link counts that differ
// by at most one. At least one core switch must remain, otherwise pods are disconnected.
func buildFatTree(p *params) (*Graph, error) {
	k, err := p.int("k", 2)
	if err != nil {
		return nil, err
	}
	if k%2 != 0 {
		return nil, p.errf("k", "must be even")
	}
	if k*k*k/4+5*k*k/4 > maxNodes {
		return nil, p.errf("k", "fat-tree with more than %d nodes", maxNodes)
	}
	frac, err := p.float("core_fraction")
	if err != nil {
		return nil, err
	}
	if frac < 0 || frac >= 1 || math.IsNaN(frac) {
		return nil, p.errf("core_fraction", "must be in [0,1)")
	}
	half := k / 2
	cores := half * half
	remove := int(math.Round(frac * float64(cores)))
	if remove >= cores {
		return nil, p.errf("core_fraction", "removes all %d core switches", cores)
	}
	// keep[j][c]: whether core c of group j survives.
	keep := make([][]bool, half)
	for j := range keep {
		keep[j] = make([]bool, half)
		for c := range keep[j] {
			keep[j][c] = true
		}
	}
	for r := 0; r < remove; r++ {
		keep[r%half][half-1-r/half] = false
	}

	b := p.builder()
	g := b.G
	edge := make([][]int, k)
	agg := make([][]int, k)
	for pod := 0; pod < k; pod++ {
		for i := 0; i < half; i++ {
			s := b.AddSwitch()
			g.Nodes[s].Layer, g.Nodes[s].Group, g.Nodes[s].Addr = 0, pod, []int{pod, i}
			edge[pod] = append(edge[pod], s)
		}
	}
	for pod := 0; pod < k; pod++ {
		for i := 0; i < half; i++ {
			s := b.AddSwitch()
			g.Nodes[s].Layer, g.Nodes[s].Group, g.Nodes[s].Addr = 1, pod, []int{pod, i}
			agg[pod] = append(agg[pod], s)
		}
	}
	core := make([][]int, half) // -1 where removed
	for j := 0; j < half; j++ {
		for c := 0; c < half; c++ {
			if !keep[j][c] {
				core[j] = append(core[j], -1)
				continue
			}
			s := b.AddSwitch()
			g.Nodes[s].Layer, g.Nodes[s].Addr = 2, []int{j, c}
			core[j] = append(core[j], s)
		}
	}
	var edges []int
	for pod := 0; pod < k; pod++ {
		edges = append(edges, edge[pod]...)
	}
	counts := make([]int, len(edges))
	for i := range counts {
		counts[i] = half
	}
	b.attachHosts(edges, counts)
	for pod := 0; pod < k; pod++ {
		for _, e := range edge[pod] {
			for _, a := range agg[pod] {
				b.Connect(e, a)
			}
		}
	}
	// Aggregation-major order makes each core switch meet pods in increasing order.
	for pod := 0; pod < k; pod++ {
		for j, a := range agg[pod] {
			for _, c := range core[j] {
				if c >= 0 {
					b.Connect(a, c)
				}
			}
		}
	}
	return g, nil
}
