package lab

import (
	"fmt"
	"sort"

	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/switchsw"
)

// classTurns makes the switches apply the lossless classes of routes that carry them (DF-KSP with
// several lossless priorities, route.Path.Prio): a frame moves up one priority at every turn where its
// path's class rises, which a switch recognises by (in-port, out-port) alone, and those priorities are
// lossless. Routes without classes leave the switches as they are.
func (l *Lab) classTurns() error {
	g := l.Graph
	type turn struct {
		node int
		t    switchsw.Turn
	}
	up := map[turn]bool{}
	top := 0
	for _, f := range l.Flows {
		p := f.Path
		if p.Prio == nil {
			continue
		}
		for i := 1; i < len(p.Ports); i++ {
			n := p.Nodes[i]
			if g.Nodes[n].Kind != topo.Switch {
				continue
			}
			in := g.Peer(p.Nodes[i-1], int(p.Ports[i-1])).Port
			k := turn{n, switchsw.Turn{In: uint8(in), Out: p.Ports[i]}}
			rise := p.Prio[i] > p.Prio[i-1]
			if p.Prio[i] > p.Prio[i-1]+1 || p.Prio[i] < p.Prio[i-1] {
				return fmt.Errorf("routing: flow %d's path changes class %d -> %d at %s; a switch can only raise it by one",
					f.ID, p.Prio[i-1], p.Prio[i], g.Nodes[n].Name)
			}
			if was, seen := up[k]; seen && was != rise {
				return fmt.Errorf("routing: the turn %s p%d -> p%d raises the class on one path and not on another; switches decide by ports alone",
					g.Nodes[n].Name, in, p.Ports[i])
			}
			up[k] = rise
			top = max(top, int(p.Prio[i]))
		}
	}
	if top == 0 {
		return nil
	}
	base := nodes.DefaultDataPrio
	if base+top > 7 {
		return fmt.Errorf("routing.lossless_priorities: %d classes above data priority %d do not fit in 8 priorities", top+1, base)
	}
	byNode := map[int][]switchsw.Turn{}
	for k, rise := range up {
		if rise {
			byNode[k.node] = append(byNode[k.node], k.t)
		}
	}
	for i := range l.Switches {
		c := &l.Switches[i].Config
		ts := byNode[l.Switches[i].Node]
		sort.Slice(ts, func(a, b int) bool { return ts[a].In < ts[b].In || ts[a].In == ts[b].In && ts[a].Out < ts[b].Out })
		c.ClassUp = ts
		if c.Lossless != nil && l.Spec.Switch.FlowControl == "pfc" {
			for k := 0; k <= top; k++ {
				c.Lossless[base+k] = true
			}
		}
	}
	return nil
}
