// Package lab assembles an experiment spec into a lab: the topology graph, the routes, every device's
// configuration and the flow schedule, all as plain data. Backends instantiate a Lab; they never compute
// routes or read the spec's YAML. Everything that can be wrong with a spec is found here, before a
// backend creates anything.
package lab

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/bound"
	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/switchsw"
	"github.com/fabriclab/fabriclab/switchsw/fc"
	"github.com/fabriclab/fabriclab/traffic"
)

// Lab is a spec made concrete.
type Lab struct {
	Spec     *spec.Spec
	Graph    *topo.Graph
	Tables   *route.Tables
	Router   route.Router
	Switches []SwitchDev
	Hosts    []HostDev
	Flows    []FlowPlan
	// End is when the run stops at the latest (engine time, before dilation).
	End clock.Time
	// Warnings are legal but suspicious settings (fc.go checkBuffers), for the command to print.
	Warnings []string
	// Faults are the spec's cable faults, planned (faults.go).
	Faults []FaultPlan

	diameter int   // host-to-host, in links
	work     *work // the budget left while the schedule is made (budget.go)
}

// SwitchDev is one switch and its configuration.
type SwitchDev struct {
	Node   int
	Config switchsw.Config
}

// HostDev is one host (NIC) and its configuration.
type HostDev struct {
	Node   int
	Config nodes.Config
}

// FlowPlan is a scheduled flow with the route it takes (nil: forwarded by table) and its ideal FCT.
type FlowPlan struct {
	traffic.Flow
	SrcNode int
	Route   []uint8
	// Then is the source route past ThenAfter bytes (HYBRID's VLB part, nodes.Flow.Then); nil: none.
	Then      []uint8
	ThenAfter int64
	// Paths are the candidate source routes the NIC chooses among at run time (route.Adaptive: ugal,
	// telemetry); Paths[0] is Route. Nil otherwise.
	Paths [][]uint8
	// Base, ThenBase and PathBases are Route's (or Path's), Then's and each candidate's idle delays
	// (pathBase), for the NIC's per-path limits.
	Base      nodes.PathBase
	ThenBase  nodes.PathBase
	PathBases []nodes.PathBase
	// Cands are Paths as the router gave them (with per-hop classes) when the NIC spreads the flow over
	// its pair's paths (spread.go) or chooses among them (adaptive.go); nil otherwise.
	Cands []route.Path
	Path  route.Path // the path the ideal FCT was computed on
	Ideal clock.Time
}

// Build resolves s (defaults, validation) and assembles the lab within DefaultBudget.
func Build(s *spec.Spec) (*Lab, error) { return BuildWithin(s, DefaultBudget) }

// BuildWithin is Build with a work budget: a spec needing more is refused before the work is done.
func BuildWithin(s *spec.Spec, b Budget) (*Lab, error) {
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	family, params := s.TopologyParams()
	g, err := BuildTopology(family, params, b)
	if err != nil {
		var be *BudgetError
		if errors.As(err, &be) {
			return nil, err
		}
		return nil, fmt.Errorf("topology: %w", err)
	}
	maxPorts := 0
	for _, n := range g.Nodes {
		maxPorts = max(maxPorts, len(n.Ports))
	}
	// A hard limit, unlike the budget: no --budget raises what an event's order can name.
	if err := clock.CheckOrderRoom(len(g.Nodes), maxPorts); err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	if err := b.checkTopology(len(g.Nodes), len(g.Hosts)); err != nil {
		return nil, err
	}
	if !fcImplemented(s.Switch.FlowControl) {
		return nil, fmt.Errorf("switch.flow_control: %q is not available in this build (available: %v)", s.Switch.FlowControl, fc.Modes())
	}
	if s.Host.Transport == "kernel-tcp" && s.Backend != "netns" {
		// Kernel TCP needs a kernel: namespaces, not the virtual clock.
		return nil, fmt.Errorf("host.transport: kernel-tcp runs real Linux TCP and needs backend: netns (backend is %q)", s.Backend)
	}
	router, rerr := route.New(s.Routing.Algorithm, g, route.SpecParams(s.Routing.Algorithm, routingParams(s)))
	// The shortest router's tables are route.Shortest(g), the ones the lab needs: one copy, built once,
	// serves both (at k=12 the second copy kept 0.64 MB, and BenchmarkBuild went from 35-43 to 22-30 ms).
	var tables *route.Tables
	if f, ok := router.(route.Forwarder); rerr == nil && ok {
		tables = f.Tables()
	}
	if tables == nil {
		var err error
		if tables, err = route.Shortest(g); err != nil {
			return nil, fmt.Errorf("routing: %w", err)
		}
	}
	if rerr != nil {
		return nil, fmt.Errorf("routing.algorithm: %w", rerr)
	}
	l := &Lab{Spec: s, Graph: g, Tables: tables, Router: router, End: s.Duration.Clock(), diameter: g.Stats().Diameter,
		work: &work{b: b, baseMem: float64(len(g.Nodes)) * (float64(len(g.Hosts))*bytesPerEntry + bytesPerDevice)}}
	if l.End <= 0 {
		return nil, fmt.Errorf("duration: a run needs a duration (it bounds a run that deadlocks)")
	}
	if err := l.checkFC(); err != nil { // fc.go
		return nil, err
	}
	for _, n := range g.Switches {
		l.Switches = append(l.Switches, SwitchDev{Node: n, Config: l.switchConfig(n)})
	}
	if err := l.checkBuffers(); err != nil { // fc.go
		return nil, err
	}
	if err := l.planFaults(); err != nil { // faults.go
		return nil, err
	}
	for _, n := range g.Hosts {
		l.Hosts = append(l.Hosts, HostDev{Node: n, Config: l.hostConfig(n)})
	}
	if s.Host.Transport != "kernel-tcp" && len(l.Hosts) > 0 {
		// The NIC derives its memory guard's thresholds from its ports and queues; a buffer too small
		// for them is the spec's error, found here rather than by a backend.
		if _, err := nodes.New(l.Hosts[0].Config, clock.NewVirtual(), nil, nil); err != nil {
			return nil, fmt.Errorf("host.nic_buffer: %w", err)
		}
	}
	if err := l.schedule(); err != nil {
		return nil, err
	}
	if err := l.classTurns(); err != nil { // classes.go
		return nil, err
	}
	return l, nil
}

