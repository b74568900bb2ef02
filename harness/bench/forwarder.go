// Package bench measures the netns substrate: frames per second through one Go switch (the switchsw
// engine on AF_PACKET ports) against a Linux bridge on the same veths, and kernel-TCP goodput through
// the Go switches. It also holds Forwarder, the smallest real-time host for switch engines (one loop
// goroutine, every switch of a lab, frames in and out through netns.PacketPort), which `lab bench`
// and the kernel suite use to put Go switches between kernel-stack hosts without the agent machinery.
package bench

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/switchsw"
	"github.com/fabriclab/fabriclab/wire"
	"golang.org/x/sys/unix"
)

// Switch is one switch engine to host: its (already dilated) config and its ports' interfaces.
type Switch struct {
	Name    string
	NSPath  string
	Ifnames []string // port i's interface; default p<i>
	Config  switchsw.Config
}

// ForwarderStats is what a forwarder did.
type ForwarderStats struct {
	Rx, Tx     uint64 // frames read from and written to the ports
	Malformed  uint64 // frames wire.Decode refused (dropped, counted)
	SendErrors uint64 // frames the kernel would not take
	Marked     uint64 // CE marks the switches applied (from their logs' counters)
	Lag        clock.LagStats
	Log        *records.Log
	CPU        time.Duration // the loop thread's CPU (user + system), sends and the kernel work they do included
}

// Forwarder runs switch engines on a real clock in one goroutine locked to its OS thread: every
// Receive, timer and transmit of every switch happens there, which is the engines' threading contract.
type Forwarder struct {
	clk   *clock.Real
	sws   []*switchsw.Switch
	ports []*netns.PacketPort
	owner []int // port -> switch
	local []int // port -> port index at its switch
	txq   [][][]byte
	log   *records.Log

	rx, tx, malformed, sendErr atomic.Uint64
	cpu                        time.Duration // set by the loop as it exits
	stop                       chan struct{}
	done                       chan error
	once                       sync.Once
}

// StartForwarder opens every port inside its switch's namespace, builds the engines and starts the loop.
// mtu sizes receive buffers.
func StartForwarder(sws []Switch, mtu int) (*Forwarder, error) {
	f := &Forwarder{clk: clock.NewReal(clock.MonotonicNanos()), log: &records.Log{},
		stop: make(chan struct{}), done: make(chan error, 1)}
	fail := func(err error) (*Forwarder, error) {
		for _, p := range f.ports {
			p.Close()
		}
		return nil, err
	}
	for si, s := range sws {
		links := make([]egress.Link, len(s.Config.Ports))
		for i := range s.Config.Ports {
			ifn := netns.PortName(i)
			if i < len(s.Ifnames) && s.Ifnames[i] != "" {
				ifn = s.Ifnames[i]
			}
			p, err := netns.OpenPacketPort(s.NSPath, ifn, mtu)
			if err != nil {
				return fail(fmt.Errorf("switch %s: %w", s.Name, err))
			}
			gi := len(f.ports)
			f.ports = append(f.ports, p)
			f.owner = append(f.owner, si)
			f.local = append(f.local, i)
			f.txq = append(f.txq, nil)
			delay := s.Config.Ports[i].Delay
			links[i] = egress.LinkFunc(func(pk *pkt.Packet) { f.transmit(gi, pk, delay) })
		}
		sw, err := switchsw.New(s.Config, f.clk, links, f.log)
		if err != nil {
			return fail(fmt.Errorf("switch %s: %w", s.Name, err))
		}
		f.sws = append(f.sws, sw)
	}
	go f.loop()
	return f, nil
}

