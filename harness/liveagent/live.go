// Package liveagent runs the agent of a live lab (`lab up`): its one setup (LiveSetup, relay hosts
// included), the devices it deals to machines (LiveParts), and the running agent that answers live
// requests (Live). It builds on the backend (package netns) for the split and the agent process; the
// supervisor and commands around a live lab are package live.
package liveagent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/fib"
	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/switchsw"
	"github.com/fabriclab/fabriclab/switchsw/fc"
	"github.com/fabriclab/fabriclab/units"
)

// A live lab (`lab up`) runs the agents of a lab with no workload and no end: the switches forward
// whatever the kernel hosts send, for as long as the lab is up. While it runs, the backend sends the
// agent live requests (AgentMsg type live) and the agent answers each with one live reply, from its
// event loop, so the engines stay single-threaded.

// Live is the running agent of a live lab.
type Live struct {
	Lab      *nslink.Lab
	Dilation float64
	proc     *netns.LocalAgent
	mu       sync.Mutex // one request at a time
	replies  chan lockstep.AgentMsg
	exited   chan error
}

// liveEnd is the agents' end time: never, in practice (11.6 days of dilated engine time).
const liveEnd = clock.Time(units.MaxTime)

// StartLive starts the agent that runs l's switches (and NIC hosts, if any) on nl, which is up, with its
// kernel hosts already set up. The agent runs until Stop or until this process dies.
func StartLive(ctx context.Context, l *lab.Lab, nl *nslink.Lab) (*Live, error) {
	if !lockstep.AgentLinked {
		return nil, errors.New("live lab: this binary does not contain the agent")
	}
	d := l.Spec.EffectiveDilation()
	s, err := LiveSetup(l, nl)
	if err != nil {
		return nil, err
	}
	p, err := netns.StartLocalAgent(nl.Name, s)
	if err != nil {
		return nil, err
	}
	if _, err := p.Expect(ctx, "ready", netns.ReadyTimeout(s)); err != nil {
		p.Kill()
		return nil, err
	}
	epoch := clock.MonotonicNanos() + (50 * time.Millisecond).Nanoseconds()
	if err := p.Send(&lockstep.AgentMsg{Type: "start", Epoch: epoch, End: liveEnd}); err != nil {
		p.Kill()
		return nil, fmt.Errorf("%s: start: %w", p.Name(), err)
	}
	lv := &Live{Lab: nl, Dilation: d, proc: p, replies: make(chan lockstep.AgentMsg, 1), exited: make(chan error, 1)}
	go func() {
		for m := range p.Msgs() {
			if m.Type == "live" || m.Type == "error" {
				lv.replies <- m
			}
		}
		lv.exited <- p.Wait()
	}()
	return lv, nil
}

// LiveSetup is the one agent setup of a live lab on nl: every switch (and relay host) of l, no flows,
// no end, no monitor. A live lab over several machines deals its devices out (LiveParts).
func LiveSetup(l *lab.Lab, nl *nslink.Lab) (*lockstep.AgentSetup, error) {
	d := l.Spec.EffectiveDilation()
	dl, err := netns.Dilate(l, d)
	if err != nil {
		return nil, err
	}
	dl.Flows = nil
	dl.EngineD = 0 // a live lab's engines stay on dilated configs: its inspect and drop streams are in agent time
	setups, _ := netns.SplitAgents(l, dl, nl, 1, nil, "", nil)
	if len(setups) == 0 && l.Tables.HostTransit {
		setups = []*lockstep.AgentSetup{{Lab: nl.Name, MTU: nl.MTU, FrameBytes: netns.DataFrameBytes(l)}}
	}
	if len(setups) == 0 {
		return nil, errors.New("live lab: no device for an agent to run (a lab of kernel hosts alone)")
	}
	s := setups[0]
	kernel := map[int]bool{}
	for _, h := range dl.Kernel {
		kernel[h.Node] = true
	}
	if !l.Tables.HostTransit {
		for i := range s.Devices {
			for j := range s.Devices[i].Ports {
				if p := &s.Devices[i].Ports[j]; kernel[p.PeerNode] {
					p.IngressDelay = p.Delay
				}
			}
		}
	}
	if len(dl.Switches) > 0 {
		relays, err := relayDevices(l, dl, nl, dl.Switches[0].Config)
		if err != nil {
			return nil, err
		}
		s.Devices = append(s.Devices, relays...)
	}
	s.Monitor = nil
	s.Realtime = netns.DefaultRealtime
	return s, nil
}

