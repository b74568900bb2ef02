package spec

import (
	"github.com/fabriclab/fabriclab/clock"
)

// Defaults. Where a paper gives the value it is cited; [I] marks our own choice where none does.
// "PortFC paper §V-A" is that paper's common NS-3 setup; [HPCC] is the HPCC ns-3 simulator the
// PortFC authors most likely used (PortFC paper §V-A).
var (
	DefaultBackend  = "virtual" // the deterministic in-process backend
	DefaultSeed     = int64(1)  // [I]
	DefaultDilation = 1.0       // docs/architecture.md §Time dilation: the virtual backend runs at D = 1

	DefaultLinkRate  = Gbps(100)               // PortFC paper §V-A: 100 Gbps links
	DefaultLinkDelay = Time(clock.Microsecond) // PortFC paper §V-A: 1 us link delay

	DefaultBuffer   = Bytes(5_000_000) // PortFC paper §V-A: 5 MB switch buffer
	DefaultXOFF     = BDPs(6)          // PortFC paper §V-A: X_OFF = 6 BDP (PortFC, PFC, PFC*)
	DefaultXON      = BDPs(4)          // PortFC paper §V-A: X_ON = 4 BDP
	DefaultECNKMin  = Bytes(100_000)   // PortFC paper §V-A: DCQCN K_min 100 KB
	DefaultECNKMax  = Bytes(400_000)   // PortFC paper §V-A: K_max 400 KB
	DefaultECNPMax  = 0.2              // PortFC paper §V-A: P_max 0.2
	DefaultRelayPFC = "pass-through"   // PortFC paper §II-C, Fig. 5: "nodes merely forwarding flow control information"
	// DefaultPFCStarPriorities: PortFC paper §V-A, tag = min(switch hops so far, P-1); P = 2 makes every NDC(n,1)
	// path's tags strictly increase [I].
	DefaultPFCStarPriorities = 2

	DefaultMTU          = 1000                          // [HPCC]: 1000 B payload
	DefaultAckEvery     = 1                             // [HPCC] acks every packet
	DefaultGBNRTO       = Time(10 * clock.Millisecond)  // PortFC paper §V-A: Go-Back-N RTO 10 ms (also lossless' safety net [I])
	DefaultRTOLow       = Time(100 * clock.Microsecond) // PortFC paper §V-A: IRN RTO_low 100 us
	DefaultRTOHigh      = Time(320 * clock.Microsecond) // PortFC paper §V-A: IRN RTO_high 320 us
	DefaultRTOThreshold = 3                             // PortFC paper §V-A: IRN RtoThreshold N = 3
	DefaultNACKInterval = Time(500 * clock.Microsecond) // [HPCC]: NACK generation interval 500 us
	// DefaultNICBuffer [I]: the PortFC paper gives nodes no buffer; a relay node is a small
	// switch, so it gets the paper's switch buffer.
	DefaultNICBuffer   = Bytes(5_000_000)
	DefaultRelayWeight = 1 // [I] equal DRR quanta; docs/portfc.md "server-aware scheduling"

	// DCQCN, Mellanox mode as in HPCC (PortFC paper §V-A: "recommendations in the Mellanox firmware").
	DefaultDCQCNG            = 1.0 / 256
	DefaultDCQCNAlphaResume  = Time(clock.Microsecond)
	DefaultDCQCNRateDecrease = Time(4 * clock.Microsecond)
	DefaultDCQCNRPTimer      = Time(300 * clock.Microsecond)
	DefaultDCQCNFastRecovery = 1
	// Rate increase steps scale with the link as HPCC's scripts do: 5 and 50 Mb/s per 25 Gb/s of link.
	DefaultDCQCNRateAIPer25G  = 5e6
	DefaultDCQCNRateHAIPer25G = 50e6
	DefaultDCQCNMinRate       = Rate(1e9) // [HPCC] min rate 1000 Mb/s

	DefaultK                  = 8              // expander thesis: KSP(8)
	DefaultLosslessPriorities = 1              // FC+ paper: FC+(1L)
	DefaultTrials             = 10             // Fibre Channel paper §3.2: best of 10 up*/down* trials
	DefaultSpread             = "flow"         // ECMP's per-flow hash over the K paths; the FC+ paper does not say
	DefaultHybridThreshold    = Bytes(100_000) // expander thesis §4.2.1, §4.3.3: HYBRID Q = 100 KB
	DefaultATEP               = 0.9            // PortFC paper §III-E, Algorithm 5: ATE's p, "generally set to 0.9"

	DefaultIncastCount = 1
	DefaultPSRounds    = 1
	DefaultPSServer    = "h0" // [I]: the PortFC paper does not place the PS (PortFC paper §V-D)
	DefaultMoETopK     = 2    // PortFC paper §V-E: top-1/top-2 experts; Mixtral-style top-2 [I]
	DefaultMoELayers   = 1
	DefaultFraction    = 1.0
	// Pareto flow sizes: expander thesis §4.3.1 (HULL): shape 1.05, mean 100 KB, each draw capped at 1 GB.
	DefaultParetoShape = 1.05
	DefaultParetoMean  = Bytes(100_000)
	DefaultParetoCap   = Bytes(1_000_000_000)
)

