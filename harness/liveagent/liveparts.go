package liveagent

import (
	"fmt"

	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab"
)

// LiveEnd is a live agent's end time (never, in practice): the start message of a live lab's agents.
const LiveEnd = liveEnd

// LiveParts deals a live lab's devices to n machines: the switches on the split `lab run --cluster`
// uses (TrafficParts: connected parts of equal size; a live lab has no flows to weigh the links by),
// each kernel or relay host with the switch its first port reaches, so a host's own cable stays inside
// a machine. It returns each machine's agent setup (the lab's LiveSetup, its devices only) and the
// machine of every node. The agents run free, as one live agent does: a frame between machines crosses
// a VXLAN link and is taken when it is read, as a frame from a kernel host is; nothing is in lockstep.
func LiveParts(l *lab.Lab, name string, mtu, n int) ([]*lockstep.AgentSetup, map[int]int, error) {
	nl := &nslink.Lab{Name: name, MTU: mtu, Graph: l.Graph}
	s, err := LiveSetup(l, nl)
	if err != nil {
		return nil, nil, err
	}
	dl, err := netns.Dilate(l, l.Spec.EffectiveDilation())
	if err != nil {
		return nil, nil, err
	}
	dl.Flows = nil
	part, _ := netns.TrafficParts(l, dl, n)
	g := l.Graph
	// Hosts (and anything else no agent partition holds) join a neighbour's machine, nearest first.
	for changed := true; changed; {
		changed = false
		for v := range g.Nodes {
			if _, ok := part[v]; ok {
				continue
			}
			for p := range g.Nodes[v].Ports {
				if m, ok := part[g.Peer(v, p).Node]; ok {
					part[v], changed = m, true
					break
				}
			}
		}
	}
	used := map[int]bool{}
	for v := range g.Nodes {
		m, ok := part[v]
		if !ok {
			return nil, nil, fmt.Errorf("device %s reaches no switch: a live lab over machines needs a connected fabric", g.Nodes[v].Name)
		}
		used[m] = true
	}
	if len(used) < n {
		return nil, nil, fmt.Errorf("the fabric splits into %d parts, fewer than the cluster's %d machines: list fewer machines", len(used), n)
	}
	setups := make([]*lockstep.AgentSetup, n)
	for i := range setups {
		c := *s
		c.Devices = nil
		for _, d := range s.Devices {
			if part[d.Node] == i {
				c.Devices = append(c.Devices, d)
			}
		}
		setups[i] = &c
	}
	return setups, part, nil
}
