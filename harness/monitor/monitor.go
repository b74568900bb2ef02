// Package monitor is the run-time deadlock detector both backends share (docs/architecture.md §Deadlock): it
// is fed periodic snapshots of every egress queue and looks for a wait-for cycle of queues that are paused,
// hold data, and have sent nothing for a stated time. Such a cycle never resolves on its own — every queue on
// it waits for the next to drain, and none can — so the verdict is final and a run may stop there.
//
// Wait-for edges. A queue q1 at device D1 leaving by port p1 is paused only by the device at the far end
// of p1, D2 (a PFC or PortFC frame that D2 sent). D2 pauses q1 because frames from D1 pile up in D2's own
// egress queues; so q1 waits on the stalled queues q2 of D2 that leave by any port other than the one back
// to D1 (a frame never turns back on the link it came in on), and whose priority could hold q1's frames:
// under PFC the same priority, under PFC* the same or a higher one (the tag only rises), and under PortFC
// any queue (QueueState.Prio = -1: queue indices there are not priorities, and the pause relay makes an
// IHFQ wait on a DDQ two hops on, whose relay is never paused). The rule can only add edges between queues
// that are all stalled, so a reported cycle is a set of queues none of which has moved for Stall.
package monitor

import (
	"fmt"
	"sort"

	"gonum.org/v1/gonum/graph/simple"
	gtopo "gonum.org/v1/gonum/graph/topo"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/report"
)

// Defaults, in paper (engine at dilation 1) time.
const (
	// DefaultStall is how long a paused, non-empty queue must have sent nothing to count as stalled:
	// 1 ms = 1000 link delays of the PortFC setup (1 us links), about 3 longest legitimate pauses (a
	// single 802.1Qbb pause of 0xFFFF quanta holds a 100 Gb/s port for 335.5 us, and a refreshed pause
	// lasts only while the downstream queue stays above XON, which a live fabric drains in microseconds),
	// and 80,000 MTU serialization times at 100 Gb/s. Runs last 10-20 ms, so detection still leaves most
	// of the run to show the throughput collapse.
	DefaultStall = clock.Millisecond
	// DefaultInterval is the snapshot period: 50 us bounds detection latency to Stall + 50 us at a cost of
	// one pass over the queues per period.
	DefaultInterval = 50 * clock.Microsecond
)

