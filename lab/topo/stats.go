package topo

import (
	"fmt"
	"runtime"
	"sync"
)

// Stats summarizes a topology.
//
// Diameter and AvgShortestPath are hop counts (links crossed) over all ordered pairs of distinct
// hosts, because host-to-host distance is what users compare across families: in NDC a one-digit
// neighbour is 2 hops (host, switch, host), in a fat-tree an inter-pod pair is 6. A graph without hosts
// (hosts=0) falls back to switch pairs. SwitchDiameter and SwitchAvgShortestPath are the same over
// switch pairs, which is what the expander literature quotes (the thesis' "ToR-to-ToR" averages).
// Unreachable pairs make Connected false and are left out of the averages; diameters are then -1.
type Stats struct {
	Hosts                 int     `json:"hosts"`
	Switches              int     `json:"switches"`
	Links                 int     `json:"links"`
	Diameter              int     `json:"diameter"`
	AvgShortestPath       float64 `json:"avg_shortest_path"`
	SwitchDiameter        int     `json:"switch_diameter"`
	SwitchAvgShortestPath float64 `json:"switch_avg_shortest_path"`
	Connected             bool    `json:"connected"`
	// AllPairsSkipped: the graph is too large for the all-pairs searches (AllPairsLimit), so diameters,
	// averages and Connected are not computed; `lab topo --stats` computes them anyway.
	AllPairsSkipped bool `json:"all_pairs_skipped,omitempty"`
}

// AllPairsLimit bounds the work (searches x (nodes + links)) of the all-pairs statistics `lab topo`
// and the JSON export compute unasked: about a second of searching. NDC(317,1) needs 3e10 and ran
// more than ten minutes before this limit.
const AllPairsLimit = 2e9

// AllPairsWork estimates the statistics' work: one search per host and switch over every node and link.
func (g *Graph) AllPairsWork() float64 {
	return float64(len(g.Hosts)+len(g.Switches)) * float64(len(g.Nodes)+len(g.Links))
}

// StatsBounded is Stats below AllPairsLimit (or when all is set) and the counts alone above it.
func (g *Graph) StatsBounded(all bool) Stats {
	if all || g.AllPairsWork() <= AllPairsLimit {
		return g.Stats()
	}
	return Stats{Hosts: len(g.Hosts), Switches: len(g.Switches), Links: len(g.Links), AllPairsSkipped: true}
}

// Stats computes the summary with one breadth-first search per source (switch-centric hosts with one
// port reuse their switch's search), spread over the available CPUs.
func (g *Graph) Stats() Stats {
	st := Stats{Hosts: len(g.Hosts), Switches: len(g.Switches), Links: len(g.Links), Connected: true}
	hd, ha, hok := g.pairStats(g.Hosts)
	sd, sa, sok := g.pairStats(g.Switches)
	st.SwitchDiameter, st.SwitchAvgShortestPath = sd, sa
	st.Diameter, st.AvgShortestPath = hd, ha
	if len(g.Hosts) == 0 {
		st.Diameter, st.AvgShortestPath = sd, sa
	}
	st.Connected = hok && sok && g.allReachable()
	if !st.Connected {
		st.Diameter, st.SwitchDiameter = -1, -1
	}
	return st
}

// allReachable reports whether every node is reachable from node 0.
func (g *Graph) allReachable() bool {
	if len(g.Nodes) == 0 {
		return true
	}
	d := g.bfs(0, make([]int32, len(g.Nodes)), nil)
	for _, v := range d {
		if v < 0 {
			return false
		}
	}
	return true
}

// bfs fills dist (reused across calls) with hop counts from src, -1 where unreachable.
func (g *Graph) bfs(src int, dist []int32, queue []int) []int32 {
	for i := range dist {
		dist[i] = -1
	}
	dist[src] = 0
	queue = append(queue[:0], src)
	for i := 0; i < len(queue); i++ {
		u := queue[i]
		for _, l := range g.Nodes[u].Ports {
			if l < 0 || l >= len(g.Links) {
				continue
			}
			v := g.Links[l].Other(u).Node
			if dist[v] < 0 {
				dist[v] = dist[u] + 1
				queue = append(queue, v)
			}
		}
	}
	return dist
}

