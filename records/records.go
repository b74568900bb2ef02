// Package records is what a run measured, as plain data: per-flow completions, pause/resume events,
// drops, ECN marks, retransmissions, queue samples. Engines append to a Log; backends merge the logs of
// all devices; package report reads them. Times are in the engine's clock (dilated on netns); the
// report converts to paper units.
package records

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/fabriclab/fabriclab/clock"
)

// Flow is one flow's outcome, written by the receiving (or sending) NIC when it completes.
type Flow struct {
	ID          uint32
	Src, Dst    int32 // host indices
	SPort       uint16
	DPort       uint16
	Size        int64 // application bytes
	Start       clock.Time
	Finish      clock.Time // 0 if not completed
	Ideal       clock.Time // standalone FCT on an idle fabric along the same path (for slowdown)
	Completed   bool
	Retransmits int64 // packets retransmitted
	// WindowBytes is what the flow delivered (cumulatively acknowledged) inside the run's measurement
	// window (spec measure_from .. the end): steady-state throughput without start-up.
	WindowBytes int64
	Class       string // workload entry that made it: "flows", "incast", "poisson", ...
	// Delivered is the application bytes cumulatively acknowledged at the sender when the record was
	// written: Size once completed, what got through by the run's end otherwise. The report's goodput
	// over all flows counts unfinished flows by it. 0 with Completed means "not recorded" (older logs).
	Delivered int64
	// PathBytes[i] is the payload bytes sent (retransmissions included) on the flow's candidate path i,
	// for flows the NIC spread or steered over several paths; nil otherwise.
	PathBytes []int64 `json:",omitempty"`
}

// FCT is the flow completion time, or 0 if the flow did not complete.
func (f Flow) FCT() clock.Time {
	if !f.Completed {
		return 0
	}
	return f.Finish - f.Start
}

// DeviceKind matches the HPCC pfc.txt node_type column: 0 host, 1 switch.
type DeviceKind uint8

const (
	Host   DeviceKind = 0
	Switch DeviceKind = 1
)

// Pause is a flow-control frame sent or received (PFC or PortFC).
type Pause struct {
	At     clock.Time
	Device int32 // graph node index
	Kind   DeviceKind
	Port   int16 // port index at Device
	Queue  int16 // priority (PFC) or queue index (PortFC)
	On     bool  // pause (true) or resume (false)
	Sent   bool  // true: Device sent it out of Port; false: Device received it on Port
	Hops   int8  // PortFC: how many hops this pause has been relayed so far (0 = originated here)
}

// Drop is a frame discarded by a device.
type Drop struct {
	At       clock.Time
	Device   int32
	Port     int16 // egress port the frame was headed for (-1 if unknown)
	Queue    int16
	Flow     uint32
	Lossless bool   // dropped from a lossless class: a violation
	Reason   string // "buffer", "headroom", "malformed", "no-route", "ttl"
}

// QueueSample is a queue's occupancy at an instant.
type QueueSample struct {
	At     clock.Time
	Device int32
	Port   int16
	Queue  int16 // -1 = all queues of the port
	Bytes  int32
}

// LinkBytes is what one device port put on its link during one meter bin (frame bytes as encoded).
type LinkBytes struct {
	At     clock.Time // start of the bin
	Device int32
	Port   int16
	Bytes  int64
}

// FlowBytes is the payload of one flow that reached its destination host during one meter bin.
type FlowBytes struct {
	At    clock.Time // start of the bin
	Flow  uint32
	Bytes int64
}

// Counters are a device's totals, pulled at the end of a run.
type Counters struct {
	Device      int32
	ECNMarked   uint64
	Retransmits uint64
	CNPsSent    uint64
	// Reordered counts data packets that reached their receiver after a packet of the same flow that
	// was sent later (arrival order differs from send order): the path changed under the flow, or
	// packets of one flow took different paths. Not a loss.
	Reordered uint64

	// ReorderHeld counts packets a receiver's reorder buffer held until their hole filled (the
	// ugal-pb Benchmark's, nodes.Config.ReorderBuffer); ReorderPeak is the most one flow's buffer held
	// at once, in packets.
	ReorderHeld, ReorderPeak uint64

	Malformed      uint64   // frames that failed to decode (netns)
	MalformedPorts []uint64 // the same per port (netns; nil when none)
	RxFrames       uint64
	TxFrames       uint64
	MaxQueue       []int // per port: max bytes over all its queues at once
	// NIC memory (hosts with a finite buffer): its size, the most data its egress queues held at once,
	// how often its guard paused the node's upstream, and relayed frames it dropped for lack of room.
	NICMemBytes, NICMemPeak   int64
	NICMemPauses, NICMemDrops uint64
}

