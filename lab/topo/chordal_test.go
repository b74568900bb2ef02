package topo

import (
	"fmt"
	"slices"
	"testing"
)

// switchAdj is the switch graph of g: adjacency sets over switch indices.
func switchAdj(g *Graph) []map[int]bool {
	adj := newAdj(len(g.Switches))
	for si := range g.Switches {
		for _, v := range switchNeighbours(g, si) {
			adj[si][v] = true
		}
	}
	return adj
}

func switchLinks(g *Graph) int {
	n := 0
	for _, l := range g.Links {
		if g.Nodes[l.A.Node].Kind == Switch && g.Nodes[l.B.Node].Kind == Switch {
			n++
		}
	}
	return n
}

// checkPorts asserts no switch uses more than ports ports (hosts and switch links) and no pair of
// switches has two links.
func checkPorts(t *testing.T, g *Graph, ports int) {
	t.Helper()
	for si, n := range g.Switches {
		if d := degree(g, n); d > ports {
			t.Fatalf("%s %v: s%d uses %d ports, the budget is %d", g.Family, g.Params, si, d, ports)
		}
		seen := map[int]bool{}
		for _, v := range switchNeighbours(g, si) {
			if v == si || seen[v] {
				t.Fatalf("%s %v: s%d has a parallel link or self-loop to s%d", g.Family, g.Params, si, v)
			}
			seen[v] = true
		}
	}
}

// A random tree has switches-1 switch links and is connected (so it has no cycle), keeps the port budget,
// and a seed names one tree: the same seed twice gives the same links, and seeds 1-5 are not all one tree.
func TestRandomTree(t *testing.T) {
	for _, c := range [][]string{
		{"switches=12", "ports=16", "hosts=100"}, {"switches=2"}, {"switches=30", "ports=4", "hosts_per_switch=2"},
		{"switches=9", "ports=3", "hosts_per_switch=1"},
	} {
		trees := map[string]bool{}
		for seed := 1; seed <= 5; seed++ {
			kv := append(c, fmt.Sprintf("seed=%d", seed))
			g := build(t, "randomtree", kv...)
			n := len(g.Switches)
			if got := switchLinks(g); got != n-1 {
				t.Fatalf("randomtree %v: %d switch links, want %d", kv, got, n-1)
			}
			checkConnected(t, g)
			var ports int
			if _, err := fmt.Sscanf(g.Params["ports"], "%d", &ports); err == nil {
				checkPorts(t, g, ports)
			}
			if again := build(t, "randomtree", kv...); fmt.Sprint(again.Links) != fmt.Sprint(g.Links) {
				t.Fatalf("randomtree %v: one seed gave two trees", kv)
			}
			trees[fmt.Sprint(g.Links)] = true
		}
		if len(c) > 1 && len(trees) < 2 {
			t.Fatalf("randomtree %v: seeds 1-5 gave one tree", c)
		}
	}
	g := build(t, "randomtree", "switches=12", "ports=16", "hosts=100")
	if len(g.Hosts) != 100 {
		t.Fatalf("randomtree hosts=100: %d hosts", len(g.Hosts))
	}
}

// A random chordal graph is chordal (every cycle of four or more switches has a chord), connected,
// keeps the port budget and is not a tree (clique_min 2 joins triangles once there is a clique of
// two); the checks themselves find the chordless cycles of a ring, Petersen and a jellyfish.
func TestChordal(t *testing.T) {
	for _, c := range [][]string{
		{"switches=12", "ports=16", "hosts=100"}, {"switches=12"}, {"switches=10", "clique_min=1", "clique_max=1"},
		{"switches=20", "ports=6", "hosts_per_switch=2"}, {"switches=12", "clique_min=3", "clique_max=8"},
	} {
		graphs := map[string]bool{}
		for seed := 1; seed <= 5; seed++ {
			kv := append(c, fmt.Sprintf("seed=%d", seed))
			g := build(t, "chordal", kv...)
			adj := switchAdj(g)
			if !eliminable(adj) {
				t.Fatalf("chordal %v: no perfect elimination ordering", kv)
			}
			if cyc := chordlessCycle(adj); cyc != nil {
				t.Fatalf("chordal %v: chordless cycle %v", kv, cyc)
			}
			checkConnected(t, g)
			var ports int
			if _, err := fmt.Sscanf(g.Params["ports"], "%d", &ports); err == nil {
				checkPorts(t, g, ports)
			}
			links := switchLinks(g)
			if g.Params["clique_max"] == "1" && links != len(g.Switches)-1 {
				t.Fatalf("chordal %v: cliques of one give a tree, got %d links", kv, links)
			}
			if g.Params["clique_max"] != "1" && links <= len(g.Switches)-1 {
				t.Fatalf("chordal %v: %d links, a tree", kv, links)
			}
			if again := build(t, "chordal", kv...); fmt.Sprint(again.Links) != fmt.Sprint(g.Links) {
				t.Fatalf("chordal %v: one seed gave two graphs", kv)
			}
			graphs[fmt.Sprint(g.Links)] = true
		}
		if len(graphs) < 2 {
			t.Fatalf("chordal %v: seeds 1-5 gave one graph", c)
		}
	}
	for _, g := range []*Graph{build(t, "ring", "n=4"), build(t, "petersen"), build(t, "jellyfish", "switches=12", "degree=7", "hosts=100")} {
		adj := switchAdj(g)
		if eliminable(adj) || chordlessCycle(adj) == nil {
			t.Fatalf("%s: not chordal, but the checks pass it", g.Family)
		}
	}
}

// eliminable says whether removing simplicial vertices (whose neighbours are pairwise adjacent) one by
// one empties the graph: the graph has a perfect elimination ordering, i.e. is chordal.
func eliminable(adj []map[int]bool) bool {
	gone := make([]bool, len(adj))
	for left := len(adj); left > 0; left-- {
		v := -1
		for u := range adj {
			if !gone[u] && simplicial(adj, gone, u) {
				v = u
				break
			}
		}
		if v < 0 {
			return false
		}
		gone[v] = true
	}
	return true
}

func simplicial(adj []map[int]bool, gone []bool, u int) bool {
	var nb []int
	for v := range adj[u] {
		if !gone[v] {
			nb = append(nb, v)
		}
	}
	for i, a := range nb {
		for _, b := range nb[i+1:] {
			if !adj[a][b] {
				return false
			}
		}
	}
	return true
}

// chordlessCycle is a cycle of four or more vertices without a chord, found by brute force (induced
// paths from each start, every vertex above it), or nil.
func chordlessCycle(adj []map[int]bool) []int {
	var walk func(path []int) []int
	walk = func(path []int) []int {
		s, u := path[0], path[len(path)-1]
		for w := range adj[u] {
			if w <= s || slices.Contains(path, w) {
				continue
			}
			if len(path) == 1 {
				if c := walk(append(path, w)); c != nil {
					return c
				}
				continue
			}
			chord := false
			for _, x := range path[1 : len(path)-1] {
				if adj[w][x] {
					chord = true
					break
				}
			}
			if chord {
				continue
			}
			if adj[w][s] {
				if len(path) >= 3 {
					return append(append([]int(nil), path...), w)
				}
				continue // a triangle; any longer cycle through s, u, w has the chord s-w
			}
			if c := walk(append(path, w)); c != nil {
				return c
			}
		}
		return nil
	}
	for s := range adj {
		if c := walk([]int{s}); c != nil {
			return c
		}
	}
	return nil
}
