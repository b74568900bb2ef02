package monitor

import (
	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
)

// Device is what the monitor reads from an engine: its egress ports. switchsw.Switch and nodes.NIC both
// are one.
type Device interface {
	NumPorts() int
	Port(i int) *egress.Port
}

// PrioFunc gives the priority of queue q of device dev's port, or -1 when queues are not per priority.
// Return -2 to leave a queue out of snapshots (a control queue: never paused, carries no data).
type PrioFunc func(dev, port, q int) int

// Skip is the PrioFunc result that leaves a queue out.
const Skip = -2

// Sample snapshots every queue of devs (by graph node index) at time at.
func Sample(at clock.Time, devs map[int]Device, prio PrioFunc) Snapshot {
	s := Snapshot{At: at}
	for dev, d := range devs {
		for p := 0; p < d.NumPorts(); p++ {
			port := d.Port(p)
			for q := 0; q < port.NumQueues(); q++ {
				pr := -1
				if prio != nil {
					if pr = prio(dev, p, q); pr == Skip {
						continue
					}
				}
				st := port.Stats(q)
				s.Queues = append(s.Queues, QueueState{Device: dev, Port: p, Queue: q, Prio: pr,
					Bytes: st.Bytes, Paused: st.Paused, Dequeued: st.Dequeued})
			}
		}
	}
	return s
}

// Every runs sample and Observe every m's Interval on clk, and calls onDetect once when a deadlock is
// found (the virtual backend stops there). The returned stop cancels the schedule; it also stops by
// itself after detection, and when idle (may be nil) reports true after a snapshot: on a virtual clock
// with nothing else scheduled the fabric has gone quiet, and a monitor that kept ticking would keep an
// idle run going until its end time.
func (m *Monitor) Every(clk clock.Clock, sample func() Snapshot, onDetect func(), idle func() bool) (stop func()) {
	var t clock.Timer
	stopped := false
	var tick func()
	tick = func() {
		if stopped {
			return
		}
		if m.Observe(sample()) {
			stopped = true
			if onDetect != nil {
				onDetect()
			}
			return
		}
		if idle != nil && idle() {
			return
		}
		t = clk.AfterFunc(m.cfg.Interval, tick)
	}
	t = clk.AfterFunc(m.cfg.Interval, tick)
	return func() {
		stopped = true
		if t != nil {
			t.Stop()
		}
	}
}

// LabPrio is the PrioFunc for the engines a lab configures under flow-control mode mode: switches keep
// one data queue per priority (fc.PrioQueue) under lossy, pfc and pfcstar; NICs use nodes.PrioLayout
// (0-7 local by priority, 8-15 relayed by priority, 16 control). PortFC queues are not priorities.
// isHost says whether a graph node is a host.
func LabPrio(mode string, isHost func(dev int) bool) PrioFunc {
	if mode == "portfc" {
		return func(int, int, int) int { return -1 }
	}
	return func(dev, _, q int) int {
		if !isHost(dev) {
			return q
		}
		switch {
		case q < 8:
			return q
		case q < 16:
			return q - 8
		}
		return Skip
	}
}
