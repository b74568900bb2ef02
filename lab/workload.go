package lab

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/traffic"
	"github.com/fabriclab/fabriclab/units"
)

// schedule expands the workloads into flows and gives each its route and ideal FCT. Every workload
// draws from its own RNG stream (traffic.Rand(seed, index)), so adding one does not change another's
// flows.
func (l *Lab) schedule() error {
	s, g := l.Spec, l.Graph
	var all traffic.Schedule
	for i := range s.Workload {
		w := &s.Workload[i]
		field := "workload[" + strconv.Itoa(i) + "]"
		fl, err := l.expand(w, field, traffic.Rand(s.Seed, i))
		if err != nil {
			return err
		}
		if len(fl) == 0 {
			// Legal (a tiny load over a short run), but rarely meant: a run of nothing reports nothing.
			l.Warnings = append(l.Warnings, fmt.Sprintf("%s (%s): makes no flows", field, w.Kind))
		}
		all = all.Append(fl)
	}
	all.Sort()
	for _, f := range all {
		if fr, ok := l.Router.(route.FlowRouter); ok && len(f.Via) == 0 && len(f.Path) == 0 {
			fp, err := l.flowRouted(fr, f) // flowroute.go
			if err != nil {
				return err
			}
			l.Flows = append(l.Flows, fp)
			continue
		}
		p, err := l.pathFor(f)
		if err != nil {
			return err
		}
		fp := FlowPlan{Flow: f, SrcNode: g.Hosts[f.Src], Path: p}
		// Server-centric fabrics are source-routed (BCube's own design); switch-centric ones forward by
		// table unless the spec pinned the path or chose a routing the ECMP tables cannot express
		// (up*/down*, smart, KSP, Valiant...): without the source route such a spec would silently run
		// on shortest paths.
		if route.ServerCentric(g) || len(f.Via) > 0 || len(f.Path) > 0 || !tableRouted(l.Router) {
			fp.Route = p.Route()
		}
		if err := l.candidatePaths(&fp); err != nil { // adaptive.go
			return err
		}
		mtu := s.Host.MTU
		fp.Ideal = nodes.IdealFCT(f.Size, mtu, len(fp.Route), p.Rates(g), p.Delays(g))
		fp.Base = l.pathBase(p)
		l.Flows = append(l.Flows, fp)
	}
	return nil
}

// tableRouted reports whether a router's flows follow the lab's shortest-path ECMP tables, so switches
// can forward them by table ("free" behaves like shortest for flows).
func tableRouted(r route.Router) bool {
	n := r.Name()
	return n == "shortest" || n == "free"
}

