// Package virtual runs a lab's switch and NIC engines in one process on a deterministic virtual clock:
// the same engines the netns backend runs on real frames, with links that hand packet descriptors
// across after the propagation delay. Same lab, same seed: the same records, bit for bit.
package virtual

import (
	"context"
	"fmt"
	"os"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/harness/monitor"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/report"
	"github.com/fabriclab/fabriclab/switchsw"
)

// Fabric is an instantiated lab.
type Fabric struct {
	Lab      *lab.Lab
	Clock    *clock.Virtual
	Log      *records.Log
	Switches map[int]*switchsw.Switch // by graph node
	NICs     map[int]*nodes.NIC       // by graph node
	// Progress, if set, is called from Run every few thousand events with the engine time and the
	// flows completed so far (a progress bar; it runs on Run's goroutine).
	Progress func(now clock.Time, completed, total int)
	// Monitor is the run-time deadlock detector (nil: none). New sets one with the defaults; replace or
	// nil it before Run.
	Monitor *monitor.Monitor
	// PollMonitor runs the monitor the periodic way (Monitor.Every: a pass over every queue each
	// Interval) instead of the event-driven Monitor.Watch. Same verdicts; kept to compare the two.
	PollMonitor bool
	// StopOnDeadlock ends Run at the monitor's first detection (default true: a deadlocked fabric never
	// recovers, and the rest of the run would only burn time).
	StopOnDeadlock bool
	// CheckFrames (default true) checks every frame against what the real wire can carry (wire.Check)
	// before a link takes it; a frame that fails is dropped and counted in Unwired. It catches engine
	// bugs the netns backend would hit, and costs about 5% of a run: lab run --check-frames=false
	// leaves it out.
	CheckFrames bool
	// Unwired counts frames dropped because the real wire could not carry them (a bug in an engine).
	Unwired    uint64
	deadlocked bool
	started    int

	// Completion bookkeeping: flow records are appended as flows complete, so Run reads only the new
	// ones. waiting counts each dependent flow's outstanding predecessors (traffic.Flow.After).
	// waiting is indexed by Lab.Flows like startAt: with parts, each entry is touched only by the part
	// of its flow's source NIC, which holds its predecessors' sources too (NewParallel).
	seen, done int
	waiting    []int
	dependents map[uint32][]int // flow ID -> indices into Lab.Flows that wait for it; read-only in Run
	startAt    []func()         // by index into Lab.Flows

	// MeterBin is the width of the per-link and per-flow byte meters' bins (records.Log Links, FlowRx);
	// 0 means DefaultMeterBin, widened as the run grows to keep MaxMeterBins bins; negative turns the
	// meters off. Set it before Run.
	MeterBin clock.Time
	meterBin *meterBin
	// DeferRecords makes Run leave the pause records chunked and the byte meters unread: TakeRecords
	// then returns what finishes Log, holding the meters' counts but not the engines. A caller that
	// drops the Fabric and collects before calling it builds the records (10 MB on a fat-tree k=12
	// incast: the pauses in one slice, every link's bins as rows) in memory the engines gave back,
	// where on top of the running fabric's heap they set the run's peak RSS.
	DeferRecords bool
	// SpillDir, if set, is a directory where Run writes the pause records as they accumulate (an
	// unlinked temporary file, read back when the records are taken; records.Log.SpillPauses): on a
	// long lossless run they are heap added after the fabric's live peak. If the file cannot be made,
	// they stay in memory.
	SpillDir string

	links map[topo.End]*link // the link out of each device port
	pool  *pkt.Pool          // the NICs' packets: every engine runs on Run's goroutine
	pcaps []*capture

	// parts, with NewParallel: the fabric split over workers, each part on a clock of its own; Clock
	// then holds only the harness's events (parallel.go). partOf maps graph node -> part.
	parts  []part
	partOf map[int]int
	par    *parallel
}

type wired interface {
	Device
	SetLink(port int, l egress.Link)
}

// switchsw.Switch and nodes.NIC implement wired (a device a link delivers to, whose ports send onto
// links) and monitor.Device (the deadlock monitor reads their egress ports); link implements
// egress.Link, as the netns agent's link does.
var (
	_ wired          = (*switchsw.Switch)(nil)
	_ wired          = (*nodes.NIC)(nil)
	_ monitor.Device = (*switchsw.Switch)(nil)
	_ monitor.Device = (*nodes.NIC)(nil)
	_ egress.Link    = (*link)(nil)
)

// New builds the fabric: one engine per device, one link per cable direction, and every flow's start
// scheduled on the clock.
func New(l *lab.Lab) (*Fabric, error) { return build(l, nil) }

