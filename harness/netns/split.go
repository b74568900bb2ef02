package netns

import (
	"fmt"
	"math"
	"slices"

	"github.com/fabriclab/fabriclab/fib"
	"github.com/fabriclab/fabriclab/lab/topo"

	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/nodes"
)

// CutReport describes how a run's devices were split across agents: the links between agents and the
// frames the workload is expected to put on them (from the flow schedule and the flows' routes), against
// all the frame-hops of the run (Total), and each agent's expected frames sent plus taken (Load).
type CutReport struct {
	Agents int       `json:"agents"`
	Links  int       `json:"cut_links"`
	Frames float64   `json:"cut_frames"`
	Total  float64   `json:"frames"`
	Load   []float64 `json:"load"`
}

func (c CutReport) String() string {
	if c.Agents < 2 {
		return "one agent"
	}
	return fmt.Sprintf("%d agents, %d cut links carrying %.0f of %.0f expected frames (%.1f%%), expected frames per agent %.0f",
		c.Agents, c.Links, c.Frames, c.Total, 100*c.Frames/math.Max(c.Total, 1), c.Load)
}

// LinkFrames estimates the frames the workload puts on each link of l.Graph.Links (both directions):
// every flow's data frames (size / its NIC's MTU) on each hop of its route, and as many acknowledgements
// back; a table-forwarded flow's are spread evenly over its ECMP sets.
func LinkFrames(l *lab.Lab) []float64 {
	w := make([]float64, len(l.Graph.Links))
	mtu := map[int]int{}
	for _, h := range l.Hosts {
		mtu[h.Node] = h.Config.MTU
	}
	tables := map[int]fib.Table{}
	for _, sw := range l.Switches {
		tables[sw.Node] = sw.Config.FIB
	}
	for _, f := range l.Flows {
		p := f.Path
		if len(p.Nodes) == 0 && len(f.Cands) > 0 {
			p = f.Cands[0]
		}
		m := mtu[f.SrcNode]
		if m <= 0 {
			m = nodes.DefaultMTU
		}
		frames := 2 * math.Ceil(float64(max(f.Size, 1))/float64(m))
		if f.Route == nil && len(f.Cands) == 0 && ecmpSpread(l.Graph, tables, f.SrcNode, int(f.Dst), frames, w) {
			continue
		}
		for i := range p.Ports {
			if i < len(p.Nodes) && p.Nodes[i] < len(l.Graph.Nodes) && int(p.Ports[i]) < len(l.Graph.Nodes[p.Nodes[i]].Ports) {
				w[l.Graph.Nodes[p.Nodes[i]].Ports[p.Ports[i]]] += frames
			}
		}
	}
	return w
}

// TrafficParts splits the agent-hosted devices into n agents so that few expected frames cross between
// agents, with each agent's expected frame-hops within 10% of an equal share: connected parts of equal
// size (connectedParts) to start, then greedy moves of single devices to a neighbouring agent
// (Fiduccia-Mattheyses style, without its tentative negative moves). A move is taken when it relieves an
// agent over its share, cuts fewer expected frames without putting another over its share, or cuts as
// many and evens the loads; each of those lowers (overload, cut, sum of squared loads) in that order, so
// the refinement ends. gonum's graph packages partition for modularity (community.Modularize), not for
// a balanced k-way minimum cut, and no maintained Go package does the latter (METIS is C); the fabrics
// an agent split sees have tens to hundreds of devices, where this greedy pass takes milliseconds.
//
// Devices bound by a flow dependency move together (dependencyGroups): every dependency stays inside one
// agent, so a flow released by a completion starts at the virtual backend's instant and order.
func TrafficParts(l *lab.Lab, dl *Dilated, n int) (map[int]int, CutReport) {
	return TrafficPartsWithin(l, dl, n, 0.1)
}

// TrafficPartsWithin is TrafficParts with each part's expected frame-hops within slack (0.1: 10%) of
// an equal share. The parallel virtual backend asks for 2%: a frame between its parts costs a hand-over
// at a window edge, not a packet between processes, while every window waits for its busiest part.
func TrafficPartsWithin(l *lab.Lab, dl *Dilated, n int, slack float64) (map[int]int, CutReport) {
	g := l.Graph
	part := connectedParts(g, dl, n)
	w := LinkFrames(l)
	group := dependencyGroups(l, part)
	// A group may have taken a whole part: number the parts left 0, 1, ... in their order.
	var used []int
	for _, a := range part {
		if !slices.Contains(used, a) {
			used = append(used, a)
		}
	}
	slices.Sort(used)
	for v, a := range part {
		part[v] = slices.Index(used, a)
	}
	parts := len(used)
	load := make([]float64, parts)
	dev := map[int]float64{}
	total := 0.0
	for v := range part {
		x := 1.0 // an idle device still costs its agent a little
		for _, li := range g.Nodes[v].Ports {
			x += w[li]
		}
		dev[v] = x
		load[part[v]] += x
		total += x
	}
	share := (1 + slack) * total / float64(max(parts, 1))
	size := make([]int, parts)
	for _, a := range part {
		size[a]++
	}
	// unit is what moves with v: v, or every device of its dependency group.
	unit := func(v int) []int {
		if m, ok := group[v]; ok {
			return m
		}
		return []int{v}
	}
	// ext[b] is the weight of the unit's links into agent b (links inside the unit do not count).
	ext := func(u []int) map[int]float64 {
		m := map[int]float64{}
		for _, v := range u {
			for p, li := range g.Nodes[v].Ports {
				peer := g.Peer(v, p).Node
				if b, ok := part[peer]; ok && !slices.Contains(u, peer) {
					m[b] += w[li]
				}
			}
		}
		return m
	}
	for pass := 0; pass < 100; pass++ {
		moved := false
		for v := range g.Nodes {
			a, ok := part[v]
			u := unit(v)
			if !ok || size[a] <= len(u) || u[0] != v { // a group is weighed once, from its first device
				continue
			}
			du := 0.0
			for _, x := range u {
				du += dev[x]
			}
			e := ext(u)
			best, bestGain := -1, math.Inf(-1)
			for b := range e {
				if b == a || load[b]+du > share {
					continue
				}
				gain := e[b] - e[a]
				even := math.Abs((load[a]-du)-(load[b]+du)) < math.Abs(load[a]-load[b])
				if load[a] > share || gain > 0 || gain == 0 && even {
					if gain > bestGain {
						best, bestGain = b, gain
					}
				}
			}
			if best >= 0 {
				load[a] -= du
				load[best] += du
				size[a] -= len(u)
				size[best] += len(u)
				for _, x := range u {
					part[x] = best
				}
				moved = true
			}
		}
		if !moved {
			break
		}
	}
	cut := CutReport{Agents: parts, Load: load, Total: (total - float64(len(part))) / 2}
	for li, lk := range g.Links {
		a, okA := part[lk.A.Node]
		b, okB := part[lk.B.Node]
		if okA && okB && a != b {
			cut.Links++
			cut.Frames += w[li]
		}
	}
	for i := range cut.Load {
		cut.Load[i] = math.Round(cut.Load[i])
	}
	return part, cut
}

