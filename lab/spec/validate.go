package spec

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/fabriclab/fabriclab/clock"
)

// Validate reports every problem with the spec as Errors (nil if none), each naming the field, the bad
// value and what is allowed. It checks a spec after ApplyDefaults: required values the defaults do
// not supply (name, duration, topology family, workload fields) are reported as missing. Names of
// hosts and switches are checked for shape (h<N>, s<N>) only; whether they exist is for the lab.
func (s *Spec) Validate() error {
	if errs := s.validate(); len(errs) > 0 {
		for _, e := range errs {
			if e.Line == 0 {
				e.Line = s.lineOf(e.Field)
			}
		}
		errs.sort()
		return errs
	}
	return nil
}

// Resolve is ApplyDefaults then Validate: what a suite calls on a spec it built in Go.
func (s *Spec) Resolve() error {
	s.ApplyDefaults()
	return s.Validate()
}

type checker struct {
	errs Errors
}

func (c *checker) add(field, format string, a ...any) {
	c.errs = append(c.errs, &FieldError{Field: field, Msg: fmt.Sprintf(format, a...)})
}

// oneOf checks an enumerated value; empty counts as missing.
func (c *checker) oneOf(field, v string, allowed []string) bool {
	if slices.Contains(allowed, v) {
		return true
	}
	if v == "" {
		c.add(field, "required (one of %s)", strings.Join(allowed, ", "))
	} else {
		c.add(field, "%q is not one of %s%s", v, strings.Join(allowed, ", "), suggest(v, allowed))
	}
	return false
}

// size checks that a size is not negative and, if required, not zero.
func (c *checker) size(field string, v Size, required bool) {
	switch {
	case v.Negative():
		c.add(field, "%s is negative", v)
	case required && v.IsZero():
		c.add(field, "required: a size such as 1MB or 6bdp, greater than zero")
	default:
		c.sizeInRange(field, v)
	}
}

func (c *checker) positiveTime(field string, v Time) { c.time(field, v, true) }

func (c *checker) fraction(field string, v float64, what string) { c.number(field, v, Fraction, what) }

