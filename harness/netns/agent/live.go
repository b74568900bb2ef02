package agent

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/switchsw"
	"github.com/fabriclab/fabriclab/wire"
)

// Live requests (lockstep.LiveMsg) reach the agent on its control reader goroutine; the loop runs them
// between iterations, on its own thread, as it runs every engine call.
type liveQueue struct {
	mu      sync.Mutex
	reqs    []*lockstep.LiveMsg
	pending atomic.Bool
	reply   func(*lockstep.LiveMsg)
	// dropsSeen is how much of the log's drops the counters below have taken in.
	dropsSeen int
	drops     map[[2]int]map[string]uint64 // (node, port) -> reason -> frames
	// flushing: a timer flushes the open captures every CaptureFlush, so what a port sends reaches its
	// file (and a capture over machines, which reads that file as it grows) within that time.
	flushing bool
}

// CaptureFlush is how often a live capture's buffered frames are written to its file.
const CaptureFlush = 200 * clock.Millisecond

func (a *agent) liveRequest(m *lockstep.LiveMsg) {
	a.live.mu.Lock()
	a.live.reqs = append(a.live.reqs, m)
	a.live.pending.Store(true)
	a.live.mu.Unlock()
	a.wake.signal() // always: the loop may have read it while catching up, and runs it after its wait
}

// runLive answers the live requests waiting (called by the loop; a single atomic load when none is).
func (a *agent) runLive() {
	if !a.live.pending.Load() {
		return
	}
	a.live.mu.Lock()
	reqs := a.live.reqs
	a.live.reqs = nil
	a.live.pending.Store(false)
	a.live.mu.Unlock()
	for _, r := range reqs {
		out := a.liveDo(r)
		out.Op, out.Now, out.ID = r.Op, a.clk.Now(), r.ID
		if a.live.reply != nil {
			a.live.reply(out)
		}
	}
}

func (a *agent) liveDevice(name string) (*device, error) {
	for _, d := range a.devs {
		if d.name == name {
			return d, nil
		}
	}
	return nil, fmt.Errorf("no device %q in this agent", name)
}

