// Package virtual runs a lab's switch and NIC engines in one process on a deterministic virtual clock:
// the same engines the netns backend runs on real frames, with links that hand packet descriptors
// across after the propagation delay. Same lab, same seed: the same records, bit for bit.
package virtual

import (
	"context"
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/switchsw"
)

// Fabric is an instantiated lab.
type Fabric struct {
	Lab      *lab.Lab
	Clock    *clock.Virtual
	Log      *records.Log
	Switches map[int]*switchsw.Switch // by graph node
	NICs     map[int]*nodes.NIC       // by graph node
	started  int
}

type wired interface {
	Device
	SetLink(port int, l egress.Link)
}

// New builds the fabric: one engine per device, one link per cable direction, and every flow's start
// scheduled on the clock.
func New(l *lab.Lab) (*Fabric, error) {
	f := &Fabric{Lab: l, Clock: clock.NewVirtual(), Log: &records.Log{},
		Switches: map[int]*switchsw.Switch{}, NICs: map[int]*nodes.NIC{}}
	g := l.Graph
	devs := make([]wired, len(g.Nodes))
	for _, s := range l.Switches {
		sw, err := switchsw.New(s.Config, f.Clock, make([]egress.Link, len(s.Config.Ports)), f.Log)
		if err != nil {
			return nil, fmt.Errorf("switch %s: %w", g.Nodes[s.Node].Name, err)
		}
		f.Switches[s.Node] = sw
		devs[s.Node] = sw
	}
	for _, h := range l.Hosts {
		nic, err := nodes.New(h.Config, f.Clock, make([]egress.Link, len(h.Config.Ports)), f.Log)
		if err != nil {
			return nil, fmt.Errorf("host %s: %w", g.Nodes[h.Node].Name, err)
		}
		f.NICs[h.Node] = nic
		devs[h.Node] = nic
	}
	for i, lk := range g.Links {
		a, b := devs[lk.A.Node], devs[lk.B.Node]
		if a == nil || b == nil {
			return nil, fmt.Errorf("link %d (%s-%s) joins a device the lab did not configure", i, g.Nodes[lk.A.Node].Name, g.Nodes[lk.B.Node].Name)
		}
		a.SetLink(lk.A.Port, newLink(f.Clock, lk.Delay, b, lk.B.Port))
		b.SetLink(lk.B.Port, newLink(f.Clock, lk.Delay, a, lk.A.Port))
	}
	for i := range l.Flows {
		fp := &l.Flows[i]
		nic := f.NICs[fp.SrcNode]
		flow := nodes.Flow{ID: fp.ID, Dst: int32(fp.Dst), Size: fp.Size, Route: fp.Route, Ideal: fp.Ideal, Class: fp.Class}
		var startErr error
		f.Clock.AfterFunc(fp.At, func() {
			if err := nic.StartFlow(flow); err != nil && startErr == nil {
				startErr = err
				f.Log.Violations = append(f.Log.Violations, fmt.Sprintf("flow %d did not start: %v", flow.ID, err))
			}
			f.started++
		})
	}
	return f, nil
}

// Result says how a run ended.
type Result struct {
	End       clock.Time // virtual time at the end
	Events    uint64     // clock callbacks fired
	AllDone   bool       // every flow completed
	TimedOut  bool       // stopped at the lab's End with flows outstanding
	Cancelled bool
}

// Run advances the clock until every flow has completed (if the spec says stop when done), the lab's
// End, or ctx is cancelled (checked every few thousand events, so Ctrl-C keeps what was measured).
func (f *Fabric) Run(ctx context.Context) Result {
	total := len(f.Lab.Flows)
	stopWhenDone := f.Lab.Spec.StopWhenDone()
	end := f.Lab.End
	var res Result
	n := 0
	for {
		if stopWhenDone && f.completed() == total && f.started == total {
			res.AllDone = true
			break
		}
		if !f.Clock.Step() {
			break
		}
		if f.Clock.Now() > end {
			res.TimedOut = true
			break
		}
		if n++; n&0xFFF == 0 && ctx.Err() != nil {
			res.Cancelled = true
			break
		}
	}
	res.AllDone = f.completed() == total
	res.End = f.Clock.Now()
	res.Events = f.Clock.Fired()
	for _, sw := range f.Switches {
		sw.Flush()
	}
	for _, nic := range f.NICs {
		nic.Flush()
	}
	return res
}

func (f *Fabric) completed() int {
	n := 0
	for i := range f.Log.Flows {
		if f.Log.Flows[i].Completed {
			n++
		}
	}
	return n
}