// ApplyDefaults fills every field left zero. It is idempotent, and defaults that depend on another
// field (flow control on transport, congestion control on transport, routing on topology family,
// DCQCN steps on link rate) read that field as it is now, so a suite can change a field of a resolved
// spec and call it again. It never overwrites a value already set.
func (s *Spec) ApplyDefaults() {
	if s.Backend == "" {
		s.Backend = DefaultBackend
	}
	if s.Seed == 0 {
		s.Seed = DefaultSeed
	}
	if s.Dilation == 0 && s.Backend != "netns" {
		s.Dilation = DefaultDilation // netns: absent means the backend chooses (AutoDilation)
	}
	if s.Stop == nil {
		s.Stop = Bool(true)
	}

	t := &s.Topology
	if t.Link.Rate == 0 {
		t.Link.Rate = DefaultLinkRate
	}
	if t.Link.Delay == 0 {
		t.Link.Delay = DefaultLinkDelay
	}

	h := &s.Host
	sw := &s.Switch
	// Transport and flow control default from each other: lossy transports (irn, gbn, kernel TCP) run
	// over a lossy fabric, the lossless transport over PFC (the standard RoCE deployment).
	if sw.FlowControl == "" {
		switch h.Transport {
		case "irn", "gbn", "kernel-tcp":
			sw.FlowControl = "lossy"
		default:
			sw.FlowControl = "pfc"
		}
	}
	if h.Transport == "" {
		if sw.FlowControl == "lossy" {
			h.Transport = "irn" // [I] the lossy RDMA transport that needs no PFC (IRN'18)
		} else {
			h.Transport = "lossless"
		}
	}
	if h.CC == "" {
		if h.Transport == "kernel-tcp" {
			h.CC = "cubic" // Linux's default
		} else {
			h.CC = "dcqcn" // PortFC paper §V-A: "All schemes run DCQCN"
		}
	}

	s.applyProfile() // profiles.go: before the generic defaults below, which it makes no-ops

	if sw.Buffer.IsZero() {
		sw.Buffer = DefaultBuffer
	}
	if sw.XOFF.IsZero() {
		sw.XOFF = DefaultXOFF
	}
	if sw.XON.IsZero() {
		sw.XON = DefaultXON
	}
	if sw.ECN.Enabled == nil {
		// Marking is harmless to transports that ignore it, so it stays on when cc changes.
		sw.ECN.Enabled = Bool(true)
	}
	if sw.ECN.KMin.IsZero() {
		sw.ECN.KMin = DefaultECNKMin
	}
	if sw.ECN.KMax.IsZero() {
		sw.ECN.KMax = DefaultECNKMax
	}
	if sw.ECN.PMax == 0 {
		sw.ECN.PMax = DefaultECNPMax
	}
	// Only pfcstar has a choice; elsewhere 0 stays and means one, so a pfc spec later switched to
	// pfcstar still gets pfcstar's default.
	if sw.Priorities == 0 && sw.FlowControl == "pfcstar" {
		sw.Priorities = DefaultPFCStarPriorities
	}
	if sw.RelayPFC == "" {
		sw.RelayPFC = DefaultRelayPFC
	}

	if h.MTU == 0 {
		h.MTU = DefaultMTU
	}
	if h.NICBuffer.IsZero() {
		h.NICBuffer = DefaultNICBuffer
	}
	if h.RelayWeight == 0 {
		h.RelayWeight = DefaultRelayWeight
	}
	if h.AckEvery == 0 {
		h.AckEvery = DefaultAckEvery
	}
	if h.RTO == 0 {
		h.RTO = DefaultGBNRTO
	}
	if h.RTOHigh == 0 {
		h.RTOHigh = DefaultRTOHigh
	}
	if h.RTOLow == 0 {
		h.RTOLow = DefaultRTOLow
		if h.oneTimeout() {
			h.RTOLow = h.RTOHigh
		}
	}
	if h.RTOThreshold == 0 {
		h.RTOThreshold = DefaultRTOThreshold
	}
	if h.BDPCap == nil {
		// IRN'18's BDP-FC (one BDP in flight per flow) is part of IRN, which runs DCQCN. A DCTCP-
		// controlled lossy transport is another paper's scheme: the Dragonfly paper's TelemetryLERP and
		// the expander thesis' DCTCP have no such cap, and on D1 the cap kept two LERP flows on one
		// global link (98.4 Gb/s, the standing queue below the 75-MTU reroute margin; uncapped 196.7).
		h.BDPCap = Bool(h.Transport == "irn" && h.CC != "dctcp")
	}
	if h.NACKInterval == 0 {
		h.NACKInterval = DefaultNACKInterval
	}
	d := &h.DCQCN
	if d.G == 0 {
		d.G = DefaultDCQCNG
	}
	if d.AlphaResume == 0 {
		d.AlphaResume = DefaultDCQCNAlphaResume
	}
	if d.RateDecrease == 0 {
		d.RateDecrease = DefaultDCQCNRateDecrease
	}
	if d.RPTimer == 0 {
		d.RPTimer = DefaultDCQCNRPTimer
	}
	if d.FastRecovery == 0 {
		d.FastRecovery = DefaultDCQCNFastRecovery
	}
	if d.RateAI == 0 {
		d.RateAI = Rate(DefaultDCQCNRateAIPer25G * float64(t.Link.Rate) / 25e9)
	}
	if d.RateHAI == 0 {
		d.RateHAI = Rate(DefaultDCQCNRateHAIPer25G * float64(t.Link.Rate) / 25e9)
	}
	if d.MinRate == 0 {
		d.MinRate = DefaultDCQCNMinRate
	}

	r := &s.Routing
	if r.Algorithm == "" {
		if t.Family == "ndc" {
			r.Algorithm = "bcube" // PortFC paper §III-A: BCube digit correction
		} else {
			r.Algorithm = "shortest"
		}
	}
	if r.K == 0 {
		r.K = DefaultK
	}
	if r.LosslessPriorities == 0 {
		r.LosslessPriorities = DefaultLosslessPriorities
	}
	if r.Trials == 0 {
		r.Trials = DefaultTrials
	}
	if r.Spread == "" {
		r.Spread = DefaultSpread
	}
	if r.Seed == 0 {
		r.Seed = s.Seed
	}
	if r.Threshold.IsZero() && r.Algorithm == "hybrid" {
		r.Threshold = DefaultHybridThreshold
	}
	if r.P == 0 && r.Algorithm == "ate" {
		r.P = DefaultATEP
	}

	for i := range s.Workload {
		s.Workload[i].applyDefaults(s)
	}
}

