// Package spec is the experiment spec: the YAML a user writes for `lab run`, and the same structure the
// suites build in Go. Parse and Load are strict (an unknown key anywhere is an error naming its full path
// and line); ApplyDefaults fills the values the reproduced papers use; Validate collects every problem
// at once, each naming the field, the bad value and what is allowed. Nothing here knows a topology:
// host and switch names are checked for shape only, and family parameters are handed to the builders.
package spec

import (
	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/units"
)

// Spec is one experiment. Zero values mean "not given" throughout, so a spec built in Go needs only the
// fields it cares about before ApplyDefaults.
type Spec struct {
	Name    string `yaml:"name,omitempty"`
	Backend string `yaml:"backend,omitempty"` // Backends
	// Seed drives every random choice (workloads, seeded topologies, randomized routing). 0 means 1.
	Seed int64 `yaml:"seed,omitempty"`
	// Dilation D (netns only): rates / D, delays and timers * D, bytes unchanged. The virtual backend
	// always runs at D = 1 and ignores this field (see EffectiveDilation).
	Dilation float64    `yaml:"dilation,omitempty"`
	Topology Topology   `yaml:"topology"`
	Switch   Switch     `yaml:"switch,omitempty"`
	Host     Host       `yaml:"host,omitempty"`
	Routing  Routing    `yaml:"routing,omitempty"`
	Workload []Workload `yaml:"workload,omitempty"`
	// Faults fail, repair or impair cables at given times (faults.go).
	Faults []Fault `yaml:"faults,omitempty"`
	// Duration is when the run ends at the latest (paper time). Required: a deadlocked run never
	// completes its flows, so something must end it.
	Duration Time `yaml:"duration,omitempty"`
	// MeasureFrom opens a measurement window (paper time) from here to the run's end: the summary's
	// window_goodput_bps is the bytes flows delivered inside it over its length, steady state without
	// start-up (the telemetry paper measures "while all connections are active").
	MeasureFrom Time `yaml:"measure_from,omitempty"`
	// Stop: true (default) ends the run as soon as every generated flow has completed.
	Stop *bool `yaml:"stop,omitempty"`
	// Expect holds published numbers the report prints next to the measured ones, by metric name.
	Expect map[string]Expectation `yaml:"expect,omitempty"`
	// Seeds asks lab run for this many runs, seeds Seed, Seed+1, ... (0 or 1: one run); Sweep for one
	// run per combination of values of spec fields by path ("workload.0.load": [0.3, 0.5]). Expand
	// turns a spec file into its runs; each run's spec has neither field.
	Seeds int                 `yaml:"seeds,omitempty"`
	Sweep map[string][]string `yaml:"sweep,omitempty"`

	// lines maps field paths to the YAML line they came from, so validation errors found after
	// decoding can still point into the file. Nil for specs built in Go.
	lines map[string]int
	zeros []explicitZero // decode.go: fields the file set to zero, checked by finish
}

// Topology selects a builder. Params holds the family's own keys (n, k, hosts_per_switch, seed, ...)
// as typed; the builder checks them.
type Topology struct {
	Family string            `yaml:"family"`
	Link   Link              `yaml:"link,omitempty"`
	Params map[string]string `yaml:",inline"`
}

// Link is the rate and propagation delay of every link the family does not set otherwise.
type Link struct {
	Rate  Rate `yaml:"rate,omitempty"`
	Delay Time `yaml:"delay,omitempty"`
	// Overhead is added to every frame's size for serialization only, at every port: 24B is real
	// Ethernet's preamble, start delimiter, FCS and inter-frame gap; 6B makes a RoCEv2 data frame of
	// 1000 payload bytes (1058 B) as long as htsim's (payload + its 64-byte header, csg-htsim
	// sim/rocepacket.h newpkt). Zero (the default) matches HPCC's ns-3 model. Bytes only.
	Overhead Size `yaml:"overhead,omitempty"`
}

