package agent

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/harness/portio"
)

// A refusal that is every port's answer (the XDP program does not load) is asked once: the ports after
// it go straight to AF_PACKET. One that is a port's own (its receive ring would be too large, its
// interface is busy) is asked again for the next port. The fidelity record names each kind of refusal.
func TestOpenXDPRemembersRefusalsForEveryPort(t *testing.T) {
	errs := []error{
		&portio.XDPError{Ifname: "p0", Step: "receive ring", Err: unix.E2BIG},
		nil,
		&portio.XDPError{Ifname: "p2", Step: "bind", Err: unix.EBUSY},
		&portio.XDPError{Ifname: "p3", Step: "XDP program", Err: unix.EINVAL},
		&portio.XDPError{Ifname: "p4", Step: "bind", Err: unix.EBUSY}, // never asked
	}
	asked := 0
	a := &agent{dp: xdp, setup: &lockstep.AgentSetup{MTU: 1500}, ports: make([]*port, 6)}
	a.xdp.open = func(_, ifname string, _, _ int) (*portio.XDPPort, error) {
		asked++
		if err := errs[min(asked-1, len(errs)-1)]; err != nil {
			return nil, err
		}
		return &portio.XDPPort{Name: ifname, Mode: "generic"}, nil
	}
	d := lockstep.AgentDevice{Name: "s0"}
	var got []bool
	for i := range a.ports {
		got = append(got, a.openXDP(d, lockstep.AgentPort{Ifname: nslink.PortName(i)}) != nil)
	}
	if asked != 4 || a.xdp.refused != 5 || len(a.xdp.ports) != 1 || !got[1] {
		t.Fatalf("asked the kernel %d times (want 4), %d refused (want 5), AF_XDP ports %v", asked, a.xdp.refused, got)
	}
	name := a.datapathName()
	for _, want := range []string{"xdp on 1 of 6 ports", "receive ring", "bind", "XDP program", "the others AF_PACKET"} {
		if !strings.Contains(name, want) {
			t.Errorf("datapath %q does not say %q", name, want)
		}
	}
	if strings.Count(name, "bind") != 1 {
		t.Errorf("datapath %q names a kind of refusal twice", name)
	}
}