// Log collects a device's (or a whole virtual fabric's) records. It is not safe for concurrent use:
// each engine goroutine gets its own Log, merged afterwards.
type Log struct {
	Flows    []Flow
	Pauses   []Pause
	Drops    []Drop
	Samples  []QueueSample
	Counters []Counters
	// Links and FlowRx are per-bin byte meters (the virtual backend records them; MeterBin is the bin).
	Links    []LinkBytes
	FlowRx   []FlowBytes
	MeterBin clock.Time
	// Violations are lossless-mode drops and other broken invariants, in words.
	Violations []string
	// Reorders are the flows whose packets arrived out of send order, one line per flow (its first
	// reordered packet), in words: reordering is reported as itself, never as a loss.
	Reorders []string
	// Faults are the cable faults applied during the run (a spec's faults:), in the order applied.
	Faults []FaultEvent `json:"faults,omitempty"`

	// pauses holds AddPause's records in fixed-size chunks after ChunkPauses, until FlushPauses.
	pauses [][]Pause
	chunk  bool
	// spill, after SpillPauses, holds the oldest spilled records, written a full chunk at a time.
	spill    *os.File
	spilled  int // records in spill
	spillErr error
}

// pauseChunk is the records a chunk holds: 24 KB, one size class, so a full chunk wastes nothing.
const pauseChunk = 1024

// ChunkPauses makes AddPause keep the pauses in chunks that are never copied, until FlushPauses moves
// them to Pauses. A slice that grows by append copies itself each time it is full (by a quarter, once
// large), leaving the old copy behind: on a fat-tree k=12 incast (157,000 pauses, 3.8 MB) that was
// 19 MB of garbage, which the collector lets pile up to the size of the live heap before it runs. The
// log's owner must call FlushPauses before anything reads Pauses (the virtual backend does, at the end
// of Run).
func (l *Log) ChunkPauses() { l.chunk = true }

// AddPause records a pause event.
func (l *Log) AddPause(p Pause) {
	if !l.chunk {
		l.Pauses = append(l.Pauses, p)
		return
	}
	n := len(l.pauses)
	// With a spill file there is one chunk, written and reused once full; after a failed write the
	// chunks pile up in memory as without one (n stays above 1, so nothing is written again).
	if n == 1 && len(l.pauses[0]) == pauseChunk && l.spillChunk() {
		l.pauses[0] = l.pauses[0][:0]
	} else if n == 0 || len(l.pauses[n-1]) == pauseChunk {
		l.pauses = append(l.pauses, make([]Pause, 0, pauseChunk))
		n++
	}
	l.pauses[n-1] = append(l.pauses[n-1], p)
}

// SpillPauses makes AddPause, once ChunkPauses is on, write each full chunk of pause records to f and
// reuse the chunk, and FlushPauses read them back and close f. A long lossless run keeps adding pauses
// after its fabric's queues have passed their peak: 3.6 MB on a fat-tree k=12 incast, all of them new
// heap above the live peak. f is the Log's from now on; it should be an unlinked temporary file, so
// nothing is left if the process dies. A failed write leaves that chunk and the later ones in memory.
func (l *Log) SpillPauses(f *os.File) { l.spill = f }

// SpillErr is why the spilled pause records could not be read back by FlushPauses (nil if they were):
// Pauses then lacks them, and the run's records are incomplete.
func (l *Log) SpillErr() error { return l.spillErr }

// spillChunk writes the one full chunk to the spill file; false if there is none or it failed.
func (l *Log) spillChunk() bool {
	if l.spill == nil {
		return false
	}
	if _, err := l.spill.Write(pauseBytes(l.pauses[0])); err != nil {
		// The file keeps the records counted in spilled; a partly written chunk after them is never read.
		return false
	}
	l.spilled += len(l.pauses[0])
	return true
}

// pauseBytes is the memory of ps as bytes (Pause holds no pointers): the spill file is read back by
// this process only, into the same layout.
func pauseBytes(ps []Pause) []byte {
	if len(ps) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(ps))), len(ps)*int(unsafe.Sizeof(ps[0])))
}

// readSpill reads the spilled records into dst (len(dst) == l.spilled) and closes the file.
func (l *Log) readSpill(dst []Pause) {
	f := l.spill
	l.spill = nil
	defer f.Close()
	b := pauseBytes(dst)
	if n, err := f.ReadAt(b, 0); n != len(b) {
		l.spillErr = fmt.Errorf("records: reading back %d spilled pause records: read %d of %d bytes: %v", len(dst), n, len(b), err)
	}
}