// Switch configures every switch: shared buffer, flow control and ECN.
type Switch struct {
	Buffer      Size   `yaml:"buffer,omitempty"`
	FlowControl string `yaml:"flow_control,omitempty"` // FlowControls
	// XOFF/XON: pause when a (port, priority) ingress counter reaches XOFF, resume at or below XON.
	XOFF Size `yaml:"xoff,omitempty"`
	XON  Size `yaml:"xon,omitempty"`
	// Headroom per (ingress port, lossless priority) for bytes in flight after a pause is sent. Zero:
	// the lab sizes it from the link (rate x round trip + 2 frames).
	Headroom Size `yaml:"headroom,omitempty"`
	// Alpha > 0 makes XOFF dynamic, Broadcom style, and xoff/xon are then not used: under PFC a group
	// pauses at alpha x free shared buffer and resumes 3 KB below it (HPCC ns-3's switch-mmu.cc,
	// GetPfcThreshold; HPCC uses 1/8); under lossy flow control it is the drop-tail queue limit. Zero:
	// static XOFF/XON as given.
	Alpha float64 `yaml:"alpha,omitempty"`
	// Reserve is the buffer guaranteed to each egress queue outside the shared pool.
	Reserve Size `yaml:"reserve,omitempty"`
	ECN     ECN  `yaml:"ecn,omitempty"`
	// Priorities is the number of lossless priorities: pfcstar's tag count P (P = 1 equals pfc).
	Priorities int `yaml:"priorities,omitempty"`
	// RelayPFC is how relay hosts of server-centric fabrics take part in pfc/pfcstar: "pass-through"
	// (forward the downstream switch's pauses) or "ingress" (run PFC at their own ingress). The PortFC
	// paper is ambiguous (its §II-C, Fig. 5, and §V-A), so both exist.
	RelayPFC string `yaml:"relay_pfc,omitempty"`
	// PFCStarRaise is where pfcstar raises a frame's tag (PFCStarRaises): "relays" (the default: the
	// relay after each switch, docs/portfc.md §4, deadlock-free on minimal NDC(n,1) paths with P = 2)
	// or "switches" (every switch a frame enters, the relays keep it: Tagger's tag per switch hop, which
	// leaves some deadlocks with too few priorities, as the PortFC paper says of its PFC*, §V-A).
	PFCStarRaise string `yaml:"pfcstar_raise,omitempty"`
	// Acks is where a switch queues ACKs and NACKs (AckModes): "strict" (the default, also when
	// empty), the strict control queue that is never paused; "data", the data queue, FIFO behind data
	// and paused with it, as csg-htsim's switches do (lab/experiments/matched-htsim/README.md).
	Acks string `yaml:"acks,omitempty"`
}

// ECN is RED-style marking on egress queue length: none below KMin, probability rising linearly to
// PMax at KMax, all above.
type ECN struct {
	Enabled *bool   `yaml:"enabled,omitempty"`
	KMin    Size    `yaml:"kmin,omitempty"`
	KMax    Size    `yaml:"kmax,omitempty"`
	PMax    float64 `yaml:"pmax,omitempty"`
}

// Host configures every host's transport and congestion control.
type Host struct {
	// Profile names the reference simulator whose transport and congestion-control constants fill the
	// fields left zero (ProfileNames; default fabriclab; docs/profiles.md).
	Profile   string `yaml:"profile,omitempty"`
	Transport string `yaml:"transport,omitempty"` // Transports
	CC        string `yaml:"cc,omitempty"`        // CCs
	// MTU is payload bytes per packet (headers are added on the wire), as in the HPCC simulator.
	MTU      int `yaml:"mtu,omitempty"`
	AckEvery int `yaml:"ack_every,omitempty"` // acknowledge every N data packets
	// RTO is the go-back-N (and lossless) retransmission timeout.
	RTO Time `yaml:"rto,omitempty"`
	// IRN: RTOLow when at most RTOThreshold packets are in flight, else RTOHigh.
	RTOLow       Time `yaml:"rto_low,omitempty"`
	RTOHigh      Time `yaml:"rto_high,omitempty"`
	RTOThreshold int  `yaml:"rto_threshold,omitempty"`
	// BDPCap is IRN's BDP-FC: at most one BDP in flight per flow. Default: on for irn with any
	// congestion control but dctcp (IRN as its paper builds it), off otherwise (docs/dragonfly.md).
	BDPCap *bool `yaml:"bdp_cap,omitempty"`
	// NACKInterval is the least time between two NACKs of one go-back-N flow.
	NACKInterval Time `yaml:"nack_interval,omitempty"`
	// CNP is how a receiver answers CE-marked data (CNPModes): "per-packet" (one CNP per marked packet,
	// the ns-3 simulators) or "interval" (at most one per flow per CNPInterval, DCQCN's N).
	// NICBuffer is each NIC's memory for the frames in its egress queues (relayed and its own); relay
	// traffic that fills it is paused upstream (lossless flow control) or ECN-marked and dropped
	// (lossy), nodes/nicmem.go. RelayWeight is the DRR weight of a NIC's relay queue against each of
	// its local queues (docs/portfc.md, "server-aware scheduling").
	NICBuffer   Size   `yaml:"nic_buffer,omitempty"`
	RelayWeight int    `yaml:"relay_weight,omitempty"`
	CNP         string `yaml:"cnp,omitempty"`
	CNPInterval Time   `yaml:"cnp_interval,omitempty"`
	DCQCN       DCQCN  `yaml:"dcqcn,omitempty"`
	DCTCP       DCTCP  `yaml:"dctcp,omitempty"`
}

