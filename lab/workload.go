package lab

import (
	"fmt"
	"strconv"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/traffic"
)

// implementedWorkloads lists the workload kinds this build can run, so that a spec using a later
// feature is refused with a clear message instead of half-running.
var implementedWorkloads = map[string]bool{"flows": true, "incast": true}

// schedule expands the workloads into flows and gives each its route and ideal FCT.
func (l *Lab) schedule() error {
	s, g := l.Spec, l.Graph
	var all traffic.Schedule
	for i, w := range s.Workload {
		field := "workload[" + strconv.Itoa(i) + "]"
		if !implementedWorkloads[w.Kind] {
			return fmt.Errorf("%s.kind: %q is not available in this build (available: flows, incast)", field, w.Kind)
		}
		r := traffic.Rand(s.Seed, i)
		switch w.Kind {
		case "flows":
			for j, f := range w.List {
				ff := fmt.Sprintf("%s.list[%d]", field, j)
				src, err := l.hostIndex(f.Src, ff+".src")
				if err != nil {
					return err
				}
				dst, err := l.hostIndex(f.Dst, ff+".dst")
				if err != nil {
					return err
				}
				if src == dst {
					return fmt.Errorf("%s: src and dst are both %s", ff, f.Src)
				}
				all = append(all, traffic.Flow{Src: src, Dst: dst, Size: f.Size.Resolve(l.hostBDP()), At: f.At.Clock(),
					Class: w.Name, Via: f.Via, Path: f.Path})
			}
		case "incast":
			recv := -1
			if w.Receiver != "" {
				h, err := l.hostIndex(w.Receiver, field+".receiver")
				if err != nil {
					return err
				}
				recv = h
			} else {
				recv = r.IntN(len(g.Hosts))
			}
			var from []int
			for k, name := range w.Hosts {
				h, err := l.hostIndex(name, fmt.Sprintf("%s.hosts[%d]", field, k))
				if err != nil {
					return err
				}
				from = append(from, h)
			}
			count := w.Count
			if count == 0 {
				count = 1
			}
			for c := 0; c < count; c++ {
				at := w.At.Clock() + clock.Time(c)*w.Interval.Clock()
				fl, err := traffic.Incast(r, len(g.Hosts), w.Senders, recv, from, w.Size.Resolve(l.hostBDP()), at)
				if err != nil {
					return fmt.Errorf("%s: %w", field, err)
				}
				for k := range fl {
					fl[k].Class = w.Name
				}
				all = append(all, fl...)
			}
		}
	}
	all.Sort()
	for _, f := range all {
		p, err := l.pathFor(f)
		if err != nil {
			return err
		}
		fp := FlowPlan{Flow: f, SrcNode: g.Hosts[f.Src], Path: p}
		// Server-centric fabrics are source-routed (BCube's own design); switch-centric ones forward by
		// table unless the spec pinned the path.
		if route.ServerCentric(g) || len(f.Via) > 0 || len(f.Path) > 0 {
			fp.Route = p.Route()
		}
		mtu := s.Host.MTU
		fp.Ideal = nodes.IdealFCT(f.Size, mtu, len(fp.Route), p.Rates(g), p.Delays(g))
		l.Flows = append(l.Flows, fp)
	}
	return nil
}
