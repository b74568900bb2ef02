package lab_test

import (
	"fmt"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/nodes"
)

// TestPortFCResourceFormula is claim 13 (PortFC §III-B, §IV-C): n+1 queues per switch port (n data
// queues and the HQ) and (k+1)(n-1)+2 per node port, so 9 and 16 at n = 8, 5 and 8 at n = 4, 3 and 4 at
// n = 2 (the DPDK prototype's "only requires 4 queues on each port").
func TestPortFCResourceFormula(t *testing.T) {
	for _, tc := range []struct{ n, sw, node int }{{2, 3, 4}, {4, 5, 8}, {8, 9, 16}} {
		l, err := buildLab(t, fmt.Sprintf("name: r\ntopology: {family: ndc, n: %d, k: 1}\nswitch: {flow_control: portfc}\nduration: 1ms\n", tc.n))
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Switches[0].Config.DataQueues + 1; got != tc.sw {
			t.Errorf("n=%d: %d queues per switch port, want n+1 = %d", tc.n, got, tc.sw)
		}
		nic, err := nodes.New(l.Hosts[0].Config, clock.NewVirtual(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for p := 0; p < nic.NumPorts(); p++ {
			if got := nic.Port(p).NumQueues(); got != tc.node {
				t.Errorf("n=%d: %d queues on node port %d, want (k+1)(n-1)+2 = %d", tc.n, got, p, tc.node)
			}
		}
	}
}