func (a *agent) liveDo(r *lockstep.LiveMsg) *lockstep.LiveMsg {
	fail := func(err error) *lockstep.LiveMsg { return &lockstep.LiveMsg{Err: err.Error()} }
	switch r.Op {
	case "inspect":
		return &lockstep.LiveMsg{Devices: a.liveCounters(), Datapath: a.datapathName(), KernelFull: a.fid.KernelFull}
	case "fault", "fib", "capture":
	default:
		return fail(fmt.Errorf("unknown live op %q", r.Op))
	}
	d, err := a.liveDevice(r.Device)
	if err != nil {
		return fail(err)
	}
	if r.Op != "fib" && (r.Port < 0 || r.Port >= len(d.ports)) {
		return fail(fmt.Errorf("%s has ports p0..p%d", d.name, len(d.ports)-1))
	}
	switch r.Op {
	case "fault":
		sw, ok := d.eng.(*switchsw.Switch)
		if !ok || r.Fault == nil {
			return fail(fmt.Errorf("%s: link faults are applied by switches", d.name))
		}
		if err := r.Fault.Check(); err != nil {
			return fail(err)
		}
		sw.SetFault(r.Port, *r.Fault)
		// The other direction: a kernel host's frames are not ours to fail where they leave, so the
		// switch fails them where they arrive (peer switches get their own request).
		p := d.ports[r.Port]
		p.inFault = nil
		if !r.Fault.None() {
			f := *r.Fault
			p.inFault = &f
		}
	case "fib":
		sw, ok := d.eng.(*switchsw.Switch)
		if !ok {
			return fail(fmt.Errorf("%s is not a switch", d.name))
		}
		if err := sw.SetFIB(r.FIB); err != nil {
			return fail(err)
		}
	case "capture":
		p := d.ports[r.Port]
		if p.pcap != nil {
			// The pcap writer's error is sticky: a write that failed at any time (a full disk,
			// /dev/full) fails the flush, and the capture's stop says so (lab capture exits 1).
			err := p.pcap.Flush()
			if serr := p.pfile.Sync(); err == nil && serr != nil && !errors.Is(serr, syscall.EINVAL) {
				err = serr
			}
			if cerr := p.pfile.Close(); err == nil {
				err = cerr
			}
			path := p.capPath
			p.pcap, p.pfile, p.capPath = nil, nil, ""
			if err != nil {
				return fail(fmt.Errorf("capture %s: %w", path, err))
			}
		}
		if r.Path == "" {
			return &lockstep.LiveMsg{}
		}
		// A new file only: a capture never replaces a file it did not create, nor writes through a
		// symbolic link (lab capture checks first, for a clear message; this holds if one appears since).
		f, err := os.OpenFile(r.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
		if err != nil {
			return fail(err)
		}
		w, err := wire.NewPcapWriter(f, 0)
		if err != nil {
			f.Close()
			return fail(err)
		}
		// Stamped like a run's captures: the wall time of the agent's time 0 plus engine time.
		w.Base = time.Now().Add(-a.clk.Wall().Duration())
		p.pcap, p.pfile, p.capPath = w, f, r.Path
		a.armCaptureFlush()
	}
	return &lockstep.LiveMsg{}
}

// armCaptureFlush starts the flush timer unless it runs; it stops once no capture is open.
func (a *agent) armCaptureFlush() {
	if a.live.flushing {
		return
	}
	a.live.flushing = true
	a.clk.AfterFunc(CaptureFlush, func() {
		a.live.flushing = false
		open := false
		for _, p := range a.ports {
			if p.pcap != nil && p.capPath != "" {
				p.pcap.Flush()
				open = true
			}
		}
		if open {
			a.armCaptureFlush()
		}
	})
}

// liveCounters reads every device's counters now.
func (a *agent) liveCounters() []lockstep.LiveDevice {
	lq := &a.live
	if lq.drops == nil {
		lq.drops = map[[2]int]map[string]uint64{}
	}
	for ; lq.dropsSeen < len(a.log.Drops); lq.dropsSeen++ {
		d := a.log.Drops[lq.dropsSeen]
		k := [2]int{int(d.Device), int(d.Port)}
		if lq.drops[k] == nil {
			lq.drops[k] = map[string]uint64{}
		}
		lq.drops[k][d.Reason]++
	}
	var out []lockstep.LiveDevice
	for _, d := range a.devs {
		ld := lockstep.LiveDevice{Name: d.name, Kind: "host"}
		var sc *switchsw.Counters
		if sw, ok := d.eng.(*switchsw.Switch); ok {
			c := sw.Counters()
			sc = &c
			ld.Kind, ld.RxFrames, ld.Drops, ld.Marked = "switch", c.RxFrames, c.Dropped, c.Marked
		}
		for i, p := range d.ports {
			lp := lockstep.LivePort{Port: i, Peer: fmt.Sprintf("node%d:p%d", p.cfg.PeerNode, p.cfg.PeerPort),
				RxFrames: p.rxFrames, RxBytes: p.rxBytes, Drops: lq.drops[[2]int{d.node, i}], Malformed: p.malformed}
			if sc != nil {
				pc := sc.Ports[i]
				lp.TxBytes, lp.PausesSent, lp.PausesRecv, lp.QueuePeak = pc.SentBytes, pc.PausesSent, pc.PausesReceived, pc.MaxBytes
				for q, qc := range pc.Queues {
					lp.TxFrames += qc.Dequeued
					lp.ECNMarked += qc.Marked
					if q < len(pc.Queues)-2 {
						lp.QueueBytes += qc.Bytes
					}
				}
				if _, _, f := d.eng.(*switchsw.Switch).FaultCounters(i); !f.None() {
					lp.Fault = f.String()
				}
			}
			if p.pcap != nil {
				lp.Capture = p.capPath
			}
			ld.Ports = append(ld.Ports, lp)
		}
		out = append(out, ld)
	}
	return out
}

// scheduleFaults arms the spec's cable faults (setup.Faults) on the agent clock.
func (a *agent) scheduleFaults() {
	byNode := map[int]*device{}
	for _, d := range a.devs {
		byNode[d.node] = d
	}
	for _, f := range a.setup.Faults {
		a.clk.AfterFunc(f.At, func() {
			for i, e := range f.Ends {
				d := byNode[e[0]]
				if d == nil || e[1] >= len(d.ports) {
					continue
				}
				p := d.ports[e[1]]
				if sw, ok := d.eng.(*switchsw.Switch); ok {
					sw.SetFault(e[1], f.Fault)
				} else if fl, ok := p.faultLink(); ok || !f.Fault.None() {
					// A NIC: a FaultLink in front of the port's link while the fault lasts.
					if f.Fault.None() {
						d.eng.SetLink(e[1], p.link)
						p.nicFault = nil
					} else if ok {
						fl.Fault = f.Fault
					} else {
						node, port := int32(d.node), int16(e[1])
						p.nicFault = egress.NewFaultLink(p.link, a.clk, f.Fault, uint64(e[0])<<8|uint64(i), func(pk *pkt.Packet, reason string) {
							a.log.Drops = append(a.log.Drops, records.Drop{At: a.eclk.Now(), Device: node, Port: port, Queue: pk.Queue, Flow: pk.Flow, Reason: reason})
						})
						d.eng.SetLink(e[1], p.nicFault)
					}
				}
				p.inFault = nil
				if f.Fault.Down {
					ff := f.Fault
					p.inFault = &ff
				}
			}
			for node, table := range f.FIB {
				if d := byNode[node]; d != nil {
					if sw, ok := d.eng.(*switchsw.Switch); ok {
						// The lab computed the table for this switch's ports, so a refusal is a lab bug.
						if err := sw.SetFIB(table); err != nil {
							a.violation(fmt.Sprintf("fault %s: %v", f.Name, err))
						}
					}
				}
			}
			if f.Log {
				a.log.Faults = append(a.log.Faults, records.FaultEvent{At: a.eclk.Now(), Link: f.Name, State: f.Fault.String(), Reroutes: len(f.FIB)})
			}
		})
	}
}

func (p *port) faultLink() (*egress.FaultLink, bool) { return p.nicFault, p.nicFault != nil }
