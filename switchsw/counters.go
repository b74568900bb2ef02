package switchsw

import (
	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/records"
)

// QueueCounters are one egress queue's totals.
type QueueCounters struct {
	Enqueued, Dequeued           uint64
	EnqueuedBytes, DequeuedBytes uint64
	Dropped, Marked              uint64
	MaxBytes                     int // deepest the queue has been
	Bytes                        int // now
	Paused                       bool
}

// PortCounters are one port's totals. Pauses count frames that paused (or, received, newly paused) a
// queue; Refreshes count pause frames that only extended a pause; Resumes received include pauses that
// expired without a resume.
type PortCounters struct {
	// Queues holds the data queues, then the flow-control frame queue, then the control queue.
	Queues                                       []QueueCounters
	PausesSent, ResumesSent, RefreshesSent       uint64
	PausesReceived, ResumesReceived, RefreshesRx uint64
	MaxBytes                                     int64 // most data bytes queued on the port at once
	SentBytes                                    uint64
	BusyTime                                     clock.Time
}

// Counters are the switch's totals.
type Counters struct {
	Device        int32
	Ports         []PortCounters
	RxFrames      uint64
	Dropped       uint64 // all drops, including no-route
	LosslessDrops uint64 // drops from lossless classes: violations
	NoRoute       uint64
	Marked        uint64 // ECN CE marks applied
}

// Counters returns a snapshot of the switch's counters.
func (s *Switch) Counters() Counters {
	c := Counters{Device: s.cfg.Device, RxFrames: s.rx, Dropped: s.drops, LosslessDrops: s.losslessDrops,
		NoRoute: s.noRoute, Marked: s.marked, Ports: make([]PortCounters, len(s.ports))}
	for i, port := range s.ports {
		pc := &s.pc[i]
		out := PortCounters{PausesSent: pc.pausesSent, ResumesSent: pc.resumesSent, RefreshesSent: pc.refreshesSent,
			PausesReceived: pc.pausesRecv, ResumesReceived: pc.resumesRecv, RefreshesRx: pc.refreshesRecv,
			MaxBytes: pc.maxBytes, SentBytes: port.SentBytes(), BusyTime: port.BusyTime(),
			Queues: make([]QueueCounters, s.nall)}
		for q := 0; q < s.nall; q++ {
			st := port.Stats(q)
			qc := s.qc[i*s.nall+q]
			out.Queues[q] = QueueCounters{Enqueued: st.Enqueued, Dequeued: st.Dequeued, EnqueuedBytes: st.EnqueuedBytes,
				DequeuedBytes: st.DequeuedBytes, Dropped: qc.dropped, Marked: qc.marked, MaxBytes: st.MaxBytes,
				Bytes: st.Bytes, Paused: st.Paused}
		}
		c.Ports[i] = out
	}
	return c
}

// Flush appends the switch's totals to its log as records.Counters. Call it once, at the end of a run.
func (s *Switch) Flush() {
	rc := records.Counters{Device: s.cfg.Device, ECNMarked: s.marked, RxFrames: s.rx, MaxQueue: make([]int, len(s.ports))}
	for i, port := range s.ports {
		for q := 0; q < s.nall; q++ {
			rc.TxFrames += port.Stats(q).Dequeued
		}
		rc.MaxQueue[i] = int(s.pc[i].maxBytes)
	}
	s.log.Counters = append(s.log.Counters, rc)
}
