package liveagent

import (
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/harness/nslink/nstest"
	"github.com/fabriclab/fabriclab/lab/topo"
)

const livePartsSpec = `
name: lp
backend: netns
dilation: 1000
duration: 1s
topology: {family: fattree, k: 4}
switch: {flow_control: lossy}
host: {transport: kernel-tcp, mtu: 1500}
routing: {algorithm: shortest}
`

// TestLiveParts: every device on exactly one machine, each host with the switch its port reaches (its
// cable stays inside a machine), each machine's agent running exactly its switches, free-running.
func TestLiveParts(t *testing.T) {
	l := nstest.Lab(t, livePartsSpec)
	g := l.Graph
	for _, n := range []int{1, 2, 3} {
		setups, part, err := LiveParts(l, "lp", 1500, n)
		if err != nil {
			t.Fatalf("%d machines: %v", n, err)
		}
		if len(setups) != n || len(part) != len(g.Nodes) {
			t.Fatalf("%d machines: %d setups, %d nodes placed of %d", n, len(setups), len(part), len(g.Nodes))
		}
		for _, h := range g.Hosts {
			if sw := g.Peer(h, 0).Node; part[h] != part[sw] {
				t.Errorf("%d machines: host %s on %d, its switch %s on %d", n, g.Nodes[h].Name, part[h], g.Nodes[sw].Name, part[sw])
			}
		}
		seen := map[int]bool{}
		for i, s := range setups {
			if s.Lockstep || len(s.Devices) == 0 {
				t.Errorf("%d machines: machine %d: lockstep %v, %d devices", n, i, s.Lockstep, len(s.Devices))
			}
			for _, d := range s.Devices {
				if part[d.Node] != i || seen[d.Node] || g.Nodes[d.Node].Kind != topo.Switch {
					t.Errorf("%d machines: device %s in machine %d's agent (placed on %d, twice %v)", n, d.Name, i, part[d.Node], seen[d.Node])
				}
				seen[d.Node] = true
				for _, p := range d.Ports {
					if p.TxChan != 0 || p.RxChan != 0 {
						t.Errorf("%d machines: %s:%s has lockstep channels", n, d.Name, p.Ifname)
					}
				}
			}
		}
		if len(seen) != len(g.Switches) {
			t.Errorf("%d machines: %d switches in agents, want %d", n, len(seen), len(g.Switches))
		}
	}
	if _, _, err := LiveParts(l, "lp", 1500, 40); err == nil || !strings.Contains(err.Error(), "fewer than the cluster's 40 machines") {
		t.Errorf("40 machines for 20 switches: %v", err)
	}
}
