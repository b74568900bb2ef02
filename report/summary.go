// Package report turns what a run measured (records.Log) into the run directory of docs/architecture.md
// §Contracts: summary.json, fct.txt and pfc.txt in the HPCC simulator's formats, flows.csv, drops.csv,
// pfc.csv, violations.txt and the HPCC slowdown-per-size-bin table; and reads summary.json and flows.csv
// back.
//
// Conventions (they are the contract suites assert on):
//
//   - Units: every time is in paper units, i.e. engine time divided by the lab's dilation D
//     (docs/architecture.md §Time dilation). Seconds in JSON and CSV, integer nanoseconds (rounded) in the
//     HPCC text files. Byte counts are not dilated. Rates are bit/s in paper units (bytes*8 / paper seconds).
//   - FCT = Finish - Start of a completed flow. Incomplete flows count in flows.total only.
//   - Slowdown = FCT / Ideal, floored at 1 (HPCC analysis/fct_analysis.py). Ideal is the engine's
//     standalone FCT along the flow's path; flows without one (Ideal <= 0) have no slowdown and are left
//     out of slowdown statistics and bins. The ratio does not depend on D.
//   - Percentiles are nearest-rank: the p-quantile of N sorted values is the value of rank ceil(p*N)
//     (1-based), so it is always a measured value; for 1..100, p50 = 50, p99 = 99, p999 = 100. HPCC's
//     script takes index int(p*N) (0-based), one rank higher when p*N is whole; the two agree for large N.
//     Statistics of an empty set are 0 (JSON has no NaN).
//   - goodput (and goodput per class) gives every common reading of throughput side by side (Goodput,
//     MetricDefs): per flow over all flows (unfinished ones with the bytes acknowledged by the run's
//     end), per flow over completed flows, aggregate over the delivered bytes, aggregate over completed
//     flows. throughput_bps and avg_flow_goodput_bps are the older names of the two completed-only
//     readings, kept for readers of older summaries.
//   - pauses.sent / pauses.received count pause (XOFF) frames a device sent / received; resumes are
//     counted separately. PFC and PortFC frames both count.
//   - retransmissions: engines may report them per flow (Flow.Retransmits) and per device
//     (Counters.Retransmits); both count the same packets, so they are never added: the larger sum is
//     reported.
package report

import (
	"math"
	"net/netip"
	"sort"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/records"
)

// Meta is what the report needs besides the records: it comes from the resolved spec and from the
// harness monitors, never from the engines.
type Meta struct {
	// Dilation is the lab's D: engine times are divided by it. 0 means 1 (virtual backend).
	Dilation float64
	// Duration is how long the run lasted, in engine time (0 if unknown).
	Duration clock.Time
	// Graph, if set, names devices (drops.csv, pfc.csv) and lets pfc.txt be derived from sent pause
	// records when the engines logged no received ones.
	Graph *topo.Graph
	// HostIP maps a host index to its address for fct.txt; nil means HostIP below (wire's convention).
	HostIP func(host int) netip.Addr
	// MeasureFrom opens the measurement window (engine time; 0: none), which ends at Duration.
	MeasureFrom clock.Time
	// Deadlock is the run-time monitor's verdict.
	Deadlock DeadlockVerdict
	// Scheduled is how many flows the lab's schedule holds (0: unknown).
	Scheduled int
	// Fidelity is the netns fidelity monitor's verdict; nil means no monitor ran (the virtual backend is
	// exact by construction) and is reported as faithful with reason "not monitored".
	Fidelity *Fidelity
}

// DeadlockVerdict is the monitor's finding in engine time.
type DeadlockVerdict struct {
	Detected bool
	Cycle    []string   // devices/queues on the wait-for cycle, in order
	At       clock.Time // when it was detected (engine time)
}

// Fidelity says whether the emulation kept up (docs/architecture.md §Fidelity).
type Fidelity struct {
	Faithful bool   `json:"faithful"`
	Reason   string `json:"reason"`
	// Differing are the flows whose outcome differs from the virtual backend's run of the same lab, when
	// the two were compared exactly (CompareRuns): each makes the run unfaithful.
	Differing []FlowDiff `json:"differing_flows,omitempty"`
}

// notMonitored is the reason of a run no fidelity monitor judged (the virtual backend: exact).
const notMonitored = "not monitored"

// Monitored says whether a fidelity monitor judged the run (netns).
func (f Fidelity) Monitored() bool { return f.Reason != notMonitored }