// build makes the fabric; with parts (graph node -> part, NewParallel) every part gets its own clock,
// log and packet pool, and links between parts hand their frames over at window edges (parallel.go).
func build(l *lab.Lab, parts map[int]int) (*Fabric, error) {
	f := &Fabric{Lab: l, Clock: clock.NewVirtual(), Log: &records.Log{},
		Switches: map[int]*switchsw.Switch{}, NICs: map[int]*nodes.NIC{},
		Monitor: monitor.New(l.Graph, monitor.Config{}), StopOnDeadlock: true, CheckFrames: true, links: map[topo.End]*link{}, pool: &pkt.Pool{}}
	if parts != nil {
		f.makeParts(parts)
	}
	g := l.Graph
	devs := make([]wired, len(g.Nodes))
	for _, s := range l.Switches {
		sw, err := switchsw.New(s.Config, clock.For(f.clockOf(s.Node), clock.DeviceOrder(s.Node)), make([]egress.Link, len(s.Config.Ports)), f.logOf(s.Node))
		if err != nil {
			return nil, fmt.Errorf("switch %s: %w", g.Nodes[s.Node].Name, err)
		}
		sw.SetPool(f.poolOf(s.Node))
		f.Switches[s.Node] = sw
		devs[s.Node] = sw
	}
	for _, h := range l.Hosts {
		nic, err := nodes.New(h.Config, clock.For(f.clockOf(h.Node), clock.DeviceOrder(h.Node)), make([]egress.Link, len(h.Config.Ports)), f.logOf(h.Node))
		if err != nil {
			return nil, fmt.Errorf("host %s: %w", g.Nodes[h.Node].Name, err)
		}
		nic.SetPool(f.poolOf(h.Node))
		f.NICs[h.Node] = nic
		devs[h.Node] = nic
	}
	for i, lk := range g.Links {
		a, b := devs[lk.A.Node], devs[lk.B.Node]
		if a == nil || b == nil {
			return nil, fmt.Errorf("link %d (%s-%s) joins a device the lab did not configure", i, g.Nodes[lk.A.Node].Name, g.Nodes[lk.B.Node].Name)
		}
		ab := f.newLink(lk.A, lk.B, lk.Delay, b)
		ba := f.newLink(lk.B, lk.A, lk.Delay, a)
		a.SetLink(lk.A.Port, ab)
		b.SetLink(lk.B.Port, ba)
		f.links[lk.A], f.links[lk.B] = ab, ba
	}
	f.scheduleFaults() // faults.go
	f.startAt = make([]func(), len(l.Flows))
	for i := range l.Flows {
		fp := &l.Flows[i]
		nic := f.NICs[fp.SrcNode]
		flow := fp.NICFlow()
		log, started := f.logOf(fp.SrcNode), &f.started
		if f.parts != nil {
			started = &f.parts[f.partOf[fp.SrcNode]].started
		}
		f.startAt[i] = func() {
			if err := nic.StartFlow(flow); err != nil {
				log.Violations = append(log.Violations, fmt.Sprintf("flow %d did not start: %v", flow.ID, err))
			}
			*started++
		}
		if len(fp.After) > 0 {
			if f.waiting == nil {
				f.waiting, f.dependents = make([]int, len(l.Flows)), map[uint32][]int{}
			}
			f.waiting[i] = len(fp.After)
			for _, a := range fp.After {
				f.dependents[a] = append(f.dependents[a], i)
			}
			continue
		}
		// A flow's start is an event of its source NIC (docs/architecture.md §Order of simultaneous events).
		f.clockOf(fp.SrcNode).AfterFuncOrdered(fp.At, clock.DeviceOrder(fp.SrcNode), f.startAt[i])
	}
	if f.dependents != nil && f.parts == nil {
		for _, nic := range f.NICs {
			nic.SetOnComplete(f.release)
		}
	} // with parts, runParallel's completion hook releases on the part's clock (parallel.go: releaseIn)
	return f, nil
}

// clockOf, logOf and poolOf are the clock, log and packet pool of node's engine: the fabric's own,
// or its part's.
func (f *Fabric) clockOf(node int) *clock.Virtual {
	if f.parts == nil {
		return f.Clock
	}
	return f.parts[f.partOf[node]].clk
}

func (f *Fabric) logOf(node int) *records.Log {
	if f.parts == nil {
		return f.Log
	}
	return f.parts[f.partOf[node]].log
}

func (f *Fabric) poolOf(node int) *pkt.Pool {
	if f.parts == nil {
		return f.pool
	}
	return f.parts[f.partOf[node]].pool
}