func (w *Workload) applyDefaults(s *Spec) {
	if w.Name == "" {
		w.Name = w.Kind
	}
	if w.CDF == "pareto" {
		if w.Shape == 0 {
			w.Shape = DefaultParetoShape
		}
		if w.Mean.IsZero() {
			w.Mean = DefaultParetoMean
		}
		if w.Cap.IsZero() {
			w.Cap = DefaultParetoCap
		}
	}
	// Poisson arrivals last until the run ends unless told otherwise.
	poisson := w.Kind == "poisson" || (w.Load > 0 && w.Kind != "flows")
	if poisson && w.Duration == 0 {
		from := w.Start
		if w.Kind == "incast" {
			from = w.At
		}
		if s.Duration > from {
			w.Duration = s.Duration - from
		}
	}
	switch w.Kind {
	case "incast":
		if w.Count == 0 && w.Load == 0 {
			w.Count = DefaultIncastCount
		}
	case "permutation", "all-to-all":
		if w.Fraction == 0 {
			w.Fraction = DefaultFraction
		}
	case "ps":
		if w.Rounds == 0 {
			w.Rounds = DefaultPSRounds
		}
		if w.Server == "" {
			w.Server = DefaultPSServer
		}
		if w.BroadcastSize.IsZero() {
			w.BroadcastSize = w.PushSize
		}
	case "moe":
		if w.TopK == 0 {
			w.TopK = DefaultMoETopK
		}
		if w.Layers == 0 {
			w.Layers = DefaultMoELayers
		}
	}
}

// oneTimeout says whether a host's IRN runs one timeout, RTO_high, instead of IRN's pair. IRN's low
// timeout (flows with at most RTOThreshold packets in flight) is IRN's tail-loss device, like its BDP
// cap; a DCTCP-controlled irn is the Dragonfly paper's LERP, which relies on SACK fast retransmission
// and has no such timer in the paper. With hundreds of DCTCP windows of 1-3 packets behind MB queues it
// fired below the round trip: D1 ADV1 N = 1024 (seed 1), RTO_low 100 -> 320 us: drops 284k -> 118k,
// window goodput 731 -> 785 Gb/s; N = 2048: drops 722k -> 379k.
func (h *Host) oneTimeout() bool { return h.Transport == "irn" && h.CC == "dctcp" }
