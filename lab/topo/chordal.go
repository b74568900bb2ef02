package topo

import "math/rand/v2"

// Random trees and random chordal graphs of switches: the Fibre Channel paper's topology classes (§4,
// Figs. 6-8: trees, chordal graphs, whose complete minimal routing is deadlock-free, and general
// topologies). The paper's fabrics are the best its search found; these are random members of each class,
// grown one switch at a time from one seeded stream (newRand), so a seed names the same graph on every
// platform.
func init() {
	keys := append([]paramSpec{{name: "switches", required: true}, {name: "ports"}, {name: "seed", def: "1"}}, attachKeys...)
	register("randomtree", keys, buildRandomTree)
	register("chordal", append([]paramSpec{{name: "clique_min", def: "2"}, {name: "clique_max", def: "5"}}, keys...), buildChordal)
}

// grownCommon checks what both grown families share: switches, the per-switch port budget (ports:
// host links plus switch links; absent: no limit) and the hosts. It returns each switch's free fabric
// ports (-1: unlimited).
func grownCommon(p *params) (n int, counts, room []int, seed uint64, err error) {
	if n, err = p.int("switches", 2); err != nil {
		return
	}
	if n > maxNodes {
		err = p.errf("switches", "more than %d switches", maxNodes)
		return
	}
	if counts, err = p.hostCounts(n); err != nil {
		return
	}
	room = make([]int, n)
	for i := range room {
		room[i] = -1
	}
	if p.has("ports") {
		var ports int
		if ports, err = p.int("ports", 1); err != nil {
			return
		}
		for i, h := range counts {
			// Every switch needs a port for a link into the fabric, or the graph cannot be connected.
			if room[i] = ports - h; room[i] < 1 {
				err = p.errf("ports", "switch s%d has %d hosts: no port left for a link to another switch", i, h)
				return
			}
		}
	}
	seed, err = p.seed("seed")
	return
}

// buildRandomTree builds a random recursive tree: switch i (i = 1..switches-1) joins one earlier switch
// drawn uniformly from those with a free port. One link per joined pair, switches-1 links in all. When a
// port budget leaves no earlier switch a free port, the tree is drawn again from the same stream.
//
// Numbering: switches s0..; hosts by switch, host ports first. Links: host links, then fabric links
// sorted by (lower, higher) switch number.
func buildRandomTree(p *params) (*Graph, error) {
	n, counts, room, seed, err := grownCommon(p)
	if err != nil {
		return nil, err
	}
	r := newRand(seed)
	for try := 0; try < attempts; try++ {
		if adj, ok := randomTreeOnce(r, n, room); ok {
			return switchGraph(p, adj, counts, nil), nil
		}
	}
	return nil, p.errf("ports", "no tree of %d switches fits the free ports after %d attempts", n, attempts)
}

func randomTreeOnce(r *rand.Rand, n int, room []int) ([]map[int]bool, bool) {
	adj := newAdj(n)
	for i := 1; i < n; i++ {
		var open []int
		for j := 0; j < i; j++ {
			if hasRoom(adj, room, j) {
				open = append(open, j)
			}
		}
		if len(open) == 0 {
			return nil, false
		}
		j := open[r.IntN(len(open))]
		adj[i][j], adj[j][i] = true, true
	}
	return adj, true
}

// buildChordal builds a random chordal graph: switch i (i = 1..switches-1) joins a random clique of the
// graph so far: a maximal clique drawn uniformly, of which a random subset of k members with free
// ports, k drawn uniformly from [clique_min, clique_max] and cut to the members available (switch 1 can
// only join s0). Each new switch's neighbours form a clique, so the reverse of the order of addition is a
// perfect elimination ordering and the graph is chordal: every cycle of four or more switches has a
// chord. When a port budget leaves no maximal clique a member with a free port, the graph is drawn again.
//
// Numbering, ports and link order as for randomtree.
func buildChordal(p *params) (*Graph, error) {
	n, counts, room, seed, err := grownCommon(p)
	if err != nil {
		return nil, err
	}
	lo, err := p.int("clique_min", 1)
	if err != nil {
		return nil, err
	}
	hi, err := p.int("clique_max", 1)
	if err != nil {
		return nil, err
	}
	if hi < lo {
		return nil, p.errf("clique_max", "must be at least clique_min=%d", lo)
	}
	r := newRand(seed)
	for try := 0; try < attempts; try++ {
		if adj, ok := chordalOnce(r, n, room, lo, hi); ok {
			return switchGraph(p, adj, counts, nil), nil
		}
	}
	return nil, p.errf("ports", "no chordal graph of %d switches fits the free ports after %d attempts", n, attempts)
}

// chordalOnce grows the graph keeping its list of maximal cliques: the new switch with the subset it
// joined is a new maximal clique, and replaces the clique drawn when it joined all of it (nothing else
// can stop being maximal, since any other maximal clique inside the subset would lie inside the drawn one).
func chordalOnce(r *rand.Rand, n int, room []int, lo, hi int) ([]map[int]bool, bool) {
	adj := newAdj(n)
	cliques := [][]int{{0}}
	for i := 1; i < n; i++ {
		var usable []int // cliques with a member that has a free port
		for c, cl := range cliques {
			for _, v := range cl {
				if hasRoom(adj, room, v) {
					usable = append(usable, c)
					break
				}
			}
		}
		if len(usable) == 0 {
			return nil, false
		}
		c := usable[r.IntN(len(usable))]
		var open []int
		for _, v := range cliques[c] {
			if hasRoom(adj, room, v) {
				open = append(open, v)
			}
		}
		k := min(lo+r.IntN(hi-lo+1), len(open))
		if room[i] >= 0 {
			k = min(k, room[i])
		}
		r.Shuffle(len(open), func(a, b int) { open[a], open[b] = open[b], open[a] })
		joined := append([]int(nil), open[:k]...)
		for _, v := range joined {
			adj[i][v], adj[v][i] = true, true
		}
		grown := append(joined, i)
		if k == len(cliques[c]) {
			cliques[c] = grown
		} else {
			cliques = append(cliques, grown)
		}
	}
	return adj, true
}

func newAdj(n int) []map[int]bool {
	adj := make([]map[int]bool, n)
	for i := range adj {
		adj[i] = map[int]bool{}
	}
	return adj
}

// hasRoom says whether switch v can take one more switch link (room -1: no port budget).
func hasRoom(adj []map[int]bool, room []int, v int) bool {
	return room[v] < 0 || len(adj[v]) < room[v]
}
