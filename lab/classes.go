package lab

import (
	"fmt"
	"sort"

	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/switchsw"
)

// classTurns makes the switches apply the lossless classes of routes that carry them (DF-KSP with
// several lossless priorities, route.Path.Prio): a frame moves up one priority at every turn where its
// path's class rises, which a switch recognises by (in-port, out-port) alone, and those priorities are
// lossless. Routes without classes leave the switches as they are.
func (l *Lab) classTurns() error {
	up := map[classTurn]bool{}
	top := 0
	for _, f := range l.Flows {
		// Every path a flow may be spread over (Cands), not only the one its ideal was computed on.
		for _, p := range append([]route.Path{f.Path}, f.Cands...) {
			if err := l.pathTurns(f.ID, p, up, &top); err != nil {
				return err
			}
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

// classTurn is a (switch, in-port, out-port) turn.
type classTurn struct {
	node int
	t    switchsw.Turn
}

// pathTurns records whether each turn of p raises its class, refusing a path whose classes a switch
// could not apply by ports alone.
func (l *Lab) pathTurns(id uint32, p route.Path, up map[classTurn]bool, top *int) error {
	g := l.Graph
	if p.Prio == nil {
		return nil
	}
	for i := 1; i < len(p.Ports); i++ {
		n := p.Nodes[i]
		if g.Nodes[n].Kind != topo.Switch {
			continue
		}
		in := g.Peer(p.Nodes[i-1], int(p.Ports[i-1])).Port
		k := classTurn{n, switchsw.Turn{In: uint8(in), Out: p.Ports[i]}}
		rise := p.Prio[i] > p.Prio[i-1]
		if p.Prio[i] > p.Prio[i-1]+1 || p.Prio[i] < p.Prio[i-1] {
			return fmt.Errorf("routing: flow %d's path changes class %d -> %d at %s; a switch can only raise it by one",
				id, p.Prio[i-1], p.Prio[i], g.Nodes[n].Name)
		}
		if was, seen := up[k]; seen && was != rise {
			return fmt.Errorf("routing: the turn %s p%d -> p%d raises the class on one path and not on another; switches decide by ports alone",
				g.Nodes[n].Name, in, p.Ports[i])
		}
		up[k] = rise
		*top = max(*top, int(p.Prio[i]))
	}
	return nil
}
