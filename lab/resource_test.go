package lab_test

import (
	"fmt"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/nodes"
)

// TestPortFCResourceFormula is claim 13 (PortFC §III-B, §IV-C): n+1 queues per switch port (n data
// queues and the HQ) and (k+1)(n-1)+2 per node port, so 9 and 16 at n = 8, 5 and 8 at n = 4, 3 and 4 at
// n = 2 (the DPDK prototype's "only requires 4 queues on each port"), and for k > 1 (portfc-13.2):
// 5 and 11 on NDC(4,2), 4 and 12 on NDC(3,4) (the paper's "k is generally less than or equal to 4").
func TestPortFCResourceFormula(t *testing.T) {
	for _, tc := range []struct{ n, k, sw, node int }{{2, 1, 3, 4}, {4, 1, 5, 8}, {8, 1, 9, 16}, {4, 2, 5, 11}, {3, 4, 4, 12}} {
		l, err := buildLab(t, fmt.Sprintf("name: r\ntopology: {family: ndc, n: %d, k: %d}\nswitch: {flow_control: portfc}\nduration: 1ms\n", tc.n, tc.k))
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Switches[0].Config.DataQueues + 1; got != tc.sw {
			t.Errorf("n=%d k=%d: %d queues per switch port, want n+1 = %d", tc.n, tc.k, got, tc.sw)
		}
		nic, err := nodes.New(l.Hosts[0].Config, clock.NewVirtual(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for p := 0; p < nic.NumPorts(); p++ {
			if got := nic.Port(p).NumQueues(); got != tc.node {
				t.Errorf("n=%d k=%d: %d queues on node port %d, want (k+1)(n-1)+2 = %d", tc.n, tc.k, got, p, tc.node)
			}
		}
	}
}