// dependencyGroups joins the source NICs of every flow and of the flows it waits for (Flow.After) into
// groups, moves each group whole into the agent that holds most of it (part is changed), and returns
// each grouped device's group (sorted devices; ungrouped devices are absent).
//
// A flow completes at its source NIC, when the acknowledgement of its last byte arrives, and releases
// its dependents at that instant (a harness event after every device's events of the instant:
// docs/architecture.md §Order of simultaneous events). That is a dependency of no delay between two
// NICs, so lockstep has no lookahead across it: an agent could learn of a completion in another agent
// only after its own clock had passed it (agents run up to a link delay apart), and the released flow
// started late or out of order (with two agents, ps had 1-8 of 16 flows differ, moe 0-1 of 290).
// Keeping every dependency inside one agent makes the release local, hence exact, at the cost of a
// split less free to balance: a workload whose dependencies join every host (ps, moe) puts its hosts in
// one agent, and the others hold switches.
func dependencyGroups(l *lab.Lab, part map[int]int) map[int][]int {
	src := map[uint32]int{}
	for _, f := range l.Flows {
		src[f.ID] = f.SrcNode
	}
	root := map[int]int{}
	var find func(v int) int
	find = func(v int) int {
		r, ok := root[v]
		if !ok || r == v {
			return v
		}
		r = find(r)
		root[v] = r
		return r
	}
	for _, f := range l.Flows {
		if _, ok := part[f.SrcNode]; !ok {
			continue // not hosted by an agent (a kernel host: dependencies are refused there)
		}
		for _, id := range f.After {
			s, ok := src[id]
			if _, hosted := part[s]; !ok || !hosted {
				continue
			}
			if a, b := find(f.SrcNode), find(s); a != b {
				root[max(a, b)] = min(a, b)
			}
		}
	}
	members := map[int][]int{}
	for v := range root {
		r := find(v)
		members[r] = append(members[r], v)
	}
	group := map[int][]int{}
	for r, m := range members {
		if !slices.Contains(m, r) {
			m = append(m, r)
		}
		if len(m) < 2 {
			continue
		}
		slices.Sort(m)
		// The agent holding most of the group takes it (ties: the smaller agent index).
		votes := map[int]int{}
		for _, v := range m {
			votes[part[v]]++
		}
		to := -1
		for a, c := range votes {
			if to < 0 || c > votes[to] || c == votes[to] && a < to {
				to = a
			}
		}
		for _, v := range m {
			part[v] = to
			group[v] = m
		}
	}
	return group
}

// ecmpSpread adds a table-forwarded flow's frames to every link the switches' tables may send it on,
// split equally over each ECMP set (what per-flow hashing gives on average): the one path a flow's
// ideal FCT was computed on puts all of a fat-tree's flows on its first core switches, and a split
// balanced on that put 886 devices in one part and 458 in the other, the first with 3.5 times the
// events (fat-tree k=16 permutation). It reports false, adding nothing, when the tables do not lead
// from the source host to the destination (a host with several ports, a hole, a loop).
func ecmpSpread(g *topo.Graph, tables map[int]fib.Table, src, dst int, frames float64, w []float64) bool {
	if len(g.Nodes[src].Ports) != 1 {
		return false
	}
	add := map[int]float64{g.Nodes[src].Ports[0]: frames}
	cur := map[int]float64{g.Peer(src, 0).Node: frames}
	for hop := 0; len(cur) > 0; hop++ {
		if hop > 64 {
			return false
		}
		next := map[int]float64{}
		for v, x := range cur {
			if g.Nodes[v].Kind == topo.Host {
				if g.Nodes[v].Index != dst {
					return false
				}
				continue
			}
			t, ok := tables[v]
			if !ok {
				return false
			}
			ports := t.Ports(dst)
			if len(ports) == 0 {
				return false
			}
			share := x / float64(len(ports))
			for _, pt := range ports {
				if int(pt) >= len(g.Nodes[v].Ports) {
					return false
				}
				add[g.Nodes[v].Ports[pt]] += share
				next[g.Peer(v, int(pt)).Node] += share
			}
		}
		cur = next
	}
	for li, x := range add {
		w[li] += x
	}
	return true
}