// routingParams is the spec's routing block as the string map route factories take; unset keys are
// left out so each algorithm's default applies. The routing seed falls back to the spec's seed.
func routingParams(s *spec.Spec) map[string]string {
	r, m := s.Routing, map[string]string{}
	if r.K > 0 {
		m["k"] = strconv.Itoa(r.K)
	}
	if r.LosslessPriorities > 0 {
		m["lossless_priorities"] = strconv.Itoa(r.LosslessPriorities)
	}
	if r.Trials > 0 {
		m["trials"] = strconv.Itoa(r.Trials)
	}
	if r.MaxPaths > 0 {
		m["max_paths"] = strconv.Itoa(r.MaxPaths)
	}
	if seed := routingSeed(s); seed > 0 {
		m["seed"] = strconv.FormatInt(seed, 10)
	}
	if r.Threshold.Bytes > 0 || r.Threshold.BDPs > 0 {
		m["threshold"] = strconv.FormatInt(r.Threshold.Resolve(0), 10)
	}
	if r.P > 0 { // ate (lab/route/ate.go)
		m["p"] = strconv.FormatFloat(r.P, 'g', -1, 64)
	}
	if r.Measure != "" { // ate
		m["measure"] = r.Measure
	}
	return m
}

// routingSeed is the routing block's seed, else the spec's: it seeds routers and the switches' ECMP hash.
func routingSeed(s *spec.Spec) int64 {
	if s.Routing.Seed != 0 {
		return s.Routing.Seed
	}
	return s.Seed
}

func fcImplemented(mode string) bool {
	for _, m := range fc.Modes() {
		if m == mode {
			return true
		}
	}
	return false
}

func (l *Lab) switchConfig(n int) switchsw.Config {
	s, g := l.Spec, l.Graph
	node := &g.Nodes[n]
	c := switchsw.Config{
		Device:       int32(n),
		MTU:          l.maxFrame(),
		BufferBytes:  s.Switch.Buffer.Resolve(0),
		ReserveBytes: s.Switch.Reserve.Resolve(0),
		FlowControl: fc.Config{
			Mode:          s.Switch.FlowControl,
			XOFF:          s.Switch.XOFF.Size,
			XON:           s.Switch.XON.Size,
			Alpha:         s.Switch.Alpha,
			HeadroomBytes: s.Switch.Headroom.Resolve(l.hostBDP()),
		},
		ECN: switchsw.ECNConfig{
			Enabled:   s.Switch.ECN.ECNEnabled(),
			KMinBytes: s.Switch.ECN.KMin.Resolve(l.hostBDP()),
			KMaxBytes: s.Switch.ECN.KMax.Resolve(l.hostBDP()),
			PMax:      s.Switch.ECN.PMax,
		},
		FIB:        l.Tables.FIB[n],
		ECMPSeed:   uint32(routingSeed(s)),
		FlowletGap: s.Routing.FlowletGap.Clock(),
		Seed:       s.Seed,
		// The data priority's queue: the one every data frame of this lab takes.
		AcksWithData: s.Switch.Acks == "data",
		AckDataPrio:  nodes.DefaultDataPrio,
	}
	// Only the data priority is lossless: headroom is reserved per lossless priority, and reserving it
	// for all eight would take ~2 MB of a 5 MB buffer from the shared pool.
	c.Lossless = make([]bool, 8)
	c.Lossless[nodes.DefaultDataPrio] = true
	if s.Switch.FlowControl == "lossy" {
		// One spec alpha serves both modes: here the drop-tail's dynamic queue limit (Broadcom style),
		// under PFC the dynamic XOFF (FlowControl.Alpha above).
		c.Alpha = s.Switch.Alpha
		c.FlowControl.Alpha = 0
	}
	for p := range node.Ports {
		link := g.LinkAt(n, p)
		peer := g.Nodes[g.Peer(n, p).Node]
		c.Ports = append(c.Ports, switchsw.PortConfig{
			RateBps: link.RateBps, Delay: link.Delay, Overhead: int(s.Topology.Link.Overhead.Bytes),
			PeerIsHost: peer.Kind == topo.Host, PeerHost: int32(peer.Index),
		})
	}
	l.switchFC(n, &c) // fc.go
	return c
}