// Pid is the agent's process ID.
func (lv *Live) Pid() int { return lv.proc.Pid() }

// Exited receives the agent's exit (it should never exit while the lab is up).
func (lv *Live) Exited() <-chan error { return lv.exited }

// Request sends one live request and waits for its reply.
func (lv *Live) Request(req lockstep.LiveMsg) (*lockstep.LiveMsg, error) {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	if err := lv.proc.Send(&lockstep.AgentMsg{Type: "live", Live: &req}); err != nil {
		return nil, fmt.Errorf("%s: %w", lv.proc.Name(), err)
	}
	select {
	case m := <-lv.replies:
		if m.Type == "error" {
			return nil, fmt.Errorf("%s: %s", lv.proc.Name(), m.Err)
		}
		if m.Live == nil {
			return nil, fmt.Errorf("%s: live reply without a body", lv.proc.Name())
		}
		if m.Live.Err != "" {
			return m.Live, errors.New(m.Live.Err)
		}
		return m.Live, nil
	case <-time.After(10 * time.Second):
		return nil, fmt.Errorf("%s: no reply to %s within 10 s", lv.proc.Name(), req.Op)
	}
}

// Stop ends the agent.
func (lv *Live) Stop() { lv.proc.Kill() }

// relayDevices are the agent devices of a live lab's relay hosts (HostTransit tables): a switch engine
// on the host's ports plus RelayPort, its table the host's own with the host itself behind RelayPort.
func relayDevices(l *lab.Lab, dl *netns.Dilated, nl *nslink.Lab, tmpl switchsw.Config) ([]lockstep.AgentDevice, error) {
	if !l.Tables.HostTransit {
		return nil, nil
	}
	g := l.Graph
	var out []lockstep.AgentDevice
	for _, h := range dl.Kernel {
		n := h.Node
		node := &g.Nodes[n]
		c := tmpl
		c.Device = int32(n)
		c.FlowControl = fc.Config{Mode: "lossy"}
		c.Lossless, c.ClassUp = nil, nil
		c.Ports = nil
		var ports []lockstep.AgentPort
		var top float64
		for i, li := range node.Ports {
			lk := g.Links[li]
			peer := g.Peer(n, i)
			pn := g.Nodes[peer.Node]
			c.Ports = append(c.Ports, switchsw.PortConfig{RateBps: lk.RateBps / dl.D, Delay: dl.LinkDelay[li],
				PeerIsHost: pn.Kind == topo.Host, PeerHost: int32(pn.Index)})
			ports = append(ports, lockstep.AgentPort{Ifname: nslink.PortName(i), RateBps: lk.RateBps / dl.D, Delay: dl.LinkDelay[li],
				PeerNode: peer.Node, PeerPort: peer.Port})
			top = max(top, lk.RateBps/dl.D)
		}
		k := len(node.Ports)
		c.Ports = append(c.Ports, switchsw.PortConfig{RateBps: top, PeerIsHost: true, PeerHost: int32(node.Index)})
		ports = append(ports, lockstep.AgentPort{Ifname: nslink.RelayPort, RateBps: top, PeerNode: -1, PeerPort: -1})
		var err error
		if c.FIB, err = RelayFIB(l.Tables.FIB[n], node.Index, k); err != nil {
			return nil, fmt.Errorf("%s: %w", node.Name, err)
		}
		out = append(out, lockstep.AgentDevice{Name: node.Name, Node: n, NSPath: nl.NSPath(node.Name), Switch: &c, Ports: ports})
	}
	return out, nil
}

// RelayFIB is a relay host's table toward every host, itself behind RelayPort (after its fabric ports).
func RelayFIB(host fib.Table, self, ports int) (fib.Table, error) {
	return host.With(self, []uint8{uint8(ports)})
}