// pairStats returns diameter, average distance and whether all pairs among set are connected.
func (g *Graph) pairStats(set []int) (int, float64, bool) {
	if len(set) < 2 {
		return 0, 0, true
	}
	// A host whose only link goes to a switch is at 1 + (its switch's distance) from everything else,
	// so one search per such switch serves all its hosts.
	type src struct {
		node  int   // BFS root
		extra int32 // hops from the members to node
		mem   []int // members of set this search serves
	}
	var srcs []src
	bySwitch := map[int]int{}
	for _, n := range set {
		nd := &g.Nodes[n]
		if nd.Kind == Host && len(nd.Ports) == 1 && nd.Ports[0] >= 0 {
			peer := g.Peer(n, 0).Node
			if g.Nodes[peer].Kind == Switch {
				if i, ok := bySwitch[peer]; ok {
					srcs[i].mem = append(srcs[i].mem, n)
				} else {
					bySwitch[peer] = len(srcs)
					srcs = append(srcs, src{node: peer, extra: 1, mem: []int{n}})
				}
				continue
			}
		}
		srcs = append(srcs, src{node: n, mem: []int{n}})
	}
	type acc struct {
		max   int32
		sum   int64
		pairs int64
		miss  bool
	}
	workers := runtime.GOMAXPROCS(0)
	if workers > len(srcs) {
		workers = len(srcs)
	}
	results := make([]acc, workers)
	var wg sync.WaitGroup
	next := make(chan int, len(srcs))
	for i := range srcs {
		next <- i
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			dist := make([]int32, len(g.Nodes))
			var queue []int
			a := &results[w]
			for i := range next {
				s := srcs[i]
				g.bfs(s.node, dist, queue)
				for _, m := range s.mem {
					for _, t := range set {
						if t == m {
							continue
						}
						d := dist[t]
						if d < 0 {
							a.miss = true
							continue
						}
						// m is a leaf on root s.node, so every path from m starts with that one hop.
						d += s.extra
						if d > a.max {
							a.max = d
						}
						a.sum += int64(d)
						a.pairs++
					}
				}
			}
		}(w)
	}
	wg.Wait()
	var tot acc
	for _, a := range results {
		if a.max > tot.max {
			tot.max = a.max
		}
		tot.sum += a.sum
		tot.pairs += a.pairs
		tot.miss = tot.miss || a.miss
	}
	avg := 0.0
	if tot.pairs > 0 {
		avg = float64(tot.sum) / float64(tot.pairs)
	}
	return int(tot.max), avg, !tot.miss
}

// Validate checks the graph's wiring: every port holds a link that names that node and port as one of
// its ends, every link end points at an existing node's port that holds the link, no link is a
// self-loop, names are unique, and Hosts/Switches list the right kinds in index order.
func (g *Graph) Validate() error {
	names := map[string]bool{}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.Name == "" {
			return fmt.Errorf("node %d has no name", i)
		}
		if names[n.Name] {
			return fmt.Errorf("two nodes are named %q", n.Name)
		}
		names[n.Name] = true
		if n.Kind != Host && n.Kind != Switch {
			return fmt.Errorf("node %s: kind %q is neither host nor switch", n.Name, n.Kind)
		}
		for p, l := range n.Ports {
			if l < 0 || l >= len(g.Links) {
				return fmt.Errorf("node %s port %d: no link (index %d)", n.Name, p, l)
			}
			lk := &g.Links[l]
			if lk.A != (End{i, p}) && lk.B != (End{i, p}) {
				return fmt.Errorf("node %s port %d holds link %d, whose ends are %v and %v", n.Name, p, l, lk.A, lk.B)
			}
		}
	}
	for l := range g.Links {
		lk := &g.Links[l]
		for _, e := range []End{lk.A, lk.B} {
			if e.Node < 0 || e.Node >= len(g.Nodes) {
				return fmt.Errorf("link %d: end at missing node %d", l, e.Node)
			}
			ps := g.Nodes[e.Node].Ports
			if e.Port < 0 || e.Port >= len(ps) || ps[e.Port] != l {
				return fmt.Errorf("link %d: end %s port %d does not hold the link", l, g.Nodes[e.Node].Name, e.Port)
			}
		}
		if lk.A.Node == lk.B.Node {
			return fmt.Errorf("link %d is a self-loop on %s", l, g.Nodes[lk.A.Node].Name)
		}
		if lk.RateBps <= 0 {
			return fmt.Errorf("link %d (%s–%s): rate %v is not positive", l, g.Nodes[lk.A.Node].Name, g.Nodes[lk.B.Node].Name, lk.RateBps)
		}
		if lk.Delay < 0 {
			return fmt.Errorf("link %d (%s–%s): negative delay", l, g.Nodes[lk.A.Node].Name, g.Nodes[lk.B.Node].Name)
		}
	}
	for _, list := range []struct {
		kind Kind
		idx  []int
	}{{Host, g.Hosts}, {Switch, g.Switches}} {
		count := 0
		for i := range g.Nodes {
			if g.Nodes[i].Kind == list.kind {
				count++
			}
		}
		if count != len(list.idx) {
			return fmt.Errorf("%d %s nodes but %d listed", count, list.kind, len(list.idx))
		}
		for j, n := range list.idx {
			if n < 0 || n >= len(g.Nodes) || g.Nodes[n].Kind != list.kind || g.Nodes[n].Index != j {
				return fmt.Errorf("%s list entry %d does not point at %s number %d", list.kind, j, list.kind, j)
			}
		}
	}
	return nil
}