// maxFrame is the largest frame a switch can receive: a full data packet with the longest source route
// the lab's paths can carry. It enters the PFC headroom.
func (l *Lab) maxFrame() int {
	mtu := l.Spec.Host.MTU
	if mtu == 0 {
		mtu = nodes.DefaultMTU
	}
	return pkt.DataSize(mtu, l.diameter+1)
}

// hostBDP is one host link's rate x one-way delay, the unit "Nbdp" sizes resolve to where a size is not
// per port (ECN thresholds, headroom override): the PortFC paper's "single-hop" BDP (PortFC paper §V-A).
func (l *Lab) hostBDP() int64 {
	g := l.Graph
	if len(g.Hosts) == 0 {
		return 0
	}
	link := g.LinkAt(g.Hosts[0], 0)
	return int64(link.RateBps/8*link.Delay.Seconds() + 0.5)
}

func (l *Lab) hostConfig(n int) nodes.Config {
	s, g := l.Spec, l.Graph
	node := &g.Nodes[n]
	h := s.Host
	c := nodes.Config{
		Device: int32(n), Host: int32(node.Index),
		Transport: h.Transport, CC: h.CC, MTU: h.MTU, AckEvery: h.AckEvery,
		RTO: h.RTO.Clock(), RTOLow: h.RTOLow.Clock(), RTOHigh: h.RTOHigh.Clock(), RTOThreshold: h.RTOThreshold,
		CNP: h.CNP, CNPInterval: h.CNPInterval.Clock(), NackInterval: h.NACKInterval.Clock(),
		DCQCN: nodes.DCQCN{
			G: h.DCQCN.G, AlphaInterval: h.DCQCN.AlphaResume.Clock(), DecreaseInterval: h.DCQCN.RateDecrease.Clock(),
			RPTimer: h.DCQCN.RPTimer.Clock(), FastRecoveryTimes: h.DCQCN.FastRecovery,
			RateAIBps: float64(h.DCQCN.RateAI), RateHAIBps: float64(h.DCQCN.RateHAI), MinRateBps: float64(h.DCQCN.MinRate),
		},
		DCTCP:       nodes.DCTCP{G: h.DCTCP.G, InitWindow: h.DCTCP.InitWindow},
		Relay:       route.ServerCentric(g),
		MeasureFrom: s.MeasureFrom.Clock(),
		FIB:         l.Tables.FIB[n],
		Seed:        uint64(s.Seed),
	}
	c.NICMem = nodes.NICMemConfig{Bytes: h.NICBuffer.Resolve(l.hostBDP()), Guard: nodes.GuardPause}
	if s.Switch.FlowControl == "lossy" {
		e := s.Switch.ECN
		c.NICMem.Guard = nodes.GuardECN
		if e.ECNEnabled() {
			c.NICMem.KMin, c.NICMem.KMax, c.NICMem.PMax = e.KMin.Resolve(l.hostBDP()), e.KMax.Resolve(l.hostBDP()), e.PMax
		} else {
			c.NICMem.KMin, c.NICMem.KMax = c.NICMem.Bytes, c.NICMem.Bytes
		}
	}
	c.RelayWeight = h.RelayWeight
	if h.Transport == nodes.IRN && h.BDPCapEnabled() {
		// Each flow's cap comes from the path it is on (FlowPlan.Base, PathBases); the diameter's is
		// only the fallback for a flow the lab planned no path for.
		c.BDPCapBytes, c.BDPCapPath = l.pathBDP(), true
	}
	for p := range node.Ports {
		link := g.LinkAt(n, p)
		c.Ports = append(c.Ports, nodes.PortConfig{RateBps: link.RateBps, Delay: link.Delay,
			Overhead: int(l.Spec.Topology.Link.Overhead.Bytes)})
	}
	l.hostFC(n, &c)      // fc.go
	l.hostPathSelect(&c) // adaptive.go
	l.hostSpread(&c)     // spread.go
	return c
}