// HostIP is the lab's address convention: host i is 198.18.0.0 + i + 1 (198.18.0.0/15). It mirrors
// wire.HostIP so that report does not depend on the wire layer; pass wire.HostIP in Meta.HostIP to be
// explicit.
func HostIP(i int) netip.Addr {
	v := uint32(198)<<24 | uint32(18)<<16 + uint32(i) + 1
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func (m Meta) dilation() float64 {
	if m.Dilation <= 0 {
		return 1
	}
	return m.Dilation
}

// seconds converts an engine time to paper seconds.
// One division (not two) keeps round values round: 7.5e9 ps at D=1000 is 7.5e-06, not 7.499999999999999e-06.
func (m Meta) seconds(t clock.Time) float64 {
	return float64(t) / (float64(clock.Second) * m.dilation())
}

// nanos converts an engine time to paper nanoseconds, rounded, as HPCC's integer ns timestamps.
func (m Meta) nanos(t clock.Time) int64 {
	return int64(math.Round(float64(t) / (float64(clock.Nanosecond) * m.dilation())))
}

func (m Meta) hostIP(i int) netip.Addr {
	if m.HostIP != nil {
		return m.HostIP(i)
	}
	return HostIP(i)
}

// Summary is summary.json. Field names are part of the contract (docs/architecture.md §Contracts); add, never
// rename.
type Summary struct {
	Flows             FlowCounts `json:"flows"`
	FCT               Stats      `json:"fct_s"`
	Slowdown          Stats      `json:"slowdown"`
	ThroughputBps     float64    `json:"throughput_bps"`
	AvgFlowGoodputBps float64    `json:"avg_flow_goodput_bps"`
	Goodput           Goodput    `json:"goodput"`
	Drops             Drops      `json:"drops"`
	Retransmissions   int64      `json:"retransmissions"`
	Pauses            Pauses     `json:"pauses"`
	Deadlock          Deadlock   `json:"deadlock"`
	Fidelity          Fidelity   `json:"fidelity"`
	ECNMarks          uint64     `json:"ecn_marks"`
	CNPs              uint64     `json:"cnps"`
	// WindowGoodputBps is the bytes flows delivered inside the measurement window (spec measure_from to
	// the run's end) * 8 over the window's length; 0 without a window.
	WindowGoodputBps float64 `json:"window_goodput_bps,omitempty"`
	// Reordered counts data packets that arrived after a later-sent packet of their flow; Reorders has
	// one line per reordered flow. Reordering is not loss: neither counts as a drop or a violation.
	Reordered uint64   `json:"reordered"`
	Reorders  []string `json:"reorders,omitempty"`
	// ReorderBuffer is the receivers' reorder buffers (routing ugal-pb): packets held until their hole
	// filled, and the most packets one flow's buffer held at once.
	ReorderBuffer ReorderBuffer `json:"reorder_buffer,omitzero"`
	// NIC is the NICs' finite memory: the largest configured buffer, the most data one NIC's egress
	// queues held at once, how often memory guards paused a node's upstream, relayed frames dropped for
	// lack of room.
	NIC NICMemory `json:"nic"`
	// Classes breaks flows down by workload entry (Flow.Class: "incast", "poisson", ...); flows with no
	// class are under "default".
	Classes    map[string]ClassSummary `json:"classes,omitempty"`
	Paths      *PathSpread             `json:"paths,omitempty"` // multipath use (paths.go); nil: one path per flow
	Violations []string                `json:"violations,omitempty"`
	Dilation   float64                 `json:"dilation"`
	DurationS  float64                 `json:"duration_s"`
}

// NICMemory is summary.json's "nic" object.
type NICMemory struct {
	BufferBytes int64  `json:"buffer_bytes"`
	PeakBytes   int64  `json:"peak_queue_bytes"`
	Pauses      uint64 `json:"guard_pauses"`
	Drops       uint64 `json:"drops"`
}

// FlowCounts counts flow records.
type FlowCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	// Scheduled is how many flows the workload planned (summary level only; 0 if unknown): a run that
	// stops early (deadlock, duration) starts fewer, and Total counts only those that started.
	Scheduled int `json:"scheduled,omitempty"`
}

