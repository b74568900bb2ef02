package netns

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/pkt"
)

func buildNetns(t *testing.T, extra string) *lab.Lab {
	t.Helper()
	y := `name: pf
backend: netns
dilation: 1000
duration: 1ms
workload: [{kind: flows, list: [{src: h0, dst: h3, size: 10KB, at: 0s}]}]
` + extra
	s, err := spec.Parse([]byte(y))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	l, err := lab.Build(s)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return l
}

// Values the agents' engines refuse are refused by Preflight (before any namespace), naming the spec
// field; a good lab passes.
func TestPreflight(t *testing.T) {
	for _, c := range []struct{ spec, field string }{
		{"topology: {family: ndc, n: 2, k: 1}\nhost: {transport: lossless}\nswitch: {flow_control: pfc, buffer: 100B}", "switch.buffer"},
		{"topology: {family: ndc, n: 2, k: 1}\nhost: {transport: lossless}\nswitch: {flow_control: pfc, headroom: 20MB, buffer: 1MB}", "switch.headroom"},
		{"topology: {family: ndc, n: 2, k: 1}\nhost: {transport: kernel-tcp}\nswitch: {flow_control: lossy}", "(h0 -> h3) is routed through host"},
		{"topology: {family: fattree, k: 4}\nhost: {transport: kernel-tcp}\nswitch: {flow_control: pfc}", "switch.flow_control: pfc with host.transport kernel-tcp"},
	} {
		// Refused by the spec's own validation (lab.Build) or by Preflight: both before any namespace.
		err := buildErr(c.spec)
		if err == nil {
			err = Preflight(buildNetns(t, c.spec))
		}
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%q:\n want an error naming %q, got %v", c.spec, c.field, err)
		}
	}
	for _, ok := range []string{
		"topology: {family: ndc, n: 2, k: 1}\nhost: {transport: lossless}\nswitch: {flow_control: pfc}",
		"topology: {family: fattree, k: 4}\nhost: {transport: kernel-tcp}\nswitch: {flow_control: lossy}",
	} {
		if err := Preflight(buildNetns(t, ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

func buildErr(extra string) error {
	s, err := spec.Parse([]byte("name: pf\nbackend: netns\ndilation: 1000\nduration: 1ms\n" +
		"workload: [{kind: flows, list: [{src: h0, dst: h3, size: 10KB, at: 0s}]}]\n" + extra))
	if err != nil {
		return err
	}
	_, err = lab.Build(s)
	return err
}

// The lab's MTU is its largest frame (the switches' MTU: host.mtu of payload, RoCEv2 headers and a full
// source route) plus the lockstep stamp, less the Ethernet header an interface's MTU leaves out: every
// frame fits, and a lab of host.mtu 1000-1350 fits a 1500-byte underlay under VXLAN's 50 bytes (it
// never did: the MTU had a floor of 1500+16).
func TestLabMTUFollowsHostMTU(t *testing.T) {
	for _, mtu := range []int{1000, 1200, 1350} {
		l := buildNetns(t, fmt.Sprintf("topology: {family: fattree, k: 4}\nhost: {mtu: %d}\n", mtu))
		got := labMTU(l)
		for _, s := range l.Switches {
			if frame := s.Config.MTU + lockstep.StampLen; got+pkt.EthHdr < frame {
				t.Errorf("host.mtu %d: lab MTU %d does not carry a %d-byte frame with its stamp", mtu, got, frame)
			}
		}
		if got+nslink.VXLANOverhead > 1500 {
			t.Errorf("host.mtu %d: lab MTU %d does not fit a 1500-byte underlay", mtu, got)
		}
		if err := nslink.CheckUnderlayMTU("m1", 1500, got); err != nil {
			t.Errorf("host.mtu %d: %v", mtu, err)
		}
	}
	l := buildNetns(t, "topology: {family: fattree, k: 4}\nhost: {mtu: 1450}\n")
	err := nslink.CheckUnderlayMTU("m1", 1500, labMTU(l))
	if err == nil || !strings.Contains(err.Error(), "host.mtu") || strings.Contains(err.Error(), "switch.mtu") {
		t.Errorf("host.mtu 1450 over a 1500-byte underlay: %v, want a refusal naming host.mtu (and no switch.mtu, which no spec has)", err)
	}
}
