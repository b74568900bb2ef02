// Package nodes is the host/NIC engine: a RoCEv2-like reliable-connection transport (segmentation, PSNs,
// coalesced ACKs, NACKs) with three loss-recovery modes (lossless, go-back-N, IRN), DCQCN congestion
// control, PFC honouring, and relay forwarding for server-centric fabrics (BCube/NDC hosts forward).
//
// Like every engine it is driven only by a clock.Clock and by frames handed to Receive; it transmits
// through egress.Ports it owns, one per NIC port, whose links the backend supplies.
package nodes

import (
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/fib"
)

// Transport names.
const (
	Lossless = "lossless" // relies on PFC; go-back-N machinery kept as a safety net that should never fire
	GBN      = "gbn"      // go-back-N: receiver drops out-of-order packets and NACKs; sender rewinds
	IRN      = "irn"      // selective repeat with SACK, two RTOs, optional BDP-FC cap
)

// Congestion-control names.
const (
	CCNone  = "none"
	CCDCQCN = "dcqcn"
	CCDCTCP = "dctcp" // window-based, ECN-echo (dctcp.go)
)

// PortConfig describes one NIC port. Delay is the link's one-way propagation delay; the Link the
// backend hands to New applies it, the NIC uses it only to derive defaults and report.
type PortConfig struct {
	RateBps float64    `json:"rate_bps"`
	Delay   clock.Time `json:"delay_ps"`
	// Overhead is added to each frame's size for serialization only (preamble, FCS, IFG). 0 matches the
	// HPCC ns-3 model the papers used, and IdealFCT assumes 0.
	Overhead int `json:"overhead,omitempty"`
}

// DCQCN holds the reaction-point parameters. Zero fields take the defaults below, which are the HPCC
// ns-3 "dcqcn" run (Mellanox mode) that the PortFC paper's K values match (simulation/run.py: t_alpha=1,
// t_dec=4, t_inc=300, g=1/256, FAST_RECOVERY_TIMES 1, RATE_AI 5*bw/25, RATE_HAI 50*bw/25, MIN_RATE
// 1000Mb/s, CLAMP_TARGET_RATE 0). The spec's host.profile picks other sets (docs/profiles.md).
type DCQCN struct {
	G                 float64    `json:"g,omitempty"`                    // alpha EWMA gain (1/256)
	AlphaInterval     clock.Time `json:"alpha_interval_ps,omitempty"`    // alpha update period (1 us)
	DecreaseInterval  clock.Time `json:"decrease_interval_ps,omitempty"` // rate-decrease check period (4 us)
	RPTimer           clock.Time `json:"rp_timer_ps,omitempty"`          // rate-increase timer (300 us)
	FastRecoveryTimes int        `json:"fast_recovery_times,omitempty"`  // timer stages of fast recovery before AI (1)
	// RateAIBps/RateHAIBps: 0 = 5 Mb/s and 50 Mb/s scaled by port rate / 25 Gb/s, as HPCC's run.py does.
	RateAIBps  float64 `json:"rate_ai_bps,omitempty"`
	RateHAIBps float64 `json:"rate_hai_bps,omitempty"`
	MinRateBps float64 `json:"min_rate_bps,omitempty"` // floor of a throttled flow (1000 Mb/s, not scaled)
	// ClampTargetRate: also set the target rate on a decrease during the first stage (HPCC's
	// CLAMP_TARGET_RATE; off by default).
	ClampTargetRate bool `json:"clamp_target_rate,omitempty"`
	// RateOnFirstCNP is the fraction of the current rate a flow drops to on its first CNP (1.0 = no
	// immediate cut, as in HPCC; the first decrease happens at the next decrease check).
	RateOnFirstCNP float64 `json:"rate_on_first_cnp,omitempty"`
}

