package fc

import (
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

func init() { Register("pfc", Mode{New: NewPFC, Ingress: true}) }

// quantumBits is the 802.1Qbb pause quantum: the time to send 512 bits at the port's rate.
const quantumBits = 512

// PFC is IEEE 802.1Qbb priority flow control. Detection is per ingress (port, priority) group, through
// the MMU's XOFF/XON and headroom accounting; a pause asks the upstream device to stop that priority for
// Quanta and is refreshed while the group stays above XON; a resume is a pause with quanta 0. On receipt
// the egress queue of the priority is paused until a resume or until the quanta run out.
//
// Exported so PFC* can embed it and replace only Classify.
type PFC struct {
	dev    Device
	prios  int
	quanta uint16
	tx     []pgTx // [port*prios+prio]: pauses this switch sent
	rx     []pgRx // [port*prios+prio]: pauses this switch obeys
}

// The timers' callbacks are made when a group first pauses: most groups never do (clock.HeldTimer). A
// group re-arms its timer for every pause it sends or obeys.
type pgTx struct {
	paused  bool
	period  clock.Time
	refresh clock.HeldTimer
}

type pgRx struct {
	paused bool
	expire clock.HeldTimer
}

// NewPFC is the "pfc" Factory.
func NewPFC(dev Device, cfg Config) (Module, error) { return newPFC(dev, cfg) }

func newPFC(dev Device, cfg Config) (*PFC, error) {
	f := &PFC{dev: dev, prios: dev.Prios(), quanta: cfg.PauseQuanta}
	if f.quanta == 0 {
		f.quanta = 0xFFFF
	}
	n := dev.NumPorts() * f.prios
	f.tx = make([]pgTx, n)
	f.rx = make([]pgRx, n)
	for port := 0; port < dev.NumPorts(); port++ {
		pause := f.pauseTime(port, f.quanta)
		period := cfg.Refresh
		if period == 0 {
			period = pause / 2
		}
		if period <= 0 || period >= pause {
			return nil, fmt.Errorf("flow_control.refresh: %v must be positive and shorter than the pause time %v on port %d", period, pause, port)
		}
		for prio := 0; prio < f.prios; prio++ {
			f.tx[port*f.prios+prio].period = period
		}
	}
	return f, nil
}

func (f *PFC) pauseTime(port int, quanta uint16) clock.Time {
	return clock.Time(float64(quanta) * quantumBits * float64(clock.Second) / f.dev.Port(port).Rate())
}

// Classify puts each priority in its own queue; lossless priorities get ingress accounting.
func (f *PFC) Classify(_ int, p *pkt.Packet) (int, Class) {
	q := PrioQueue(f.dev, p)
	if f.dev.Lossless(min(int(p.Prio), f.prios-1)) {
		return q, LosslessIngress
	}
	return q, Lossy
}

// Enqueued sends a pause when the frame's ingress group crossed XOFF or entered headroom.
func (f *PFC) Enqueued(at Loc, _ *pkt.Packet) {
	if at.Class != LosslessIngress {
		return
	}
	t := &f.tx[at.In*f.prios+at.InPrio]
	if !t.paused && f.dev.MMU().ShouldPause(at.In, at.InPrio) {
		t.paused = true
		f.send(at.In, at.InPrio, f.quanta, true)
		if !t.refresh.HasFunc() {
			port, prio := at.In, at.InPrio
			t.refresh.SetFunc(func() { f.refreshFire(port, prio) })
		}
		t.refresh.Arm(f.dev.Clock(), t.period)
	}
}

// Dequeued sends a resume when the frame's ingress group drained below XON.
func (f *PFC) Dequeued(at Loc, _ *pkt.Packet) {
	if at.Class != LosslessIngress {
		return
	}
	t := &f.tx[at.In*f.prios+at.InPrio]
	if t.paused && f.dev.MMU().ShouldResume(at.In, at.InPrio) {
		t.paused = false
		t.refresh.Stop()
		f.send(at.In, at.InPrio, 0, true)
	}
}

func (f *PFC) refreshFire(port, prio int) {
	t := &f.tx[port*f.prios+prio]
	if !t.paused {
		return
	}
	f.send(port, prio, f.quanta, false)
	t.refresh.Arm(f.dev.Clock(), t.period)
}

func (f *PFC) send(port, prio int, quanta uint16, change bool) {
	fr := f.dev.Frame(pkt.Packet{Kind: pkt.PFC, Size: pkt.MinFrame, Src: -1, Dst: -1, Prio: uint8(prio), PauseMask: 1 << uint(prio)})
	fr.PauseQuanta[prio] = quanta
	f.dev.SendControl(port, fr)
	f.dev.Note(port, prio, quanta > 0, true, change, 0)
}

// Receive pauses or resumes the egress queue of every priority the frame enables.
func (f *PFC) Receive(in int, p *pkt.Packet) {
	if p.Kind != pkt.PFC {
		return
	}
	for prio := 0; prio < 8; prio++ {
		if p.PauseMask&(1<<uint(prio)) == 0 {
			continue
		}
		c := prio
		if c >= f.prios {
			c = f.prios - 1
		}
		r := &f.rx[in*f.prios+c]
		q := QueueOf(f.dev, c)
		quanta := p.PauseQuanta[prio]
		if quanta > 0 {
			change := !r.paused
			r.paused = true
			f.dev.Port(in).Pause(q, true)
			if !r.expire.HasFunc() {
				port, prio := in, c
				r.expire.SetFunc(func() { f.expireFire(port, prio) })
			}
			r.expire.Arm(f.dev.Clock(), f.pauseTime(in, quanta)) // replaces the running one
			f.dev.Note(in, c, true, false, change, 0)
			continue
		}
		r.expire.Stop()
		change := r.paused
		r.paused = false
		f.dev.Port(in).Pause(q, false)
		f.dev.Note(in, c, false, false, change, 0)
	}
}

func (f *PFC) expireFire(port, prio int) {
	r := &f.rx[port*f.prios+prio]
	if !r.paused {
		return
	}
	r.paused = false
	f.dev.Port(port).Pause(QueueOf(f.dev, prio), false)
	// An expiry is a resume nobody sent: record it as received so pause intervals close in pfc.txt.
	f.dev.Note(port, prio, false, false, true, 0)
}

// Paused reports whether this switch has paused (port, prio)'s upstream, and whether it is itself paused
// on that port and priority by its downstream.
func (f *PFC) Paused(port, prio int) (sent, received bool) {
	return f.tx[port*f.prios+prio].paused, f.rx[port*f.prios+prio].paused
}