// newLink makes the link from end from to end to (device dev).
func (f *Fabric) newLink(from, to topo.End, delay clock.Time, dev wired) *link {
	g := f.Lab.Graph
	var un func(*pkt.Packet, error)
	if f.parts == nil {
		un = f.unwired(g.Nodes[from.Node].Name, from.Port)
	} else {
		un = f.unwiredPart(&f.parts[f.partOf[from.Node]], g.Nodes[from.Node].Name, from.Port)
	}
	if f.parts == nil {
		return newLink(f.Clock, delay, dev, to.Node, to.Port, un, &f.CheckFrames)
	}
	pa, pb := f.partOf[from.Node], f.partOf[to.Node]
	if pa == pb {
		return newLink(f.parts[pa].clk, delay, dev, to.Node, to.Port, un, &f.CheckFrames)
	}
	// Across parts: the sender's half checks, captures and meters; the receiver's half (rx) holds the
	// frames in flight and delivers them, taking them over at each window edge (parallel.go).
	rx := newLink(f.parts[pb].clk, delay, dev, to.Node, to.Port, nil, &f.CheckFrames)
	tx := newLink(f.parts[pa].clk, delay, nil, to.Node, to.Port, un, &f.CheckFrames)
	tx.cross = &crossing{rx: rx, from: &f.parts[pa]}
	return tx
}

// maxUnwired bounds the violations recorded for frames the wire cannot carry: one bug emits such a
// frame per packet, and the first few name it; the rest are only counted.
const maxUnwired = 10

// unwired returns the callback a link out of device port uses to report a frame wire.Check refused.
// The frame is dropped, as the netns backend's encoder drops it, and the run carries a violation.
func (f *Fabric) unwired(device string, port int) func(*pkt.Packet, error) {
	return func(p *pkt.Packet, err error) {
		f.Unwired++
		if f.Unwired <= maxUnwired {
			f.Log.Violations = append(f.Log.Violations, fmt.Sprintf("%s p%d at %v: the wire cannot carry this %v frame: %v",
				device, port, f.Clock.Now(), p.Kind, err))
		} else if f.Unwired == maxUnwired+1 {
			f.Log.Violations = append(f.Log.Violations, "more frames the wire cannot carry follow; see Fabric.Unwired for the count")
		}
	}
}

// Result says how a run ended.
type Result struct {
	End       clock.Time // virtual time at the end
	Events    uint64     // clock callbacks fired
	AllDone   bool       // every flow completed
	TimedOut  bool       // stopped at the lab's End with flows outstanding
	Cancelled bool
	Deadlock  report.DeadlockVerdict // the monitor's verdict (zero without a monitor)
}

// Run advances the clock until every flow has completed (if the spec says stop when done), the lab's
// End, or ctx is cancelled (checked every few thousand events, so Ctrl-C keeps what was measured).
func (f *Fabric) Run(ctx context.Context) Result {
	if f.parts != nil {
		return f.runParallel(ctx)
	}
	total := len(f.Lab.Flows)
	stopWhenDone := f.Lab.Spec.StopWhenDone()
	end := f.Lab.End
	var res Result
	f.startMeters()
	f.Log.ChunkPauses() // flushed below: Pauses is read only after Run
	f.spillPauses()
	var watch *monitor.Watch
	if f.Monitor != nil && f.PollMonitor {
		stop := f.Monitor.Every(f.Clock, f.snapshot, func() { f.deadlocked = true },
			func() bool { return f.Clock.Pending() == 0 })
		defer stop()
	} else if f.Monitor != nil {
		watch = f.Monitor.Watch(f.Clock, f.devices(), f.prio(), func() { f.deadlocked = true },
			func() bool { return f.Clock.Live() == watch.Timers() })
		defer watch.Stop()
	}
	n := 0
	for {
		if f.deadlocked && f.StopOnDeadlock {
			break
		}
		f.collect()
		if stopWhenDone && f.done == total && f.started == total {
			res.AllDone = true
			break
		}
		if watch != nil && f.Clock.Live() == watch.Timers() {
			// Only the monitor's checks are left: the fabric is idle. The periodic monitor kept ticking
			// until the clock had discarded every stopped timer (or the end), so the run ends where it
			// would have: End and TimedOut stay what they were with the periodic monitor.
			if t := watch.NextTick(f.Clock.Horizon()); t <= end {
				f.Clock.RunUntil(t)
			} else {
				f.Clock.RunUntil(end)
				f.Clock.RunUntil(watch.NextTick(end + 1))
				res.TimedOut = true
			}
			break
		}
		if !f.Clock.Step() {
			break
		}
		if f.Clock.Now() > end {
			res.TimedOut = true
			break
		}
		if n++; n&0xFFF == 0 {
			if f.Progress != nil {
				f.Progress(f.Clock.Now(), f.done, total)
			}
			if ctx.Err() != nil {
				res.Cancelled = true
				break
			}
		}
	}
	f.collect()
	res.AllDone = f.done == total
	res.End = f.Clock.Now()
	res.Events = f.Clock.Fired()
	f.finish(&res)
	return res
}

