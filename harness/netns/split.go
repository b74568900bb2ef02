package netns

import (
	"fmt"
	"math"

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

// linkFrames estimates the frames the workload puts on each link (both directions): every flow's data
// frames (size / its NIC's MTU) on each hop of its route, and as many acknowledgements back.
func linkFrames(l *lab.Lab) []float64 {
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
func TrafficParts(l *lab.Lab, dl *Dilated, n int) (map[int]int, CutReport) {
	return TrafficPartsWithin(l, dl, n, 0.1)
}

// TrafficPartsWithin is TrafficParts with each part's expected frame-hops within slack (0.1: 10%) of
// an equal share. The parallel virtual backend asks for 2%: a frame between its parts costs a hand-over
// at a window edge, not a packet between processes, while every window waits for its busiest part.
func TrafficPartsWithin(l *lab.Lab, dl *Dilated, n int, slack float64) (map[int]int, CutReport) {
	g := l.Graph
	part := connectedParts(g, dl, n)
	w := linkFrames(l)
	parts := 0
	for _, a := range part {
		parts = max(parts, a+1)
	}
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
	// ext[b] is the weight of v's links into agent b.
	ext := func(v int) map[int]float64 {
		m := map[int]float64{}
		for p, li := range g.Nodes[v].Ports {
			if b, ok := part[g.Peer(v, p).Node]; ok {
				m[b] += w[li]
			}
		}
		return m
	}
	for pass := 0; pass < 100; pass++ {
		moved := false
		for v := range g.Nodes {
			a, ok := part[v]
			if !ok || size[a] == 1 {
				continue
			}
			e := ext(v)
			best, bestGain := -1, math.Inf(-1)
			for b := range e {
				if b == a || load[b]+dev[v] > share {
					continue
				}
				gain := e[b] - e[a]
				even := math.Abs((load[a]-dev[v])-(load[b]+dev[v])) < math.Abs(load[a]-load[b])
				if load[a] > share || gain > 0 || gain == 0 && even {
					if gain > bestGain {
						best, bestGain = b, gain
					}
				}
			}
			if best >= 0 {
				load[a] -= dev[v]
				load[best] += dev[v]
				size[a]--
				size[best]++
				part[v] = best
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