// DCTCP sets the NIC's DCTCP (cc: dctcp on gbn, irn or lossless; nodes/dctcp.go). Mark with step ECN
// at K: switch.ecn kmin = kmax = K, pmax 1.
type DCTCP struct {
	G          float64 `yaml:"g,omitempty"`           // alpha gain (1/16, DCTCP paper and Linux)
	InitWindow int     `yaml:"init_window,omitempty"` // packets at flow start and after a reroute; 0: the path's BDP
}

// DCQCN overrides the Mellanox-mode DCQCN parameters (names as in the HPCC simulator).
type DCQCN struct {
	G            float64 `yaml:"g,omitempty"`             // alpha EWMA gain
	AlphaResume  Time    `yaml:"alpha_resume,omitempty"`  // alpha update interval
	RateDecrease Time    `yaml:"rate_decrease,omitempty"` // least time between two rate cuts
	RPTimer      Time    `yaml:"rp_timer,omitempty"`      // rate-increase timer
	FastRecovery int     `yaml:"fast_recovery,omitempty"` // fast-recovery stages
	RateAI       Rate    `yaml:"rate_ai,omitempty"`
	RateHAI      Rate    `yaml:"rate_hai,omitempty"`
	MinRate      Rate    `yaml:"min_rate,omitempty"`
	ByteCounter  Size    `yaml:"byte_counter,omitempty"` // 0: timer-only increase (Mellanox mode)
}

// Routing selects the path computation. Parameters an algorithm does not use are ignored, so one spec
// can be swept across algorithms.
type Routing struct {
	Algorithm          string  `yaml:"algorithm,omitempty"`           // Algorithms
	K                  int     `yaml:"k,omitempty"`                   // ksp, dfksp
	LosslessPriorities int     `yaml:"lossless_priorities,omitempty"` // dfksp
	Trials             int     `yaml:"trials,omitempty"`              // updown
	Seed               int64   `yaml:"seed,omitempty"`                // randomized algorithms; 0: the spec's seed
	Threshold          Size    `yaml:"threshold,omitempty"`           // hybrid: flows below go ECMP, the rest VLB; ugal: bias
	P                  float64 `yaml:"p,omitempty"`                   // ate: asymmetric threshold, the HBD share before spilling to the ND
	Measure            string  `yaml:"measure,omitempty"`             // ate: what T^H counts, ATEMeasures ("": inflight)
	// RerouteWait is how a telemetry sender on go-back-N or a lossless transport keeps a reroute in
	// order (RerouteWaits): "drain" (the default, also when empty: idle until the old path's last
	// packet lands, and send nothing new until it is acknowledged) or "paper" (the dragonfly paper's
	// §III rule alone: idle for the old path's latency minus the new one's, as last sampled).
	RerouteWait string `yaml:"reroute_wait,omitempty"`
	// FlowletGap > 0 makes switches forwarding by table (shortest) re-pick a flow's ECMP port after an
	// idle gap this long (LetFlow; the expander thesis uses 50 us). 0: per-flow ECMP.
	FlowletGap Time `yaml:"flowlet_gap,omitempty"`
	// Spread is how a source-routed multipath router's traffic uses the paths of a pair (ksp, dfksp, fc,
	// updown, smart): "flow" (default) hashes each flow onto one path, "flowlet" re-hashes after an idle
	// gap of flowlet_gap (default DefaultSpreadFlowletGap), "packet" sends packet i on path i mod K.
	Spread string `yaml:"spread,omitempty"`
	// MaxPaths caps the paths per pair of shortest, fc, updown and smart (0: each router's default).
	MaxPaths int `yaml:"max_paths,omitempty"`
}