// expand turns one workload entry into flows (IDs from 1, After referring to them).
func (l *Lab) expand(w *spec.Workload, field string, r *rand.Rand) (traffic.Schedule, error) {
	class := w.Name
	wrap := func(fl traffic.Schedule, err error) (traffic.Schedule, error) {
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", field, w.Kind, err)
		}
		for k := range fl {
			if fl[k].Class == "" || fl[k].Class == "trace" {
				fl[k].Class = class
			} else if w.Kind == "ps" || w.Kind == "moe" {
				// The generator's stage suffix ("-push", "-dispatch") follows the workload's name.
				fl[k].Class = class + fl[k].Class[strings.LastIndex(fl[k].Class, "-"):]
			}
		}
		return fl, nil
	}
	hosts, err := l.participants(w, field)
	if err != nil {
		return nil, err
	}
	if err := l.chargeWorkload(w, field, hosts); err != nil {
		return nil, err
	}
	switch w.Kind {
	case "flows":
		var s traffic.Schedule
		for j, f := range w.List {
			ff := fmt.Sprintf("%s.list[%d]", field, j)
			src, err := l.hostIndex(f.Src, ff+".src")
			if err != nil {
				return nil, err
			}
			dst, err := l.hostIndex(f.Dst, ff+".dst")
			if err != nil {
				return nil, err
			}
			if src == dst {
				return nil, fmt.Errorf("%s: src and dst are both %s", ff, f.Src)
			}
			s = append(s, traffic.Flow{ID: uint32(j + 1), Src: src, Dst: dst, Size: f.Size.Resolve(l.hostBDP()),
				At: f.At.Clock(), Class: class, Via: f.Via, Path: f.Path})
		}
		return s, nil
	case "incast":
		return wrap(l.incast(w, field, r, hosts))
	case "poisson":
		sizes, err := l.sizes(w, field)
		if err != nil {
			return nil, err
		}
		m := traffic.Uniform(hosts)
		if len(w.Pairs) > 0 {
			var pairs [][2]int
			for k, p := range w.Pairs {
				pf := fmt.Sprintf("%s.pairs[%d]", field, k)
				src, err := l.hostIndex(p.Src, pf+".src")
				if err != nil {
					return nil, err
				}
				dst, err := l.hostIndex(p.Dst, pf+".dst")
				if err != nil {
					return nil, err
				}
				pairs = append(pairs, [2]int{src, dst})
			}
			m = traffic.Pairs(pairs)
		}
		return wrap(traffic.Poisson(r, l.arrivals(w, sizes, m)))
	case "permutation", "all-to-all":
		chosen, err := traffic.Choose(r, hosts, w.Fraction)
		if err != nil {
			return nil, fmt.Errorf("%s.fraction: %w", field, err)
		}
		m := traffic.Uniform(chosen)
		if w.Kind == "permutation" {
			m = traffic.Permutation(r, chosen)
		} else if w.Connections > 0 {
			// The telemetry paper's Table I: N long flows between uniformly drawn (src, dst) pairs.
			return wrap(traffic.Connections(r, m, w.Connections, w.Size.Resolve(l.hostBDP()), w.At.Clock(), w.Name))
		}
		if err := l.charge(field, matrixFlows(m, false), fmt.Sprintf("%d hosts", len(chosen)), 0); err != nil {
			return nil, err
		}
		return wrap(l.matrixFlows(w, field, r, m, false))
	case "adv1", "adv2", "unf":
		groups := traffic.Groups(hosts, func(h int) int { return l.Graph.Nodes[l.Graph.Hosts[h]].Group })
		var m traffic.Matrix
		switch {
		case w.Kind == "adv1" && w.Pattern == "random-pair":
			m, _, err = traffic.Adv1Pair(r, groups)
		case w.Kind == "adv1":
			m, err = traffic.Adv1(groups)
		case w.Kind == "adv2":
			m, _, err = traffic.Adv2(r, groups)
		default:
			m, err = traffic.Unf(groups)
		}
		if err != nil {
			return nil, fmt.Errorf("%s.kind: %w (groups come from the topology: dragonfly groups, fat-tree pods)", field, err)
		}
		if w.Connections > 0 {
			return wrap(traffic.Connections(r, m, w.Connections, w.Size.Resolve(l.hostBDP()), w.At.Clock(), w.Name))
		}
		if err := l.charge(field, matrixFlows(m, true), fmt.Sprintf("%d sources", len(m.Src)), 0); err != nil {
			return nil, err
		}
		return wrap(l.matrixFlows(w, field, r, m, true))
	case "projector":
		sizes, err := l.sizes(w, field)
		if err != nil {
			return nil, err
		}
		racks := traffic.Groups(hosts, func(h int) int { return l.Graph.Peer(l.Graph.Hosts[h], 0).Node })
		pairs, p, err := traffic.Skewed(r, racks, w.Zipf)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		dur := w.Duration.Clock()
		if dur <= 0 {
			dur = l.End - w.Start.Clock()
		}
		return wrap(traffic.PairPoisson(r, pairs, p, w.Lambda, sizes, w.Start.Clock(), dur, w.Name))
	case "ps":
		server, err := l.hostIndex(w.Server, field+".server")
		if err != nil {
			return nil, err
		}
		var workers []int
		for _, h := range hosts {
			if h != server {
				workers = append(workers, h)
			}
		}
		if w.Workers > 0 {
			if w.Workers > len(workers) {
				return nil, fmt.Errorf("%s.workers: %d workers but only %d hosts besides the server", field, w.Workers, len(workers))
			}
			workers = workers[:w.Workers]
		}
		return wrap(traffic.ParamServer(traffic.PS{Server: server, Workers: workers, Push: w.PushSize.Resolve(l.hostBDP()),
			Broadcast: w.BroadcastSize.Resolve(l.hostBDP()), Rounds: w.Rounds, At: w.At.Clock(), Class: class}))
	case "moe":
		return wrap(traffic.MixtureOfExperts(r, traffic.MoE{Hosts: hosts, Experts: w.Experts, TopK: w.TopK, Tokens: w.Tokens,
			TokenSize: w.TokenSize.Resolve(l.hostBDP()), Zipf: w.Zipf, Layers: w.Layers, At: w.At.Clock(), Class: class}))
	case "trace":
		fl, err := traffic.LoadTrace(w.Format, w.Path, len(l.Graph.Hosts))
		if err != nil {
			return nil, fmt.Errorf("%s.path: %w", field, err)
		}
		if err := l.charge(field, float64(len(fl)), "the trace's flows", 0); err != nil {
			return nil, err
		}
		if err := l.placeTrace(w, field, fl); err != nil {
			return nil, err
		}
		return wrap(fl, nil)
	}
	return nil, fmt.Errorf("%s.kind: %q is not available in this build", field, w.Kind)
}