// Config tunes a Monitor. Zero fields take the defaults; times are engine time (multiply paper time by
// the dilation on the netns backend).
type Config struct {
	Stall    clock.Time
	Interval clock.Time
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Stall <= 0 {
		c.Stall = DefaultStall
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	return c
}

// Dilated scales the defaults (paper time) to an engine running at dilation d.
func Dilated(d float64) Config {
	if d <= 0 {
		d = 1
	}
	return Config{Stall: clock.Time(float64(DefaultStall) * d), Interval: clock.Time(float64(DefaultInterval) * d)}
}

// QueueState is one egress queue in a snapshot.
type QueueState struct {
	Device, Port, Queue int // graph node index, port, queue index at the device
	// Prio is the priority the queue's frames travel under, or -1 when queues are not per priority
	// (PortFC). It refines the wait-for edges (package comment).
	Prio     int
	Bytes    int
	Paused   bool
	Dequeued uint64 // frames that ever left the queue; a change means it moved
}

// Snapshot is every egress queue of the fabric at one instant.
type Snapshot struct {
	At     clock.Time
	Queues []QueueState
}

type qkey struct{ dev, port, q int }

type history struct {
	deq   uint64
	since clock.Time // when deq last changed (or the queue was first seen)
}

// Monitor watches snapshots for a deadlock. It is not safe for concurrent use.
type Monitor struct {
	g       *topo.Graph
	cfg     Config
	hist    map[qkey]*history
	verdict report.DeadlockVerdict
	seen    int
}

// New watches a fabric with topology g.
func New(g *topo.Graph, cfg Config) *Monitor {
	return &Monitor{g: g, cfg: cfg.WithDefaults(), hist: map[qkey]*history{}}
}

// Config is the monitor's resolved configuration.
func (m *Monitor) Config() Config { return m.cfg }

// Detected reports whether a deadlock has been found.
func (m *Monitor) Detected() bool { return m.verdict.Detected }

// Verdict is the finding so far: the first cycle found, with the snapshot time it was found at.
func (m *Monitor) Verdict() report.DeadlockVerdict { return m.verdict }

// Snapshots counts the snapshots observed.
func (m *Monitor) Snapshots() int { return m.seen }

// Name spells a queue as the static analysis does: "s0:p1:q3".
func (m *Monitor) Name(q QueueState) string {
	dev := fmt.Sprintf("n%d", q.Device)
	if m.g != nil && q.Device >= 0 && q.Device < len(m.g.Nodes) {
		dev = m.g.Nodes[q.Device].Name
	}
	return fmt.Sprintf("%s:p%d:q%d", dev, q.Port, q.Queue)
}

// Observe takes one snapshot and reports whether it completes a deadlock. After the first detection
// the verdict is kept and later snapshots are only counted.
func (m *Monitor) Observe(s Snapshot) bool {
	m.seen++
	if m.verdict.Detected {
		return true
	}
	var stalled []QueueState
	for _, q := range s.Queues {
		k := qkey{q.Device, q.Port, q.Queue}
		h := m.hist[k]
		if h == nil {
			h = &history{deq: q.Dequeued, since: s.At}
			m.hist[k] = h
		} else if q.Dequeued != h.deq {
			h.deq, h.since = q.Dequeued, s.At
		}
		if q.Paused && q.Bytes > 0 && s.At-h.since >= m.cfg.Stall {
			stalled = append(stalled, q)
		}
	}
	if len(stalled) < 2 {
		return false
	}
	cycle := m.findCycle(stalled)
	if cycle == nil {
		return false
	}
	names := make([]string, len(cycle))
	for i, q := range cycle {
		names[i] = m.Name(q)
	}
	m.verdict = report.DeadlockVerdict{Detected: true, Cycle: names, At: s.At}
	return true
}

// findCycle builds the wait-for graph among stalled queues and returns one cycle, starting at its
// smallest queue, or nil.
func (m *Monitor) findCycle(st []QueueState) []QueueState {
	sort.Slice(st, func(i, j int) bool {
		a, b := st[i], st[j]
		if a.Device != b.Device {
			return a.Device < b.Device
		}
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		return a.Queue < b.Queue
	})
	byDev := map[int][]int{}
	for i, q := range st {
		byDev[q.Device] = append(byDev[q.Device], i)
	}
	succ := make([][]int, len(st))
	dg := simple.NewDirectedGraph()
	for i := range st {
		dg.AddNode(simple.Node(int64(i)))
	}
	for i, q1 := range st {
		if m.g == nil || q1.Device >= len(m.g.Nodes) || q1.Port >= len(m.g.Nodes[q1.Device].Ports) {
			continue
		}
		peer := m.g.Peer(q1.Device, q1.Port)
		for _, j := range byDev[peer.Node] {
			q2 := st[j]
			if q2.Port == peer.Port || !mayHold(q1, q2) {
				continue
			}
			succ[i] = append(succ[i], j)
			dg.SetEdge(simple.Edge{F: simple.Node(int64(i)), T: simple.Node(int64(j))})
		}
	}
	for _, scc := range gtopo.TarjanSCC(dg) {
		if len(scc) < 2 {
			continue
		}
		in := map[int]bool{}
		least := int(scc[0].ID())
		for _, n := range scc {
			in[int(n.ID())] = true
			least = min(least, int(n.ID()))
		}
		if c := shortestCycle(succ, in, least); c != nil {
			out := make([]QueueState, len(c))
			for i, v := range c {
				out[i] = st[v]
			}
			return out
		}
	}
	return nil
}

// mayHold says whether q2 can hold frames that q1 feeds (package comment).
func mayHold(q1, q2 QueueState) bool {
	return q1.Prio < 0 || q2.Prio < 0 || q2.Prio >= q1.Prio
}

// shortestCycle is a breadth-first search from start back to itself inside one strongly connected
// component: the tightest cycle through start, which names the fewest queues.
func shortestCycle(succ [][]int, in map[int]bool, start int) []int {
	prev := map[int]int{start: -1}
	queue := []int{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range succ[v] {
			if !in[w] {
				continue
			}
			if w == start {
				var c []int
				for x := v; x != -1; x = prev[x] {
					c = append(c, x)
				}
				for i, j := 0, len(c)-1; i < j; i, j = i+1, j-1 {
					c[i], c[j] = c[j], c[i]
				}
				return c
			}
			if _, ok := prev[w]; !ok {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return nil
}