// Workload is one traffic source. Kind selects which fields apply (WorkloadFields); a field of another
// kind is an error.
type Workload struct {
	Kind string `yaml:"kind"`
	// Name labels the workload's flows in the report (e.g. Poisson vs incast throughput); default kind.
	Name string `yaml:"name,omitempty"`

	List []Flow `yaml:"list,omitempty"` // flows

	// Shared by several kinds.
	Size     Size     `yaml:"size,omitempty"`     // bytes per flow
	At       Time     `yaml:"at,omitempty"`       // when the (first) flows start
	Start    Time     `yaml:"start,omitempty"`    // when Poisson arrivals start
	Duration Time     `yaml:"duration,omitempty"` // how long Poisson arrivals last; default to the run's end
	Load     float64  `yaml:"load,omitempty"`     // offered load per host link, (0,1]
	CDF      string   `yaml:"cdf,omitempty"`      // CDFs, or file:PATH
	Hosts    []string `yaml:"hosts,omitempty"`    // the hosts taking part; default all

	// Pareto flow sizes (cdf: pareto).
	Mean  Size    `yaml:"mean,omitempty"`
	Shape float64 `yaml:"shape,omitempty"`
	Cap   Size    `yaml:"cap,omitempty"`

	Pairs []Pair `yaml:"pairs,omitempty"` // poisson: restrict (src, dst) to these

	// incast
	Senders  int    `yaml:"senders,omitempty"`
	Receiver string `yaml:"receiver,omitempty"` // default: a seeded random host not among the senders
	Count    int    `yaml:"count,omitempty"`    // incast events, Interval apart
	Interval Time   `yaml:"interval,omitempty"`

	Fraction float64 `yaml:"fraction,omitempty"` // permutation, all-to-all: share of hosts taking part

	// adv1, adv2, unf, all-to-all: Connections > 0 draws that many (source, destination) pairs from the
	// pattern, one flow of size each at `at` (the telemetry paper's N; all-to-all: its Table I's uniform
	// pairs); Pattern picks adv1's groups: "shift" (group
	// i -> i+1 for every i, the default) or "random-pair" (two random groups, the paper's ADV1).
	Connections int    `yaml:"connections,omitempty"`
	Pattern     string `yaml:"pattern,omitempty"`
	// projector: Poisson arrivals at Lambda flows per second network-wide, (src, dst) from a
	// ProjecToR-style skewed rack matrix with exponent Zipf (traffic.Skewed).
	Lambda float64 `yaml:"lambda,omitempty"`

	// ps (parameter server): workers push PushSize to Server, then Server sends BroadcastSize to each.
	Workers       int    `yaml:"workers,omitempty"` // 0: every host but the server
	Server        string `yaml:"server,omitempty"`
	PushSize      Size   `yaml:"push_size,omitempty"`
	BroadcastSize Size   `yaml:"broadcast_size,omitempty"`
	Rounds        int    `yaml:"rounds,omitempty"`

	// moe: per layer, every token goes to its TopK experts (Zipf-skewed popularity) and back.
	Experts   int     `yaml:"experts,omitempty"`
	TopK      int     `yaml:"top_k,omitempty"`
	Tokens    int     `yaml:"tokens,omitempty"`
	TokenSize Size    `yaml:"token_size,omitempty"`
	Zipf      float64 `yaml:"zipf,omitempty"` // 0: uniform
	Layers    int     `yaml:"layers,omitempty"`

	// trace
	Format string `yaml:"format,omitempty"` // TraceFormats
	Path   string `yaml:"path,omitempty"`
	// Rebase shifts a trace so that its first flow starts at Start: HPCC's generator starts flows at
	// 2 s, which a 20 ms run would otherwise never reach (such a trace is refused without it).
	Rebase bool `yaml:"rebase,omitempty"`
}

// Flow is one explicit flow. Via names the relay hosts of a server-centric route in order; Path names
// every device from Src to Dst. Existence is checked against the topology later.
type Flow struct {
	Src  string   `yaml:"src"`
	Dst  string   `yaml:"dst"`
	Size Size     `yaml:"size"`
	At   Time     `yaml:"at,omitempty"`
	Via  []string `yaml:"via,omitempty"`
	Path []string `yaml:"path,omitempty"`
}

// Pair is a source-destination host pair.
type Pair struct {
	Src string `yaml:"src"`
	Dst string `yaml:"dst"`
}

// Expectation is a published number for a metric, with where it comes from.
type Expectation struct {
	Value  float64 `yaml:"value"`
	Unit   string  `yaml:"unit,omitempty"`
	Source string  `yaml:"source"` // e.g. "PortFC §V-C Fig. 12"
	Note   string  `yaml:"note,omitempty"`
}

