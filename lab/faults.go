package lab

import (
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/fib"
	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// FaultPlan is one of the spec's faults made concrete: the cable, the impairment each of its ends
// applies from At on, and the switches' tables recomputed without the cables down at that moment (FIB:
// only the switches whose table changed). Backends apply it as it stands; they compute nothing.
type FaultPlan struct {
	At    clock.Time
	Link  int // index into Graph.Links
	Name  string
	Fault egress.Fault
	FIB   map[int]fib.Table // switch node -> its new table
}

// planFaults checks the spec's faults and plans them in time order (equal times in spec order).
func (l *Lab) planFaults() error {
	s, g := l.Spec, l.Graph
	byName := map[string]int{}
	for i, n := range g.Nodes {
		byName[n.Name] = i
	}
	type item struct {
		i int
		p FaultPlan
	}
	var items []item
	for i, f := range s.Faults {
		field := fmt.Sprintf("faults[%d]", i)
		if len(f.Link) != 2 {
			return fmt.Errorf("%s.link: name the two devices a cable joins, e.g. [s0, s1]", field)
		}
		a, oka := byName[f.Link[0]]
		b, okb := byName[f.Link[1]]
		if !oka || !okb {
			return fmt.Errorf("%s.link: %v: no such device in this topology", field, f.Link)
		}
		li := -1
		for j, lk := range g.Links {
			if lk.A.Node == a && lk.B.Node == b || lk.A.Node == b && lk.B.Node == a {
				li = j
				break
			}
		}
		if li < 0 {
			return fmt.Errorf("%s.link: no cable joins %s and %s", field, f.Link[0], f.Link[1])
		}
		if f.At < 0 || f.At.Clock() > l.End {
			return fmt.Errorf("%s.at: %v is outside the run (0 .. duration %v)", field, f.At.Clock(), l.End)
		}
		var ef egress.Fault
		switch f.State {
		case "down":
			ef.Down = true
		case "up":
		case "set":
			ef.Loss, ef.Delay = f.Loss, f.Delay.Clock()
		default:
			return fmt.Errorf("%s.state: %q is not down, up or set", field, f.State)
		}
		if f.State != "set" && (f.Loss != 0 || f.Delay != 0) {
			return fmt.Errorf("%s: loss and delay go with state: set", field)
		}
		if err := ef.Check(); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		items = append(items, item{i, FaultPlan{At: f.At.Clock(), Link: li, Name: f.Link[0] + "-" + f.Link[1], Fault: ef}})
	}
	// Stable by time, so a later entry at the same time wins, as it would applied by hand.
	for i := 1; i < len(items); i++ {
		for j := i; j > 0 && items[j].p.At < items[j-1].p.At; j-- {
			items[j], items[j-1] = items[j-1], items[j]
		}
	}
	down := map[int]bool{}
	cur := map[int]fib.Table{}
	for _, sd := range l.Switches {
		cur[sd.Node] = sd.Config.FIB
	}
	for _, it := range items {
		p := it.p
		if p.Fault.Down == down[p.Link] {
			l.Faults = append(l.Faults, p)
			continue
		}
		if p.Fault.Down {
			down[p.Link] = true
		} else {
			delete(down, p.Link)
		}
		t, err := route.ShortestWith(route.WithoutLinks(g, down), l.Tables.HostTransit)
		if err != nil {
			return fmt.Errorf("faults[%d]: routing without the cables down: %w", it.i, err)
		}
		for node, old := range cur {
			if !t.FIB[node].Equal(old) {
				if p.FIB == nil {
					p.FIB = map[int]fib.Table{}
				}
				// A copy, so that the plan keeps this switch's index, not every node's.
				nt := t.FIB[node].Clone()
				p.FIB[node] = nt
				cur[node] = nt
			}
		}
		l.Faults = append(l.Faults, p)
	}
	return nil
}

// FaultEnds are the two ends of a planned fault's cable.
func (l *Lab) FaultEnds(p FaultPlan) [2]topo.End {
	lk := l.Graph.Links[p.Link]
	return [2]topo.End{lk.A, lk.B}
}