// Config is a NIC's plain-data configuration; the lab fills it, zero fields take defaults (see
// WithDefaults).
type Config struct {
	Device int32        `json:"device"` // graph node index (for records)
	Host   int32        `json:"host"`   // host index (Src/Dst of frames)
	Ports  []PortConfig `json:"ports"`

	Transport string `json:"transport,omitempty"` // lossless | gbn | irn (default lossless)
	CC        string `json:"cc,omitempty"`        // none | dcqcn (default none)
	MTU       int    `json:"mtu,omitempty"`       // payload bytes per packet (1000, as HPCC)
	AckEvery  int    `json:"ack_every,omitempty"` // ACK every N in-order packets, plus the last one (1, as HPCC)

	RTO          clock.Time `json:"rto_ps,omitempty"`      // gbn and lossless (10 ms, paper §V-A)
	RTOLow       clock.Time `json:"rto_low_ps,omitempty"`  // irn (100 us, paper §V-A)
	RTOHigh      clock.Time `json:"rto_high_ps,omitempty"` // irn (320 us, paper §V-A)
	RTOThreshold int        `json:"rto_threshold,omitempty"`
	// BDPCapBytes caps each flow's unacknowledged data (IRN's BDP-FC); 0 = no cap. It applies to any
	// transport, IRN being the one that uses it.
	BDPCapBytes int64 `json:"bdp_cap_bytes,omitempty"`
	// BDPCapPath raises a flow's cap to its path's bottleneck rate x base RTT (Flow.Base, PathBases,
	// ThenBase) when that exceeds BDPCapBytes, recomputed whenever the flow changes path: a cap from
	// the shortest-path diameter alone throttles every flow on a longer (non-minimal) path below line
	// rate.
	BDPCapPath bool `json:"bdp_cap_path,omitempty"`

	DCQCN DCQCN `json:"dcqcn,omitempty"`
	DCTCP DCTCP `json:"dctcp,omitzero"`
	// CNP is how the notification point answers CE-marked data: CNPInterval (at most one CNP per flow
	// per CNPInterval, DCQCN's N; the default) or CNPPerPacket (one CNP per marked packet, as the HPCC
	// and ConWeave ns-3 simulators set the CNP flag on every ACK of a marked packet).
	CNP         string     `json:"cnp,omitempty"`
	CNPInterval clock.Time `json:"cnp_interval_ps,omitempty"` // CNPInterval mode's N (50 us, DCQCN SIGCOMM'15)
	// NackInterval: a go-back-N receiver repeats a NACK for the same expected PSN only after this long
	// (500 us, HPCC's NACK generation interval).
	NackInterval clock.Time `json:"nack_interval_ps,omitempty"`

	DataPrio    uint8 `json:"data_prio,omitempty"`    // priority of data frames (3, as HPCC)
	ControlPrio uint8 `json:"control_prio,omitempty"` // priority of ACK/NACK/CNP (7); they use the strict queue anyway
	// QueueDepth is how many frames of locally originated data the NIC keeps in each egress data
	// queue (2): queues build in switches, not here, and pacing stays real.
	QueueDepth int `json:"queue_depth,omitempty"`

	Relay bool `json:"relay,omitempty"` // forward frames addressed to other hosts
	// NICMem is the NIC's finite memory and how it protects it (nicmem.go); zero: unbounded.
	NICMem NICMemConfig `json:"nic_memory,omitzero"`
	// RelayWeight is the DRR weight of the queues relayed data takes against each local queue (1:
	// equal quanta).
	RelayWeight int `json:"relay_weight,omitempty"`
	// FIB maps a destination host to candidate egress ports, for relaying frames without a source route,
	// for flows started without one, and for ACK/NACK/CNP (chosen by a hash of the flow).
	FIB  fib.Table `json:"fib,omitzero"`
	Seed uint64    `json:"seed,omitempty"`

	// FlowControl is the NIC's part of the fabric's flow-control mode: "" or "pfc" (honour 802.1Qbb on
	// every priority), "pfcstar" (the same; relays keep the tag) or "portfc" (PortFC node queues and
	// Algorithm 3, from PortFC). Hooks given to NewWith override it.
	FlowControl string         `json:"flow_control,omitempty"`
	PortFC      PortFCConfig   `json:"portfc,omitzero"`
	PFCStar     PFCStarConfig  `json:"pfcstar,omitzero"` // relays raise the tag (FIFOLayout)
	RelayPFC    RelayPFCConfig `json:"relay_pfc,omitzero"`

	// MeasureFrom opens the measurement window: each flow's record gets the bytes acknowledged from
	// then on (records.Flow.WindowBytes). 0: no window.
	MeasureFrom clock.Time `json:"measure_from_ps,omitempty"`

	// PathSelect is how a flow with candidate routes (Flow.Paths) chooses among them while it runs:
	// "" keeps Route, "telemetry" and "ugal" choose from measured path delays (telemetry.go).
	PathSelect string          `json:"path_select,omitempty"`
	Telemetry  TelemetryConfig `json:"telemetry,omitzero"`
	ATE        ATEConfig       `json:"ate,omitzero"` // PathSelect "ate": first-hop choice at flow start (ate.go)
	// Spread is how a flow with candidate routes and no PathSelect uses them: "" keeps Route, "flow",
	// "flowlet" (after an idle SpreadGap) or "packet" (spread.go).
	Spread    string     `json:"spread,omitempty"`
	SpreadGap clock.Time `json:"spread_gap_ps,omitempty"`
	// ReorderBuffer makes a go-back-N or lossless receiver hold out-of-order packets until the hole
	// fills, without a NACK (the telemetry paper's Benchmark, routing ugal-pb); IRN keeps them anyway.
	ReorderBuffer bool `json:"reorder_buffer,omitempty"`
}

