package egress

import (
	"fmt"
	"math/rand/v2"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

// Fault impairs a link where frames leave a port: down drops every frame, Loss drops each with that
// probability, Delay adds to the link's propagation delay. It is how a live lab (`lab link`) and a
// spec's `faults:` fail links on both backends, in the engine, since a veth has no netem here.
type Fault struct {
	Down  bool       `json:"down,omitempty"`
	Loss  float64    `json:"loss,omitempty"`  // 0..1
	Delay clock.Time `json:"delay,omitempty"` // extra one-way delay
}

// None reports whether f changes nothing.
func (f Fault) None() bool { return !f.Down && f.Loss == 0 && f.Delay == 0 }

// Check refuses a loss outside 0..1 or a negative delay.
func (f Fault) Check() error {
	if !(f.Loss >= 0 && f.Loss <= 1) {
		return fmt.Errorf("loss %v is not a fraction in 0..1", f.Loss)
	}
	if f.Delay < 0 {
		return fmt.Errorf("delay %v is negative", f.Delay)
	}
	return nil
}

func (f Fault) String() string {
	if f.Down {
		return "down"
	}
	if f.None() {
		return "up"
	}
	return fmt.Sprintf("loss=%g%% delay=%v", 100*f.Loss, f.Delay)
}

// FaultLink is the Link a port transmits onto while it has a fault: it wraps the port's own link. A
// port without a fault has its own link back, so no check sits on the path of an unimpaired frame.
type FaultLink struct {
	Next  Link
	Fault Fault
	// Down and Lost count frames dropped because the link was down or by the loss draw.
	Down, Lost uint64
	clk        clock.Clock
	rng        *rand.Rand
	onDrop     func(p *pkt.Packet, reason string)
}

// Send drops, delays or passes the frame.
func (l *FaultLink) Send(p *pkt.Packet) {
	switch {
	case l.Fault.Down:
		l.Down++
		if l.onDrop != nil {
			l.onDrop(p, "link-down")
		}
		return
	case l.Fault.Loss > 0 && l.rng.Float64() < l.Fault.Loss:
		l.Lost++
		if l.onDrop != nil {
			l.onDrop(p, "link-loss")
		}
		return
	case l.Fault.Delay > 0:
		next := l.Next
		l.clk.AfterFunc(l.Fault.Delay, func() { next.Send(p) })
		return
	}
	l.Next.Send(p)
}

// Link returns the link the port transmits onto (a FaultLink while it has a fault).
func (p *Port) Link() Link { return p.link }

// SetFault sets the port's link fault: the zero Fault removes it and gives the port its own link back.
// seed seeds the loss draws; onDrop, if set, hears every frame the fault drops. It returns the
// FaultLink now in place (nil when none), whose counters keep counting across later changes.
func (p *Port) SetFault(f Fault, seed uint64, onDrop func(*pkt.Packet, string)) *FaultLink {
	fl, ok := p.link.(*FaultLink)
	if f.None() {
		if ok {
			p.link = fl.Next
		}
		return nil
	}
	if !ok {
		fl = &FaultLink{Next: p.link, clk: p.clk, rng: rand.New(rand.NewPCG(seed, 0x6c696e6b)), onDrop: onDrop}
		p.link = fl
	}
	fl.Fault = f
	return fl
}

// NewFaultLink wraps next, for an engine whose ports are not reachable (a NIC): the backend installs it
// with SetLink while the fault lasts and puts next back after.
func NewFaultLink(next Link, clk clock.Clock, f Fault, seed uint64, onDrop func(*pkt.Packet, string)) *FaultLink {
	return &FaultLink{Next: next, Fault: f, clk: clk, rng: rand.New(rand.NewPCG(seed, 0x6c696e6b)), onDrop: onDrop}
}