// Enumerations, in the order error messages list them.
var (
	Backends      = []string{"virtual", "netns"}
	FlowControls  = []string{"lossy", "pfc", "pfcstar", "portfc"}
	Transports    = []string{"lossless", "gbn", "irn", "kernel-tcp"}
	CCs           = []string{"none", "dcqcn", "cubic", "dctcp"}
	Algorithms    = []string{"bcube", "shortest", "ksp", "dfksp", "fc", "updown", "smart", "vlb", "hybrid", "ugal", "ugal-periodic", "ugal-pb", "telemetry", "minimal", "ate", "free"}
	ATEMeasures   = []string{"inflight", "assigned", "offered"} // nodes.ATEInFlight, ATEAssigned, ATEOffered
	Spreads       = []string{"flow", "flowlet", "packet"}       // nodes.SpreadFlow, SpreadFlowlet, SpreadPacket
	RerouteWaits  = []string{"drain", "paper"}                  // nodes.TelemetryConfig.PaperWait
	WorkloadKinds = []string{"flows", "incast", "poisson", "permutation", "all-to-all", "ps", "moe", "adv1", "adv2", "unf", "projector", "trace"}
	// CDFs are the built-in flow-size distributions (the HPCC simulator's traffic_gen CDFs named in traffic/cdf.go, expander thesis §4.3.1); a cdf may
	// also be "file:PATH" (HPCC format: "size cumulative-percent" per line).
	CDFs          = []string{"websearch", "hadoop", "datamining", "datamining-alt", "storage", "pareto"}
	RelayPFCModes = []string{"pass-through", "ingress"}
	PFCStarRaises = []string{"relays", "switches"}
	AckModes      = []string{"strict", "data"}
	TraceFormats  = []string{"hpcc", "htsim", "htsim-us"}
	Adv1Patterns  = []string{"shift", "random-pair"}
)

// WorkloadFields lists the YAML keys each workload kind accepts besides kind and name.
var WorkloadFields = map[string][]string{
	"flows":       {"list"},
	"incast":      {"senders", "size", "at", "receiver", "count", "interval", "load", "duration", "hosts"},
	"poisson":     {"cdf", "load", "duration", "start", "hosts", "pairs", "mean", "shape", "cap"},
	"permutation": {"size", "at", "cdf", "load", "duration", "start", "hosts", "fraction", "mean", "shape", "cap"},
	"all-to-all":  {"size", "at", "cdf", "load", "duration", "start", "hosts", "fraction", "mean", "shape", "cap", "connections"},
	"ps":          {"workers", "server", "push_size", "broadcast_size", "rounds", "at", "hosts"},
	"moe":         {"experts", "top_k", "tokens", "token_size", "zipf", "layers", "at", "hosts"},
	"adv1":        {"size", "at", "cdf", "load", "duration", "start", "mean", "shape", "cap", "connections", "pattern"},
	"adv2":        {"size", "at", "cdf", "load", "duration", "start", "mean", "shape", "cap", "connections"},
	"unf":         {"size", "at", "cdf", "load", "duration", "start", "mean", "shape", "cap", "connections"},
	"projector":   {"cdf", "lambda", "zipf", "duration", "start", "hosts", "mean", "shape", "cap"},
	"trace":       {"format", "path", "start", "rebase"},
}

// TopologyKeys, when set, lists the keys a topology family accepts (nil for an unknown family), and
// Validate then checks topology keys against it. The lab wires it to the topology registry
// (spec.TopologyKeys = topo.FamilyKeys); left nil, the builder checks the keys when the lab is built.
var TopologyKeys func(family string) []string

// AutoDilation reports whether a netns spec leaves the dilation to the backend, which then chooses the
// smallest D this machine keeps pace at (harness/netns.AutoDilation). An explicit 0 is refused.
func (s *Spec) AutoDilation() bool { return s.Backend == "netns" && s.Dilation == 0 }

// EffectiveDilation is the dilation the backend applies: 1 on the virtual backend.
func (s *Spec) EffectiveDilation() float64 {
	if s.Backend != "netns" || s.Dilation < 1 {
		return 1
	}
	return s.Dilation
}

// StopWhenDone reports whether the run ends once every flow has completed (the default).
func (s *Spec) StopWhenDone() bool { return s.Stop == nil || *s.Stop }

// ECNEnabled reports whether switches mark ECN (the default).
func (e ECN) ECNEnabled() bool { return e.Enabled == nil || *e.Enabled }

// BDPCapEnabled reports whether IRN's BDP-FC is on (unset: on; Defaults sets it per scheme).
func (h Host) BDPCapEnabled() bool { return h.BDPCap == nil || *h.BDPCap }

// Bool returns a pointer to b, for the optional booleans of a spec built in Go.
func Bool(b bool) *bool { return &b }

// Bytes is a size of n bytes.
func Bytes(n int64) Size { return Size{units.Size{Bytes: n}} }

// BDPs is a size of x bandwidth-delay products.
func BDPs(x float64) Size { return Size{units.Size{BDPs: x}} }

// Gbps is a rate in Gbit/s.
func Gbps(x float64) Rate { return Rate(x * 1e9) }

// At converts a clock time.
func At(t clock.Time) Time { return Time(t) }