// CNP generation modes (Config.CNP).
const (
	CNPInterval  = "interval"
	CNPPerPacket = "per-packet"
)

// Defaults, exported so reports can print them.
const (
	DefaultMTU          = 1000
	DefaultRTO          = 10 * clock.Millisecond
	DefaultRTOLow       = 100 * clock.Microsecond
	DefaultRTOHigh      = 320 * clock.Microsecond
	DefaultRTOThreshold = 3
	DefaultCNPInterval  = 50 * clock.Microsecond
	DefaultNackInterval = 500 * clock.Microsecond
	DefaultDataPrio     = 3
	DefaultControlPrio  = 7
	DefaultQueueDepth   = 2
)

// WithDefaults returns cfg with zero fields replaced by defaults, or an error naming the bad field.
func (cfg Config) WithDefaults() (Config, error) {
	c := cfg
	if len(c.Ports) == 0 {
		return c, fmt.Errorf("nodes: config.ports: a NIC needs at least one port")
	}
	for i, p := range c.Ports {
		if p.RateBps <= 0 {
			return c, fmt.Errorf("nodes: config.ports[%d].rate_bps must be positive, got %g", i, p.RateBps)
		}
		if p.Overhead < 0 {
			return c, fmt.Errorf("nodes: config.ports[%d].overhead must not be negative, got %d", i, p.Overhead)
		}
	}
	switch c.Transport {
	case "":
		c.Transport = Lossless
	case Lossless, GBN, IRN:
	default:
		return c, fmt.Errorf("nodes: config.transport %q: want lossless, gbn or irn", c.Transport)
	}
	switch c.CC {
	case "":
		c.CC = CCNone
	case CCNone, CCDCQCN, CCDCTCP:
	default:
		return c, fmt.Errorf("nodes: config.cc %q: want none, dcqcn or dctcp", c.CC)
	}
	if c.DCTCP.G == 0 {
		c.DCTCP.G = DefaultDCTCPG
	}
	if c.DCTCP.MinWindow == 0 {
		c.DCTCP.MinWindow = DefaultDCTCPMinWindow
	}
	if c.DCTCP.G < 0 || c.DCTCP.G > 1 || c.DCTCP.InitWindow < 0 || c.DCTCP.MinWindow < 0 {
		return c, fmt.Errorf("nodes: config.dctcp: parameters out of range: %+v", c.DCTCP)
	}
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	if c.MTU < 0 {
		return c, fmt.Errorf("nodes: config.mtu must be positive, got %d", c.MTU)
	}
	if c.AckEvery <= 0 {
		c.AckEvery = 1
	}
	if c.RTO <= 0 {
		c.RTO = DefaultRTO
	}
	if c.RTOLow <= 0 {
		c.RTOLow = DefaultRTOLow
	}
	if c.RTOHigh <= 0 {
		c.RTOHigh = DefaultRTOHigh
	}
	if c.RTOThreshold <= 0 {
		c.RTOThreshold = DefaultRTOThreshold
	}
	if c.BDPCapBytes < 0 {
		return c, fmt.Errorf("nodes: config.bdp_cap_bytes must not be negative, got %d", c.BDPCapBytes)
	}
	if c.CNPInterval < 0 {
		return c, fmt.Errorf("nodes: config.cnp_interval must not be negative")
	}
	if c.CNPInterval == 0 {
		c.CNPInterval = DefaultCNPInterval
	}
	switch c.CNP {
	case "":
		c.CNP = CNPInterval
	case CNPInterval, CNPPerPacket:
	default:
		return c, fmt.Errorf("nodes: config.cnp %q: want %s or %s", c.CNP, CNPInterval, CNPPerPacket)
	}
	if c.NackInterval <= 0 {
		c.NackInterval = DefaultNackInterval
	}
	if c.DataPrio == 0 {
		c.DataPrio = DefaultDataPrio
	}
	if c.ControlPrio == 0 {
		c.ControlPrio = DefaultControlPrio
	}
	if c.DataPrio > 7 || c.ControlPrio > 7 {
		return c, fmt.Errorf("nodes: config.data_prio/control_prio must be 0..7")
	}
	if c.QueueDepth <= 0 {
		c.QueueDepth = DefaultQueueDepth
	}
	d := &c.DCQCN
	if d.G == 0 {
		d.G = 1.0 / 256
	}
	if d.AlphaInterval == 0 {
		d.AlphaInterval = clock.Microsecond
	}
	if d.DecreaseInterval == 0 {
		d.DecreaseInterval = 4 * clock.Microsecond
	}
	if d.RPTimer == 0 {
		d.RPTimer = 300 * clock.Microsecond
	}
	if d.FastRecoveryTimes == 0 {
		d.FastRecoveryTimes = 1
	}
	if d.MinRateBps == 0 {
		d.MinRateBps = 1000e6
	}
	if d.RateOnFirstCNP == 0 {
		d.RateOnFirstCNP = 1
	}
	if d.G < 0 || d.G > 1 || d.AlphaInterval < 0 || d.DecreaseInterval < 0 || d.RPTimer < 0 || d.FastRecoveryTimes < 0 ||
		d.RateAIBps < 0 || d.RateHAIBps < 0 || d.MinRateBps < 0 || d.RateOnFirstCNP < 0 || d.RateOnFirstCNP > 1 {
		return c, fmt.Errorf("nodes: config.dcqcn: parameters out of range: %+v", *d)
	}
	if err := c.checkFlowControl(); err != nil {
		return c, err
	}
	if err := c.checkPathSelect(); err != nil { // telemetry.go
		return c, err
	}
	if err := c.checkATE(); err != nil { // ate.go
		return c, err
	}
	if err := c.checkSpread(); err != nil { // spread.go
		return c, err
	}
	if err := c.FIB.Check("config.fib", len(c.Ports)); err != nil {
		return c, fmt.Errorf("nodes: %w", err)
	}
	return c, nil
}

// rateAI returns the AI and HAI steps for a port of rate bps: HPCC scales 5 and 50 Mb/s by bw/25G.
func (d *DCQCN) rateAI(bps float64) (ai, hai float64) {
	ai, hai = d.RateAIBps, d.RateHAIBps
	if ai == 0 {
		ai = 5e6 * bps / 25e9
	}
	if hai == 0 {
		hai = 50e6 * bps / 25e9
	}
	return ai, hai
}