// FlushPauses appends the chunked pauses to Pauses, in the order they were added, and leaves AddPause
// appending to Pauses.
func (l *Log) FlushPauses() {
	l.chunk = false
	if len(l.pauses) == 0 && l.spill == nil {
		return
	}
	n := len(l.Pauses) + l.spilled
	for _, c := range l.pauses {
		n += len(c)
	}
	all := make([]Pause, len(l.Pauses)+l.spilled, n)
	copy(all, l.Pauses)
	if l.spill != nil {
		l.readSpill(all[len(l.Pauses):])
	}
	for _, c := range l.pauses {
		all = append(all, c...)
	}
	l.Pauses, l.pauses, l.spilled = all, nil, 0
}

// Merge appends other's records to l. Both logs' chunked pauses are flushed first.
func (l *Log) Merge(o *Log) {
	l.FlushPauses()
	o.FlushPauses()
	l.Flows = append(l.Flows, o.Flows...)
	l.Pauses = append(l.Pauses, o.Pauses...)
	l.Drops = append(l.Drops, o.Drops...)
	l.Samples = append(l.Samples, o.Samples...)
	l.Counters = append(l.Counters, o.Counters...)
	l.Links = append(l.Links, o.Links...)
	l.FlowRx = append(l.FlowRx, o.FlowRx...)
	l.MeterBin = max(l.MeterBin, o.MeterBin)
	l.Violations = append(l.Violations, o.Violations...)
	l.Reorders = append(l.Reorders, o.Reorders...)
	l.Faults = append(l.Faults, o.Faults...)
}

// Dilate multiplies every time in the log by d, for a log an engine wrote on a clock d times slower
// than the one its reader expects (a netns agent's engines run on paper time, clock.Dilated, and its
// records go back in the agent clock's dilated time). Chunked or spilled pauses must be flushed first.
func (l *Log) Dilate(d clock.Time) {
	if d == 1 {
		return
	}
	l.FlushPauses() // chunked pauses would keep their times undilated
	for i := range l.Flows {
		f := &l.Flows[i]
		f.Start, f.Ideal = f.Start*d, f.Ideal*d
		if f.Finish != 0 {
			f.Finish *= d
		}
	}
	for i := range l.Pauses {
		l.Pauses[i].At *= d
	}
	for i := range l.Drops {
		l.Drops[i].At *= d
	}
	for i := range l.Samples {
		l.Samples[i].At *= d
	}
	for i := range l.Links {
		l.Links[i].At *= d
	}
	for i := range l.FlowRx {
		l.FlowRx[i].At *= d
	}
	l.MeterBin *= d
	for i := range l.Faults {
		l.Faults[i].At *= d
	}
}

// Until keeps what was measured up to t and drops the rest: pauses, drops, queue samples, link and
// flow byte meters and fault events after t, and the completion of flows that finished after t (they
// count as not completed; their delivered bytes stay as recorded, since the log holds no per-flow
// bytes at t: goodput of a partial run may count bytes a flow got after t). A run that lost a machine
// keeps only the window every machine agreed on (the netns backend's lockstep: the slowest clock every
// agent had reported when the machine was lost), since past it the others ran on without the lost
// machine's frames. Counters and words stay whole: they carry no time.
func (l *Log) Until(t clock.Time) {
	l.FlushPauses()
	l.Pauses = keepUntil(l.Pauses, t, func(p Pause) clock.Time { return p.At })
	l.Drops = keepUntil(l.Drops, t, func(d Drop) clock.Time { return d.At })
	l.Samples = keepUntil(l.Samples, t, func(s QueueSample) clock.Time { return s.At })
	l.Links = keepUntil(l.Links, t, func(b LinkBytes) clock.Time { return b.At })
	l.FlowRx = keepUntil(l.FlowRx, t, func(b FlowBytes) clock.Time { return b.At })
	l.Faults = keepUntil(l.Faults, t, func(f FaultEvent) clock.Time { return f.At })
	for i := range l.Flows {
		if f := &l.Flows[i]; f.Completed && f.Finish > t {
			f.Completed, f.Finish = false, 0
		}
	}
}

func keepUntil[T any](xs []T, t clock.Time, at func(T) clock.Time) []T {
	out := xs[:0]
	for _, x := range xs {
		if at(x) <= t {
			out = append(out, x)
		}
	}
	return out
}