// participants is the workload's hosts list resolved, or every host.
func (l *Lab) participants(w *spec.Workload, field string) ([]int, error) {
	if len(w.Hosts) == 0 {
		all := make([]int, len(l.Graph.Hosts))
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	var hs []int
	for k, name := range w.Hosts {
		h, err := l.hostIndex(name, fmt.Sprintf("%s.hosts[%d]", field, k))
		if err != nil {
			return nil, err
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// hostRate is the rate a load is a share of: the spec's link rate, which is the host links' rate in
// every family (in Rail-only NDC the rails; the HBD rate is set apart as hbd_rate).
func (l *Lab) hostRate() float64 { return float64(l.Spec.Topology.Link.Rate) }

func (l *Lab) sizes(w *spec.Workload, field string) (traffic.SizeDist, error) {
	switch {
	case w.CDF == "pareto":
		p := traffic.Pareto{Shape: w.Shape, Nominal: float64(w.Mean.Resolve(l.hostBDP())), Cap: float64(w.Cap.Resolve(l.hostBDP()))}
		if err := p.Check(); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		return p, nil
	case strings.HasPrefix(w.CDF, "file:"):
		c, err := traffic.LoadCDF(strings.TrimPrefix(w.CDF, "file:"))
		if err != nil {
			return nil, fmt.Errorf("%s.cdf: %w", field, err)
		}
		return c, nil
	}
	c, err := traffic.Builtin(w.CDF)
	if err != nil {
		return nil, fmt.Errorf("%s.cdf: %w", field, err)
	}
	return c, nil
}

func (l *Lab) arrivals(w *spec.Workload, sizes traffic.SizeDist, m traffic.Matrix) traffic.Arrivals {
	return traffic.Arrivals{Sizes: sizes, RateBps: l.hostRate(), Load: w.Load, Start: w.Start.Clock(),
		Duration: w.Duration.Clock(), Matrix: m, Class: w.Name}
}

// matrixFlows is a pattern's flows: Poisson arrivals over the matrix when the workload gives a cdf, or
// one flow of size per pair (draw: per source) at `at`.
func (l *Lab) matrixFlows(w *spec.Workload, field string, r *rand.Rand, m traffic.Matrix, draw bool) (traffic.Schedule, error) {
	if w.CDF != "" {
		sizes, err := l.sizes(w, field)
		if err != nil {
			return nil, err
		}
		return traffic.Poisson(r, l.arrivals(w, sizes, m))
	}
	return traffic.Once(r, m, w.Size.Resolve(l.hostBDP()), w.At.Clock(), draw, w.Name)
}

func (l *Lab) incast(w *spec.Workload, field string, r *rand.Rand, hosts []int) (traffic.Schedule, error) {
	size := w.Size.Resolve(l.hostBDP())
	if w.Load > 0 {
		return traffic.PoissonIncast(r, traffic.IncastArrivals{Hosts: hosts, Senders: w.Senders, Size: size,
			RateBps: l.hostRate(), Load: w.Load, Start: w.At.Clock(), Duration: w.Duration.Clock(), Class: w.Name})
	}
	recv := -1
	if w.Receiver != "" {
		h, err := l.hostIndex(w.Receiver, field+".receiver")
		if err != nil {
			return nil, err
		}
		recv = h
	} else {
		// Drawn among hosts not listed as senders, so a listed sender set stays whole.
		listed := map[int]bool{}
		if len(w.Hosts) > 0 {
			for _, h := range hosts[:min(w.Senders, len(hosts))] {
				listed[h] = true
			}
		}
		var cand []int
		for h := range l.Graph.Hosts {
			if !listed[h] {
				cand = append(cand, h)
			}
		}
		if len(cand) == 0 {
			return nil, fmt.Errorf("%s.receiver: every host is a sender", field)
		}
		recv = cand[r.IntN(len(cand))]
	}
	var from []int
	if len(w.Hosts) > 0 {
		from = hosts
	}
	count := max(w.Count, 1)
	var s traffic.Schedule
	for c := 0; c < count; c++ {
		at := w.At.Clock()
		if iv := w.Interval.Clock(); iv > 0 && clock.Time(c) > clock.Never/iv {
			at = clock.Never // validation refuses incasts after the run; this only keeps it from wrapping
		} else {
			at = clock.Add(at, clock.Time(c)*iv)
		}
		fl, err := traffic.Incast(r, len(l.Graph.Hosts), w.Senders, recv, from, size, at)
		if err != nil {
			return nil, err
		}
		s = append(s, fl...)
	}
	for k := range s {
		s[k].ID = uint32(k + 1)
	}
	return s, nil
}

// charge counts flows against the budget (nil work: a Lab not made by Build, nothing to check).
func (l *Lab) charge(field string, flows float64, how string, draws float64) error {
	if l.work == nil {
		return nil
	}
	return l.work.add(field, flows, how, draws)
}

// matrixFlows is how many flows traffic.Once makes from m.
func matrixFlows(m traffic.Matrix, draw bool) float64 {
	if draw {
		return float64(len(m.Src))
	}
	var n float64
	for _, row := range m.Dst {
		n += float64(len(row))
	}
	return n
}

// chargeWorkload estimates, in floating point so nothing overflows, the flows of the kinds whose count
// the spec fixes or whose expected count follows from load, and charges them before generation.
// Pattern kinds without cdf and traces are charged where their matrix or file is known.
func (l *Lab) chargeWorkload(w *spec.Workload, field string, hosts []int) error {
	n := float64(len(hosts))
	rate := l.hostRate()
	switch w.Kind {
	case "flows":
		return l.charge(field, float64(len(w.List)), "the listed flows", 0)
	case "incast":
		if w.Load > 0 {
			size := float64(w.Size.Resolve(l.hostBDP()))
			events := w.Duration.Clock().Seconds() * rate * n * w.Load / (float64(w.Senders) * size * 8)
			return l.charge(field, events*float64(w.Senders), fmt.Sprintf("about %s incasts of %d senders", fmtCount(math.Round(events)), w.Senders), 0)
		}
		return l.charge(field, float64(max(w.Count, 1))*float64(w.Senders), fmt.Sprintf("count %d x senders %d", max(w.Count, 1), w.Senders), 0)
	case "poisson", "permutation", "all-to-all", "adv1", "adv2":
		if w.CDF == "" {
			return nil // one flow per pair: charged once the matrix is drawn
		}
		sizes, err := l.sizes(w, field)
		if err != nil {
			return err
		}
		sources := n
		if len(w.Pairs) > 0 {
			src := map[string]bool{}
			for _, p := range w.Pairs {
				src[p.Src] = true
			}
			sources = float64(len(src))
		}
		perSource := w.Duration.Clock().Seconds() * rate * w.Load / (sizes.Mean() * 8)
		return l.charge(field, sources*perSource, fmt.Sprintf("%d sources x %s arrivals each over %s at load %g",
			int(sources), fmtCount(math.Round(perSource)), w.Duration, w.Load), 0)
	case "ps":
		workers := float64(w.Workers)
		if workers == 0 {
			workers = n - 1
		}
		return l.charge(field, 2*workers*float64(w.Rounds), fmt.Sprintf("rounds %d x %d workers x 2", w.Rounds, int(workers)), 0)
	case "moe":
		// Per token the generator copies the experts' weights and draws top_k of them.
		draws := float64(w.Layers) * float64(w.Tokens) * float64(w.Experts+w.TopK)
		// Bytes one (token host, expert host) pair can gather in a layer: every token to it.
		if b := float64(w.Tokens) * float64(w.TopK) * float64(w.TokenSize.Resolve(l.hostBDP())); b > float64(units.MaxBytes) {
			return fmt.Errorf("%s.token_size: tokens x top_k x token_size is %g bytes, more than %d, the largest flow", field, b, units.MaxBytes)
		}
		pairs := math.Min(n*n, float64(w.Tokens)*float64(w.TopK))
		return l.charge(field, 2*float64(w.Layers)*pairs, fmt.Sprintf("layers %d x tokens %d x (experts %d + top_k %d)", w.Layers, w.Tokens, w.Experts, w.TopK),
			draws)
	}
	return nil
}

// placeTrace puts a trace's flows at the workload's start (rebase: its first flow at start) and refuses
// a trace whose flows would start at or after the run's end: they would never run, and the run would
// report "0/0 flows" as if nothing were wrong (HPCC's generator starts flows at 2 s).
func (l *Lab) placeTrace(w *spec.Workload, field string, fl traffic.Schedule) error {
	if len(fl) == 0 {
		return nil
	}
	first, last := fl[0].At, fl[0].At
	for _, f := range fl {
		first, last = min(first, f.At), max(last, f.At)
	}
	shift := w.Start.Clock()
	if w.Rebase {
		shift -= first
	}
	late := 0
	for k := range fl {
		fl[k].At = clock.Add(fl[k].At, shift)
		if fl[k].At >= l.End {
			late++
		}
	}
	if late == 0 {
		return nil
	}
	hint := "set rebase: true to start the trace's first flow at `start`, or lengthen duration"
	if w.Rebase {
		hint = "lengthen duration"
	}
	return fmt.Errorf("%s: %d of %d flows would start at or after the run's duration %s (the trace's flows start from %v to %v, shifted by %v): %s",
		field, late, len(fl), l.Spec.Duration, first, last, shift, hint)
}