// finish ends a run, sequential or split alike: the monitor's verdict, the engines' last records
// flushed, and the records taken unless the caller defers them.
func (f *Fabric) finish(res *Result) {
	if f.Monitor != nil {
		res.Deadlock = f.Monitor.Verdict()
	}
	for _, sw := range f.Switches {
		sw.Flush()
	}
	for _, nic := range f.NICs {
		nic.Flush()
	}
	if !f.DeferRecords {
		f.TakeRecords()()
	}
}

// TakeRecords returns the function that finishes the Log after a Run with DeferRecords: it moves the
// chunked pause records to Log.Pauses and turns the byte meters into Log.Links and Log.FlowRx, as Run
// does without DeferRecords. Call it once, after Run.
func (f *Fabric) TakeRecords() func() {
	log, meters := f.Log, f.detachMeters()
	var partLogs []*records.Log
	for i := range f.parts {
		partLogs = append(partLogs, f.parts[i].log)
	}
	return func() {
		for _, pl := range partLogs {
			// What a run's end left in the parts' logs: every record but the flows, violations and
			// reorders Run moved as they came (their order is the sequential run's), and the records
			// of the engines' Flush. The report orders per-device records by time and device.
			log.Merge(pl)
		}
		log.FlushPauses()
		if meters != nil {
			log.Links, log.FlowRx = meters.records()
			log.MeterBin = meters.width
		}
	}
}

// spillPauses hands the Log an unlinked temporary file in SpillDir for its pause records.
func (f *Fabric) spillPauses() {
	if f.SpillDir == "" {
		return
	}
	t, err := os.CreateTemp(f.SpillDir, ".pauses-*")
	if err != nil {
		return // the records stay in memory: more memory, the same outputs
	}
	if err := os.Remove(t.Name()); err != nil {
		t.Close()
		return
	}
	f.Log.SpillPauses(t)
}

// startMeters puts a byte meter on every link (unless MeterBin < 0).
func (f *Fabric) startMeters() {
	if f.MeterBin < 0 {
		return
	}
	if f.meterBin == nil {
		f.meterBin = &meterBin{width: f.MeterBin}
		if f.MeterBin == 0 {
			f.meterBin = &meterBin{width: DefaultMeterBin, adaptive: true}
		}
	}
	g := f.Lab.Graph
	for e, l := range f.links {
		if l.meter != nil {
			continue
		}
		peer := g.Peer(e.Node, e.Port)
		to := int32(-1)
		if g.Nodes[peer.Node].Kind == topo.Host {
			to = int32(g.Nodes[peer.Node].Index)
		}
		bin := f.meterBin
		if f.parts != nil {
			// Each part's meters widen their bins on their own (parallel.go: detachMeters evens them).
			p := &f.parts[f.partOf[e.Node]]
			if p.bin == nil {
				p.bin = &meterBin{width: f.meterBin.width, adaptive: f.meterBin.adaptive}
			}
			bin = p.bin
		}
		l.m = linkMeter{bin: bin, toHost: to, flows: map[uint32]int{}, lastAt: -1, pendBin: -1}
		l.meter = &l.m
		bin.meters = append(bin.meters, l.meter)
	}
}

// collect counts flows completed since the last call.
func (f *Fabric) collect() {
	for ; f.seen < len(f.Log.Flows); f.seen++ {
		if f.Log.Flows[f.seen].Completed {
			f.done++
		}
	}
}

// release starts the flows that waited only for flow id, which completed now, at their planned time or
// now, whichever is later: a harness event (docs/architecture.md §Order of simultaneous events), so
// a flow released at the instant of a completion starts after every device's events of that instant,
// on every backend.
func (f *Fabric) release(id uint32, _ clock.Time) {
	for _, i := range f.dependents[id] {
		fp := &f.Lab.Flows[i]
		if f.waiting[i]--; f.waiting[i] == 0 {
			f.Clock.AfterFuncOrdered(max(fp.At-f.Clock.Now(), 0), clock.Harness, f.startAt[i])
		}
	}
}

func (f *Fabric) devices() map[int]monitor.Device {
	devs := make(map[int]monitor.Device, len(f.Switches)+len(f.NICs))
	for n, s := range f.Switches {
		devs[n] = s
	}
	for n, nic := range f.NICs {
		devs[n] = nic
	}
	return devs
}

func (f *Fabric) prio() monitor.PrioFunc {
	g := f.Lab.Graph
	return monitor.LabPrio(f.Lab.Spec.Switch.FlowControl, func(dev int) bool { return g.Nodes[dev].Kind == topo.Host })
}

// snapshot reads every engine's egress queues for the periodic deadlock monitor.
func (f *Fabric) snapshot() monitor.Snapshot {
	return monitor.Sample(f.Clock.Now(), f.devices(), f.prio())
}