// pathBase is p's delays on an idle fabric, as the NIC sizes per-path limits from them: one full data
// frame (with p's source route) serialized per hop at each link's rate, propagation one way (OneWay)
// and both ways (RTT, IRN's base RTT: "link rate x max-path base RTT" taken per path), and the
// bottleneck rate the cap is sized at (PortFC §V-E: BDP-FC is "constrained by the slowest path segment").
func (l *Lab) pathBase(p route.Path) nodes.PathBase {
	g := l.Graph
	mtu := l.Spec.Host.MTU
	if mtu == 0 {
		mtu = nodes.DefaultMTU
	}
	frame := pkt.DataSize(mtu, len(p.Route()))
	b := nodes.PathBase{RateBps: p.Bottleneck(g)}
	rates, delays := p.Rates(g), p.Delays(g)
	for i, r := range rates {
		tx := clock.TxTime(frame, r)
		b.OneWay += delays[i] + tx
		b.RTT += 2*delays[i] + tx
	}
	return b
}

// pathBDP is IRN's BDP-FC cap: the bottleneck host link rate x the base RTT of the longest shortest
// path (propagation both ways plus one MTU frame's serialization per hop), as IRN sizes its
// BDP-FC window (link rate x max-path base RTT). The bottleneck is the slowest host link, so on Rail-only NDC
// the window is the 100 Gb/s rail's, not the 160 Gb/s HBD's (PortFC §V-E: BDP-FC "constrained by the
// slowest path segment"); delays are the longest host link's.
func (l *Lab) pathBDP() int64 {
	g := l.Graph
	d := clock.Time(l.diameter)
	rate, delay := 0.0, clock.Time(0)
	for _, h := range g.Hosts {
		for p := range g.Nodes[h].Ports {
			link := g.LinkAt(h, p)
			if rate == 0 || link.RateBps < rate {
				rate = link.RateBps
			}
			delay = max(delay, link.Delay)
		}
	}
	mtu := l.Spec.Host.MTU
	if mtu == 0 {
		mtu = nodes.DefaultMTU
	}
	rtt := 2*d*delay + d*clock.TxTime(pkt.DataSize(mtu, 0), rate)
	return int64(rate/8*rtt.Seconds() + 0.5)
}

func (l *Lab) pathFor(f traffic.Flow) (route.Path, error) {
	g := l.Graph
	switch {
	case len(f.Path) > 0:
		p, err := route.ExplicitNames(g, f.Path)
		if err != nil {
			return p, fmt.Errorf("flow %d path: %w", f.ID, err)
		}
		if p.Nodes[0] != g.Hosts[f.Src] || p.Nodes[len(p.Nodes)-1] != g.Hosts[f.Dst] {
			return p, fmt.Errorf("flow %d path: must start at h%d and end at h%d", f.ID, f.Src, f.Dst)
		}
		return p, nil
	case len(f.Via) > 0:
		var relays []int
		for _, name := range f.Via {
			h, err := l.hostIndex(name, "via")
			if err != nil {
				return route.Path{}, fmt.Errorf("flow %d: %w", f.ID, err)
			}
			relays = append(relays, h)
		}
		p, err := route.Via(g, f.Src, f.Dst, relays, nil)
		if err != nil {
			return p, fmt.Errorf("flow %d via: %w", f.ID, err)
		}
		return p, nil
	}
	ps, err := l.Router.Paths(f.Src, f.Dst)
	if err != nil {
		return route.Path{}, fmt.Errorf("flow %d (h%d->h%d): %w", f.ID, f.Src, f.Dst, err)
	}
	if len(ps) == 0 {
		return route.Path{}, fmt.Errorf("flow %d: no path from h%d to h%d", f.ID, f.Src, f.Dst)
	}
	return ps[0], nil
}

// hostIndex resolves a host name against the topology, naming the spec field when it fails.
func (l *Lab) hostIndex(name, field string) (int, error) {
	n, err := l.Graph.Lookup(name)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	if l.Graph.Nodes[n].Kind != topo.Host {
		return 0, fmt.Errorf("%s: %s is a switch, not a host", field, name)
	}
	return l.Graph.Nodes[n].Index, nil
}

// BDPBytes reports the lab's single-hop BDP (host link rate x one-way delay), for reports.
func (l *Lab) BDPBytes() int64 { return l.hostBDP() }

// The spec checks topology keys against the builders' own lists, so a typo is caught at validation.
// updown and smart pick their best trial by the LP, as the Fibre Channel paper does.
func init() {
	spec.TopologyKeys = topo.FamilyKeys
	route.TrialScore = bound.TrialLP
}