// Stats summarizes a sample: mean and nearest-rank percentiles, plus its size.
type Stats struct {
	Count int     `json:"count"`
	Avg   float64 `json:"avg"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

// Drops counts discarded frames by class; ByReason splits all drops by Drop.Reason.
type Drops struct {
	Lossless int            `json:"lossless"`
	Lossy    int            `json:"lossy"`
	ByReason map[string]int `json:"by_reason,omitempty"`
}

// Pauses counts flow-control frames (PFC and PortFC) by direction.
type Pauses struct {
	Sent            int `json:"sent"`
	Received        int `json:"received"`
	ResumesSent     int `json:"resumes_sent"`
	ResumesReceived int `json:"resumes_received"`
}

// Deadlock is the verdict as summary.json shows it.
type Deadlock struct {
	Detected bool     `json:"detected"`
	Cycle    []string `json:"cycle"`
	AtS      float64  `json:"at_s"`
}

// ClassSummary is the per-class part of a summary.
type ClassSummary struct {
	Flows         FlowCounts `json:"flows"`
	FCT           Stats      `json:"fct_s"`
	Slowdown      Stats      `json:"slowdown"`
	ThroughputBps float64    `json:"throughput_bps"`
	Goodput       Goodput    `json:"goodput"`
}

// Percentile is the nearest-rank p-quantile (0 <= p <= 1) of ascending-sorted values: the value of rank
// ceil(p*N), at least rank 1. It returns 0 for no values.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// The epsilon keeps p*N that should be whole (0.95*100) from rounding up a rank.
	r := int(math.Ceil(p*float64(n) - 1e-9))
	if r < 1 {
		r = 1
	}
	if r > n {
		r = n
	}
	return sorted[r-1]
}

// NewStats sorts a copy of values and summarizes it.
func NewStats(values []float64) Stats {
	s := Stats{Count: len(values)}
	if len(values) == 0 {
		return s
	}
	v := append([]float64(nil), values...)
	sort.Float64s(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	s.Avg = sum / float64(len(v))
	s.P50, s.P95, s.P99, s.P999 = Percentile(v, 0.50), Percentile(v, 0.95), Percentile(v, 0.99), Percentile(v, 0.999)
	s.Max = v[len(v)-1]
	return s
}

// Summarize computes summary.json's content.
func Summarize(log *records.Log, meta Meta) *Summary {
	rows := Rows(log, meta)
	s := &Summary{Dilation: meta.dilation(), DurationS: meta.seconds(meta.Duration)}
	all := summarizeRows(rows, s.DurationS)
	s.Flows, s.FCT, s.Slowdown, s.ThroughputBps, s.Goodput = all.Flows, all.FCT, all.Slowdown, all.ThroughputBps, all.Goodput
	s.AvgFlowGoodputBps = s.Goodput.PerFlowCompletedBps
	s.Flows.Scheduled = meta.Scheduled

	byClass := map[string][]FlowRow{}
	for _, r := range rows {
		c := r.Class
		if c == "" {
			c = "default"
		}
		byClass[c] = append(byClass[c], r)
	}
	if len(byClass) > 0 {
		s.Classes = map[string]ClassSummary{}
		for c, rs := range byClass {
			s.Classes[c] = summarizeRows(rs, s.DurationS)
		}
	}

	for _, d := range log.Drops {
		if d.Lossless {
			s.Drops.Lossless++
		} else {
			s.Drops.Lossy++
		}
		if s.Drops.ByReason == nil {
			s.Drops.ByReason = map[string]int{}
		}
		s.Drops.ByReason[d.Reason]++
	}
	for _, p := range log.Pauses {
		switch {
		case p.Sent && p.On:
			s.Pauses.Sent++
		case p.Sent:
			s.Pauses.ResumesSent++
		case p.On:
			s.Pauses.Received++
		default:
			s.Pauses.ResumesReceived++
		}
	}
	s.Paths = pathSpread(log.Flows)
	var flowRetx, devRetx int64
	for _, f := range log.Flows {
		flowRetx += f.Retransmits
	}
	for _, c := range log.Counters {
		devRetx += int64(c.Retransmits)
		s.ECNMarks += c.ECNMarked
		s.CNPs += c.CNPsSent
		s.Reordered += c.Reordered
		s.ReorderBuffer.Held += c.ReorderHeld
		s.ReorderBuffer.PeakPackets = max(s.ReorderBuffer.PeakPackets, c.ReorderPeak)
		s.NIC.BufferBytes = max(s.NIC.BufferBytes, c.NICMemBytes)
		s.NIC.PeakBytes = max(s.NIC.PeakBytes, c.NICMemPeak)
		s.NIC.Pauses += c.NICMemPauses
		s.NIC.Drops += c.NICMemDrops
	}
	s.Retransmissions = max(flowRetx, devRetx)

	s.Deadlock = Deadlock{Detected: meta.Deadlock.Detected, Cycle: append([]string{}, meta.Deadlock.Cycle...)}
	if meta.Deadlock.Detected {
		s.Deadlock.AtS = meta.seconds(meta.Deadlock.At)
	}
	if meta.Fidelity != nil {
		s.Fidelity = *meta.Fidelity
	} else {
		s.Fidelity = Fidelity{Faithful: true, Reason: notMonitored}
	}
	s.Violations = append(s.Violations, log.Violations...)
	s.Reorders = append(s.Reorders, log.Reorders...)
	if w := meta.seconds(meta.Duration - meta.MeasureFrom); meta.MeasureFrom > 0 && w > 0 {
		var b int64
		for _, f := range log.Flows {
			b += f.WindowBytes
		}
		s.WindowGoodputBps = float64(b) * 8 / w
	}
	return s
}

func summarizeRows(rows []FlowRow, endS float64) ClassSummary {
	var cs ClassSummary
	var fct, sd []float64
	var bytes int64
	first, last := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		cs.Flows.Total++
		if !r.Completed {
			continue
		}
		cs.Flows.Completed++
		fct = append(fct, r.FCTS)
		if r.Slowdown > 0 {
			sd = append(sd, r.Slowdown)
		}
		bytes += r.Size
		first, last = math.Min(first, r.StartS), math.Max(last, r.FinishS)
	}
	cs.FCT, cs.Slowdown = NewStats(fct), NewStats(sd)
	if last > first {
		cs.ThroughputBps = float64(bytes) * 8 / (last - first)
	}
	cs.Goodput = GoodputOf(rows, endS)
	return cs
}

// ReorderBuffer sums the receivers' reorder buffers (Summary.ReorderBuffer).
type ReorderBuffer struct {
	Held        uint64 `json:"held"`
	PeakPackets uint64 `json:"peak_packets"`
}
