package claims

import (
	"math"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/report"
)

// port_util.* metrics: a network port at half rate for two 10 us bins of a 100 us span is the hottest
// network port, 0.1 over the run and 0.5 in 10 us windows; a malformed name or window is an error.
func TestPortUtilMetric(t *testing.T) {
	g := topo.MustBuild("fattree", "k=4")
	sw, swPort := g.Switches[0], -1
	for p := range g.Nodes[sw].Ports {
		if g.Nodes[g.Peer(sw, p).Node].Kind == topo.Switch {
			swPort = p
			break
		}
	}
	r := &report.Run{Graph: g, Links: []report.LinkSample{
		{AtS: 0, BinS: 1e-5, Device: g.Hosts[0], Port: 0, Util: 1},
		{AtS: 2e-5, BinS: 1e-5, Device: sw, Port: swPort, Util: 0.5},
		{AtS: 3e-5, BinS: 1e-5, Device: sw, Port: swPort, Util: 0.5},
		{AtS: 9e-5, BinS: 1e-5, Device: g.Hosts[0], Port: 0, Util: 0},
	}}
	for name, want := range map[string]float64{"port_util.net_max": 0.1, "port_util.net_max.w10us": 0.5,
		"port_util.server_max": 0.1, "port_util.server_max.w10us": 1} {
		if v, err := runMetric(r, name); err != nil || math.Abs(v-want) > 1e-9 {
			t.Errorf("%s = %v (%v), want %v", name, v, err, want)
		}
	}
	for _, bad := range []string{"port_util.net_p50", "port_util.host_max", "port_util.net_max.wsoon"} {
		if _, err := runMetric(r, bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: %v, want an error naming it", bad, err)
		}
	}
}
