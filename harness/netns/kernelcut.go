package netns

import (
	"fmt"

	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/nslink"
)

// A lab with kernel-tcp hosts has the hosts' MTU on every veth (labMTU): the kernel sizes its segments
// to its interface and the switches forward them whole. A frame crossing between two agents carries the
// StampLen-byte lockstep stamp after its own bytes, which a full-size kernel frame leaves no room for;
// so the veths of cut links (always switch to switch: no agent hosts a kernel host) get StampLen more,
// and the agents' receive buffers with them, while the hosts' interfaces keep the spec's MTU and TCP's
// segments stay the size they are with one agent.

// stampRoom raises the MTU of both ends of every cut link by StampLen and sizes the agents' receive
// buffers for it. The lab is ours and not running yet.
func stampRoom(nl *nslink.Lab, setups []*lockstep.AgentSetup) error {
	mtu := nl.MTU + lockstep.StampLen
	if mtu > nslink.MaxMTU {
		return fmt.Errorf("host.mtu: %d leaves no room for the %d-byte lockstep stamp on links between agents (at most %d); use one agent",
			nl.MTU, lockstep.StampLen, nslink.MaxMTU-lockstep.StampLen)
	}
	for _, s := range setups {
		s.MTU = max(s.MTU, mtu)
		for _, d := range s.Devices {
			if err := raiseCutMTU(nl, d, mtu); err != nil {
				return err
			}
		}
	}
	return nil
}

// raiseCutMTU sets mtu on device d's ports that are cut links.
func raiseCutMTU(nl *nslink.Lab, d lockstep.AgentDevice, mtu int) error {
	var cut []string
	for _, p := range d.Ports {
		if p.TxChan != 0 {
			cut = append(cut, p.Ifname)
		}
	}
	if len(cut) == 0 {
		return nil
	}
	h, err := nl.Handle(d.Name)
	if err != nil {
		return err
	}
	defer h.Close()
	for _, ifn := range cut {
		lk, err := h.LinkByName(ifn)
		if err == nil {
			err = h.LinkSetMTU(lk, mtu)
		}
		if err != nil {
			return fmt.Errorf("%s %s: MTU %d for the lockstep stamp: %w", d.Name, ifn, mtu, err)
		}
	}
	return nil
}