var (
	hostName   = regexp.MustCompile(`^h(0|[1-9][0-9]*)$`)
	deviceName = regexp.MustCompile(`^[hs](0|[1-9][0-9]*)$`)
	labName    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	paramName  = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

func (c *checker) host(field, v string) {
	if !hostName.MatchString(v) {
		if v == "" {
			c.add(field, "required: a host name such as h0")
		} else {
			c.add(field, "%q is not a host name (h0, h1, ...)", v)
		}
	}
}

func (c *checker) hosts(field string, vs []string) {
	seen := map[string]bool{}
	for i, v := range vs {
		f := fmt.Sprintf("%s[%d]", field, i)
		c.host(f, v)
		if seen[v] {
			c.add(f, "%s listed twice", v)
		}
		seen[v] = true
	}
}

// comparable reports whether two sizes are in the same unit, so that ordering them needs no BDP.
func comparable(a, b Size) bool { return (a.BDPs > 0) == (b.BDPs > 0) }

func less(a, b Size) bool {
	if a.BDPs > 0 {
		return a.BDPs < b.BDPs
	}
	return a.Bytes < b.Bytes
}

func (s *Spec) validate() Errors {
	c := &checker{}
	switch {
	case s.Name == "":
		c.add("name", "required: the lab's name (letters, digits, -, _, .)")
	case !labName.MatchString(s.Name) || len(s.Name) > 64:
		c.add("name", "%q: use at most 64 letters, digits, -, _ and . (it names namespaces and the state directory)", s.Name)
	}
	c.oneOf("backend", s.Backend, Backends)
	if !s.AutoDilation() {
		c.number("dilation", s.Dilation, DilationR, "rates are divided by it, times multiplied")
	}
	if s.Duration <= 0 {
		c.add("duration", "required: when the run ends at the latest, such as 20ms (a deadlocked run never completes its flows)")
	} else {
		c.time("duration", s.Duration, true)
	}
	if s.MeasureFrom != 0 && c.time("measure_from", s.MeasureFrom, false) && s.Duration > 0 && s.MeasureFrom >= s.Duration {
		c.add("measure_from", "%s is not before the run's duration %s", s.MeasureFrom, s.Duration)
	}
	s.validateTopology(c)
	s.validateSwitch(c)
	s.validateHost(c)
	s.validateRouting(c)
	for i := range s.Workload {
		s.Workload[i].validate(c, fmt.Sprintf("workload[%d]", i), s)
	}
	s.validateSweep(c)
	for _, k := range sortedKeys(s.Expect) {
		e := s.Expect[k]
		f := "expect." + k
		if e.Source == "" {
			c.add(f+".source", "required: where the published number comes from (paper, section, figure)")
		}
		if math.IsNaN(e.Value) || math.IsInf(e.Value, 0) {
			c.add(f+".value", "%v is not a number", e.Value)
		}
	}
	return c.errs
}

func (s *Spec) validateTopology(c *checker) {
	t := &s.Topology
	if t.Family == "" {
		c.add("topology.family", "required: a topology family such as ndc, fattree, jellyfish, dragonfly, ring")
	}
	var known []string
	if TopologyKeys != nil && t.Family != "" {
		known = TopologyKeys(t.Family)
		if known == nil {
			c.add("topology.family", "%q is not a known topology family", t.Family)
		}
	}
	for _, k := range sortedKeys(t.Params) {
		f := "topology." + k
		switch {
		case k == "rate" || k == "delay" || k == "link":
			c.add(f, "write it under link: {rate: 100Gbps, delay: 1us}")
		case !paramName.MatchString(k):
			c.add(f, "%q is not a parameter name", k)
		case known != nil && !slices.Contains(known, k):
			var keys []string
			for _, kk := range known {
				if kk != "rate" && kk != "delay" {
					keys = append(keys, kk)
				}
			}
			c.add(f, "unknown field for family %s%s (its fields: %s)", t.Family, suggest(k, keys), strings.Join(keys, ", "))
		}
	}
	c.rate("topology.link.rate", t.Link.Rate)
	c.time("topology.link.delay", t.Link.Delay, false)
	switch o := t.Link.Overhead; {
	case o.BDPs != 0:
		c.add("topology.link.overhead", "%s: give bytes, e.g. 24B (preamble, FCS and gap)", o)
	case o.Negative() || o.Bytes > MaxLinkOverhead:
		c.add("topology.link.overhead", "%s is not in 0..%dB", o, MaxLinkOverhead)
	}
}

// MaxLinkOverhead bounds topology.link.overhead: more than a jumbo frame per frame is no framing.
const MaxLinkOverhead = 9216

func (s *Spec) validateSwitch(c *checker) {
	sw := &s.Switch
	c.oneOf("switch.flow_control", sw.FlowControl, FlowControls)
	c.size("switch.buffer", sw.Buffer, true)
	c.size("switch.xoff", sw.XOFF, true)
	c.size("switch.xon", sw.XON, false)
	c.size("switch.headroom", sw.Headroom, false)
	c.size("switch.reserve", sw.Reserve, false)
	if comparable(sw.XON, sw.XOFF) && less(sw.XOFF, sw.XON) {
		c.add("switch.xon", "%s exceeds xoff %s: resume must come at or below the pause threshold", sw.XON, sw.XOFF)
	}
	if sw.Alpha == 0 && sw.XOFF.BDPs == 0 && sw.Buffer.BDPs == 0 && sw.XOFF.Bytes > sw.Buffer.Bytes {
		c.add("switch.xoff", "%s exceeds the switch buffer %s", sw.XOFF, sw.Buffer)
	}
	c.number("switch.alpha", sw.Alpha, AlphaR, "0: static thresholds; > 0: dynamic, e.g. 0.125")
	e := &sw.ECN
	c.size("switch.ecn.kmin", e.KMin, false)
	c.size("switch.ecn.kmax", e.KMax, false)
	if comparable(e.KMin, e.KMax) && less(e.KMax, e.KMin) {
		c.add("switch.ecn.kmin", "%s exceeds kmax %s", e.KMin, e.KMax)
	}
	c.number("switch.ecn.pmax", e.PMax, Probability, "it is a marking probability")
	if sw.Priorities < 0 || sw.Priorities > 8 {
		c.add("switch.priorities", "%d is not in 1..8 (802.1Qbb has 8 priorities)", sw.Priorities)
	}
	c.oneOf("switch.relay_pfc", sw.RelayPFC, RelayPFCModes)
	if sw.PFCStarRaise != "" {
		c.oneOf("switch.pfcstar_raise", sw.PFCStarRaise, PFCStarRaises)
		if sw.FlowControl != "pfcstar" {
			c.add("switch.pfcstar_raise", "is for flow_control pfcstar, not %q", sw.FlowControl)
		}
	}
	if sw.Acks != "" && c.oneOf("switch.acks", sw.Acks, AckModes) && sw.Acks == "data" &&
		sw.FlowControl != "pfc" && sw.FlowControl != "lossy" {
		c.add("switch.acks", "data needs flow_control pfc or lossy: under %s a data frame's queue is not its priority's alone", sw.FlowControl)
	}
}

func (s *Spec) validateHost(c *checker) {
	h := &s.Host
	c.oneOf("host.profile", h.Profile, ProfileNames)
	c.oneOf("host.cnp", h.CNP, CNPModes)
	c.positiveTime("host.cnp_interval", h.CNPInterval)
	c.size("host.nic_buffer", h.NICBuffer, true)
	if h.RelayWeight < 1 || h.RelayWeight > 1000 {
		c.add("host.relay_weight", "%d is not in 1..1000 (DRR weight of the relay queue)", h.RelayWeight)
	}
	tOK := c.oneOf("host.transport", h.Transport, Transports)
	ccOK := c.oneOf("host.cc", h.CC, CCs)
	fc := s.Switch.FlowControl
	if tOK {
		switch {
		case h.Transport == "kernel-tcp" && fc == "portfc":
			c.add("host.transport", "kernel-tcp cannot run with switch.flow_control portfc: PortFC needs NIC node queues a kernel stack does not have (use lossy, pfc or pfcstar)")
		case h.Transport == "kernel-tcp" && s.Backend == "virtual":
			c.add("host.transport", "kernel-tcp runs real Linux TCP and needs backend netns")
		case h.Transport == "lossless" && fc == "lossy":
			c.add("host.transport", "lossless cannot recover losses and switch.flow_control is lossy (use gbn or irn, or a lossless flow_control: pfc, pfcstar, portfc)")
		}
	}
	if tOK && ccOK {
		tcp := h.Transport == "kernel-tcp"
		switch {
		case tcp && h.CC != "cubic" && h.CC != "dctcp":
			c.add("host.cc", "%q does not apply to kernel-tcp (use cubic or dctcp)", h.CC)
		case !tcp && h.CC != "none" && h.CC != "dcqcn" && h.CC != "dctcp":
			c.add("host.cc", "%q is a kernel TCP algorithm; transport %s takes none, dcqcn or dctcp", h.CC, h.Transport)
		}
	}
	if h.MTU < 256 || h.MTU > 9000 {
		c.add("host.mtu", "%d is not in 256..9000 (payload bytes per packet)", h.MTU)
	}
	c.integer("host.ack_every", h.AckEvery, 1, MaxCount, "data packets per acknowledgement")
	c.positiveTime("host.rto", h.RTO)
	c.positiveTime("host.rto_low", h.RTOLow)
	c.positiveTime("host.rto_high", h.RTOHigh)
	if h.RTOLow > h.RTOHigh {
		c.add("host.rto_low", "%s exceeds rto_high %s", h.RTOLow, h.RTOHigh)
	}
	c.integer("host.rto_threshold", h.RTOThreshold, 1, MaxCount, "packets in flight")
	c.positiveTime("host.nack_interval", h.NACKInterval)
	d := &h.DCQCN
	c.number("host.dcqcn.g", d.G, Fraction, "the alpha EWMA gain")
	c.positiveTime("host.dcqcn.alpha_resume", d.AlphaResume)
	c.positiveTime("host.dcqcn.rate_decrease", d.RateDecrease)
	c.positiveTime("host.dcqcn.rp_timer", d.RPTimer)
	c.integer("host.dcqcn.fast_recovery", d.FastRecovery, 1, MaxCount, "fast-recovery stages")
	for _, r := range []struct {
		f string
		v Rate
	}{{"rate_ai", d.RateAI}, {"rate_hai", d.RateHAI}, {"min_rate", d.MinRate}} {
		c.rate("host.dcqcn."+r.f, r.v)
	}
	c.size("host.dcqcn.byte_counter", d.ByteCounter, false)
	if h.DCTCP.G != 0 {
		c.number("host.dctcp.g", h.DCTCP.G, Fraction, "the alpha EWMA gain")
	}
	c.integer("host.dctcp.init_window", h.DCTCP.InitWindow, 0, MaxCount, "packets; 0: the path's BDP")
}

func (s *Spec) validateRouting(c *checker) {
	r := &s.Routing
	c.oneOf("routing.algorithm", r.Algorithm, Algorithms)
	c.integer("routing.k", r.K, 1, 1000, "paths per pair")
	if r.LosslessPriorities < 1 || r.LosslessPriorities > 8 {
		c.add("routing.lossless_priorities", "%d is not in 1..8", r.LosslessPriorities)
	}
	c.integer("routing.trials", r.Trials, 1, 1e6, "roots tried")
	c.size("routing.threshold", r.Threshold, false)
	if r.P < 0 || r.P >= 1 || math.IsNaN(r.P) { // ate: 0 < p < 1 (PortFC §III-F); 0 takes the default
		c.add("routing.p", "%g is not in (0,1) (ate's asymmetric threshold: the HBD share before spilling to the ND)", r.P)
	}
	if r.Measure != "" {
		c.oneOf("routing.measure", r.Measure, ATEMeasures)
	}
	if r.RerouteWait != "" {
		c.oneOf("routing.reroute_wait", r.RerouteWait, RerouteWaits)
		if r.Algorithm != "telemetry" {
			c.add("routing.reroute_wait", "is for algorithm telemetry, not %q", r.Algorithm)
		}
	}
	c.time("routing.flowlet_gap", r.FlowletGap, false)
	c.oneOf("routing.spread", r.Spread, Spreads)
	if r.MaxPaths < 0 {
		c.add("routing.max_paths", "%d is negative (0: the router's default)", r.MaxPaths)
	}
}

// validate checks one workload: its kind, that it sets only its kind's fields, and their values.
func (w *Workload) validate(c *checker, f string, s *Spec) {
	if !c.oneOf(f+".kind", w.Kind, WorkloadKinds) {
		return
	}
	// Fields of another kind, set in Go (the decoder reports them for YAML before they are set).
	allowed := WorkloadFields[w.Kind]
	v := reflect.ValueOf(w).Elem()
	ft := fieldsOf(v.Type())
	for _, name := range ft.names {
		if name == "kind" || name == "name" || slices.Contains(allowed, name) {
			continue
		}
		if !v.Field(ft.byName[name]).IsZero() {
			c.add(f+"."+name, "not a field of workload kind %s (its fields: %s)", w.Kind, strings.Join(allowed, ", "))
		}
	}
	startsBeforeEnd := func(field string, t Time) {
		if c.time(f+"."+field, t, false) && s.Duration > 0 && t >= s.Duration {
			c.add(f+"."+field, "%s is not before the run's duration %s", t, s.Duration)
		}
	}
	c.hosts(f+".hosts", w.Hosts)
	switch w.Kind {
	case "flows":
		if len(w.List) == 0 {
			c.add(f+".list", "required: at least one {src, dst, size}")
		}
		for i := range w.List {
			w.List[i].validate(c, fmt.Sprintf("%s.list[%d]", f, i), s.Duration)
		}
	case "incast":
		c.integer(f+".senders", w.Senders, 1, MaxCount, "hosts sending to the receiver")
		if len(w.Hosts) > 0 && w.Senders > len(w.Hosts) {
			c.add(f+".senders", "%d senders but only %d hosts listed", w.Senders, len(w.Hosts))
		}
		c.size(f+".size", w.Size, true)
		if w.Receiver != "" {
			c.host(f+".receiver", w.Receiver)
		}
		startsBeforeEnd("at", w.At)
		if w.Load != 0 {
			c.fraction(f+".load", w.Load, "the share of host link capacity incast events take")
			if w.Count != 0 {
				c.add(f+".count", "give count (incasts interval apart) or load (Poisson-arriving incasts), not both")
			}
			c.positiveTime(f+".duration", w.Duration)
		} else {
			c.integer(f+".count", w.Count, 1, MaxCount, "incast events")
			if w.Count > 1 && w.Interval <= 0 {
				c.add(f+".interval", "required when count > 1: the time between incasts")
			} else if c.time(f+".interval", w.Interval, false) && w.Count > 1 && s.Duration > 0 {
				// In float: count x interval can pass int64. Incasts after the end would never run.
				last := float64(w.At) + float64(w.Count-1)*float64(w.Interval)
				if last >= float64(s.Duration) {
					c.add(f+".count", "the last of %d incasts would start at %gs (at + (count-1) x interval), not before the run's duration %s",
						w.Count, last/float64(clock.Second), s.Duration)
				}
			}
			if w.Duration != 0 {
				c.add(f+".duration", "only with load (Poisson-arriving incasts)")
			}
		}
	case "poisson":
		w.validateArrivals(c, f, startsBeforeEnd)
		for i, p := range w.Pairs {
			pf := fmt.Sprintf("%s.pairs[%d]", f, i)
			c.host(pf+".src", p.Src)
			c.host(pf+".dst", p.Dst)
			if p.Src == p.Dst && p.Src != "" {
				c.add(pf, "src and dst are both %s", p.Src)
			}
		}
	case "permutation", "all-to-all", "adv1", "adv2", "unf":
		if w.Connections != 0 {
			c.integer(f+".connections", w.Connections, 1, MaxCount, "source-destination pairs drawn from the pattern")
			if w.CDF != "" {
				c.add(f+".connections", "only with size (one flow per drawn pair), not with cdf")
			}
		}
		if w.Pattern != "" && !slices.Contains(Adv1Patterns, w.Pattern) {
			c.add(f+".pattern", "%q: want one of %v", w.Pattern, Adv1Patterns)
		}
		switch {
		case w.CDF != "" && !w.Size.IsZero():
			c.add(f+".size", "give size (one flow per pair at `at`) or cdf and load (Poisson arrivals), not both")
		case w.CDF != "":
			w.validateArrivals(c, f, startsBeforeEnd)
			if w.At != 0 {
				c.add(f+".at", "with cdf, arrivals begin at start")
			}
		default:
			c.size(f+".size", w.Size, true)
			startsBeforeEnd("at", w.At)
			for _, x := range []struct {
				name string
				set  bool
			}{{"load", w.Load != 0}, {"duration", w.Duration != 0}, {"start", w.Start != 0}} {
				if x.set {
					c.add(f+"."+x.name, "only with cdf (Poisson arrivals); with size every pair sends once at `at`")
				}
			}
		}
		if w.Kind == "permutation" || w.Kind == "all-to-all" {
			c.fraction(f+".fraction", w.Fraction, "the share of hosts taking part")
		}
	case "projector":
		if !(w.Lambda > 0) || w.Lambda > 1e12 {
			c.add(f+".lambda", "%v: want flows per second in (0, 1e12]", w.Lambda)
		}
		if w.Zipf < 0 || w.Zipf > 10 {
			c.add(f+".zipf", "%v: want an exponent in [0, 10] (0: uniform rack pairs)", w.Zipf)
		}
		if w.CDF == "" {
			c.add(f+".cdf", "required: the flow-size distribution")
		}
		startsBeforeEnd("start", w.Start)
	case "ps":
		c.integer(f+".workers", w.Workers, 0, MaxCount, "0: every host but the server")
		c.host(f+".server", w.Server)
		c.size(f+".push_size", w.PushSize, true)
		c.size(f+".broadcast_size", w.BroadcastSize, false)
		c.integer(f+".rounds", w.Rounds, 1, MaxCount, "push-broadcast rounds")
		startsBeforeEnd("at", w.At)
	case "moe":
		c.integer(f+".experts", w.Experts, 1, MaxCount, "experts")
		if w.TopK < 1 || (w.Experts >= 1 && w.TopK > w.Experts) {
			c.add(f+".top_k", "%d is not in 1..experts (%d)", w.TopK, w.Experts)
		}
		c.integer(f+".tokens", w.Tokens, 1, MaxCount, "tokens per layer")
		c.size(f+".token_size", w.TokenSize, true)
		c.number(f+".zipf", w.Zipf, ZipfR, "0: uniform expert popularity")
		c.integer(f+".layers", w.Layers, 1, MaxCount, "layers")
		startsBeforeEnd("at", w.At)
	case "trace":
		c.oneOf(f+".format", w.Format, TraceFormats)
		if w.Path == "" {
			c.add(f+".path", "required: the trace file")
		}
		startsBeforeEnd("start", w.Start)
	}
}

// validateArrivals checks a Poisson source: a flow-size distribution, a load and a time window.
func (w *Workload) validateArrivals(c *checker, f string, startsBeforeEnd func(string, Time)) {
	switch {
	case w.CDF == "":
		c.add(f+".cdf", "required (one of %s, or file:PATH)", strings.Join(CDFs, ", "))
	case strings.HasPrefix(w.CDF, "file:"):
		if strings.TrimPrefix(w.CDF, "file:") == "" {
			c.add(f+".cdf", "file: needs a path, as in file:cdf/mine.txt")
		}
	default:
		c.oneOf(f+".cdf", w.CDF, CDFs)
	}
	if w.CDF == "pareto" {
		c.number(f+".shape", w.Shape, ShapeR, "a Pareto with shape <= 1 has no mean")
		c.size(f+".mean", w.Mean, true)
		c.size(f+".cap", w.Cap, true)
	} else {
		for _, x := range []struct {
			name string
			set  bool
		}{{"mean", !w.Mean.IsZero()}, {"shape", w.Shape != 0}, {"cap", !w.Cap.IsZero()}} {
			if x.set {
				c.add(f+"."+x.name, "only with cdf: pareto")
			}
		}
	}
	c.fraction(f+".load", w.Load, "offered load per host link")
	startsBeforeEnd("start", w.Start)
	if w.Duration <= 0 {
		c.add(f+".duration", "required: how long arrivals last (defaults to the run's duration after start)")
	} else {
		c.time(f+".duration", w.Duration, true)
	}
}

func (fl *Flow) validate(c *checker, f string, runEnd Time) {
	c.host(f+".src", fl.Src)
	c.host(f+".dst", fl.Dst)
	if fl.Src == fl.Dst && fl.Src != "" {
		c.add(f+".dst", "%s is also the source", fl.Dst)
	}
	c.size(f+".size", fl.Size, true)
	if c.time(f+".at", fl.At, false) && runEnd > 0 && fl.At >= runEnd {
		c.add(f+".at", "%s is not before the run's duration %s", fl.At, runEnd)
	}
	if len(fl.Via) > 0 && len(fl.Path) > 0 {
		c.add(f+".path", "give via (relay hosts) or path (every device), not both")
	}
	for i, h := range fl.Via {
		vf := fmt.Sprintf("%s.via[%d]", f, i)
		c.host(vf, h)
		if h == fl.Src || h == fl.Dst {
			c.add(vf, "%s is an end of the flow, not a relay", h)
		}
	}
	for i, d := range fl.Path {
		if !deviceName.MatchString(d) {
			c.add(fmt.Sprintf("%s.path[%d]", f, i), "%q is not a device name (h<N> or s<N>)", d)
		}
	}
	if n := len(fl.Path); n > 0 {
		if fl.Path[0] != fl.Src {
			c.add(f+".path[0]", "%q is not the flow's src %s", fl.Path[0], fl.Src)
		}
		if n < 2 || fl.Path[n-1] != fl.Dst {
			c.add(fmt.Sprintf("%s.path[%d]", f, n-1), "%q is not the flow's dst %s", fl.Path[n-1], fl.Dst)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
