package netns

import (
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
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