// transmit encodes a frame leaving port gi; the link's propagation delay is applied here, at the
// sender, by holding the frame on the clock (docs/architecture.md §Engines see a clock and links: the link
// model lives at the sender's egress).
func (f *Forwarder) transmit(gi int, p *pkt.Packet, delay clock.Time) {
	b, err := wire.Encode(p, nil)
	if err != nil {
		f.malformed.Add(1)
		return
	}
	if delay <= 0 {
		f.txq[gi] = append(f.txq[gi], b)
		return
	}
	f.clk.AfterFunc(delay, func() { f.txq[gi] = append(f.txq[gi], b) })
}

func (f *Forwarder) flush() {
	for i, q := range f.txq {
		if len(q) == 0 {
			continue
		}
		n, err := f.ports[i].Send(q)
		f.tx.Add(uint64(n))
		if err != nil {
			f.sendErr.Add(uint64(len(q) - n))
		}
		clear(q)
		f.txq[i] = q[:0]
	}
}

func (f *Forwarder) loop() {
	runtime.LockOSThread()
	c0 := threadCPU()
	err := clock.PreciseThread()
	defer func() { f.cpu = threadCPU() - c0; f.done <- err }()
	fds := make([]unix.PollFd, len(f.ports))
	for i, p := range f.ports {
		fds[i] = unix.PollFd{Fd: int32(p.Fd()), Events: unix.POLLIN}
	}
	for {
		select {
		case <-f.stop:
			for _, s := range f.sws {
				s.Stop()
			}
			return
		default:
		}
		f.clk.RunDue()
		got := 0
		for gi, p := range f.ports {
			sw, port := f.sws[f.owner[gi]], f.local[gi]
			n, rerr := p.Recv(func(b []byte) {
				f.clk.Sync()
				var pk pkt.Packet
				// Decode aliases the buffer, which the next recvmmsg reuses, and the frame may wait in a queue.
				if derr := wire.Decode(append([]byte(nil), b...), &pk); derr != nil {
					f.malformed.Add(1)
					return
				}
				sw.Receive(port, &pk)
			})
			if rerr != nil && err == nil {
				err = rerr
			}
			got += n
		}
		f.rx.Add(uint64(got))
		f.clk.RunDue()
		f.flush()
		if got > 0 {
			continue
		}
		// Idle: sleep in ppoll until a frame arrives or the next timer is due (at most 10 ms, to see stop).
		wait := 10 * clock.Millisecond
		if next, ok := f.clk.Next(); ok {
			wait = min(wait, next-f.clk.Wall())
		}
		if wait <= 0 {
			continue
		}
		ts := clock.ToTimespec(wait)
		if _, perr := unix.Ppoll(fds, &ts, nil); perr != nil && !errors.Is(perr, unix.EINTR) && err == nil {
			err = perr
		}
	}
}

// Stop ends the loop, closes the ports and returns what the forwarder did.
func (f *Forwarder) Stop() (ForwarderStats, error) {
	var err error
	f.once.Do(func() {
		close(f.stop)
		err = <-f.done
		for _, p := range f.ports {
			p.Close()
		}
	})
	st := ForwarderStats{Rx: f.rx.Load(), Tx: f.tx.Load(), Malformed: f.malformed.Load(),
		SendErrors: f.sendErr.Load(), Lag: f.clk.Lag(), Log: f.log, CPU: f.cpu}
	for _, s := range f.sws {
		st.Marked += s.Counters().Marked
	}
	return st, err
}

// Faithful says whether the forwarder kept time well enough to trust rates measured through it: its
// timers' mean lag must stay within half of one full frame's serialization at the link rate (a
// late loop idles a backlogged port in real time, and the lost capacity shows up as lower goodput).
func (s ForwarderStats) Faithful(linkBps float64, frameBytes int) (bool, string) {
	frame := clock.TxTime(frameBytes, linkBps)
	if s.Lag.Fired > 0 && s.Lag.Mean() > frame/2 {
		return false, fmt.Sprintf("forwarder timers ran %v late on average, more than half a %d-byte frame's %v at %.3g b/s (machine busy?)",
			s.Lag.Mean(), frameBytes, frame, linkBps)
	}
	return true, ""
}
