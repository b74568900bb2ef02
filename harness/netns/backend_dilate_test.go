package netns

import (
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/harness/nslink/nstest"

	"github.com/fabriclab/fabriclab/clock"
)

const dilateSpec = `
name: dil
backend: netns
topology: {family: ndc, n: 2, k: 1, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: pfc}
host: {transport: lossless, cc: dcqcn}
workload: [{kind: flows, list: [{src: h0, dst: h3, size: 1MB, at: 2us}]}]
duration: 5ms`

// Dilation divides rates by D, multiplies times by D and leaves bytes alone, so BDP in bytes, and every
// threshold counted in BDPs, is what the paper had (docs/architecture.md §Time dilation).
func TestDilateScalesRatesTimesNotBytes(t *testing.T) {
	l := nstest.Lab(t, dilateSpec)
	const d = 1000
	dl, err := Dilate(l, d)
	if err != nil {
		t.Fatal(err)
	}
	if dl.End != l.End*d {
		t.Errorf("End %v, want %v", dl.End, l.End*d)
	}
	for i, s := range l.Switches {
		c, dc := s.Config, dl.Switches[i].Config
		for p := range c.Ports {
			if got, want := dc.Ports[p].RateBps, c.Ports[p].RateBps/d; got != want {
				t.Errorf("switch %d port %d rate %v, want %v", i, p, got, want)
			}
			if got, want := dc.Ports[p].Delay, c.Ports[p].Delay*d; got != want {
				t.Errorf("switch %d port %d delay %v, want %v", i, p, got, want)
			}
			// The BDP in bytes is unchanged.
			bdp := c.Ports[p].RateBps * c.Ports[p].Delay.Seconds()
			dbdp := dc.Ports[p].RateBps * dc.Ports[p].Delay.Seconds()
			if diff := bdp - dbdp; diff > 1e-6*bdp || diff < -1e-6*bdp {
				t.Errorf("switch %d port %d BDP %v bytes became %v", i, p, bdp/8, dbdp/8)
			}
		}
		if dc.BufferBytes != c.BufferBytes || dc.MTU != c.MTU {
			t.Errorf("switch %d: bytes changed (buffer %v->%v, MTU %v->%v)", i, c.BufferBytes, dc.BufferBytes, c.MTU, dc.MTU)
		}
		// The original lab is untouched (Dilate copies the port slices).
		if &c.Ports[0] == &dc.Ports[0] {
			t.Errorf("switch %d: ports slice shared with the undilated lab", i)
		}
	}
	if len(dl.Hosts) != len(l.Hosts) || len(dl.Kernel) != 0 {
		t.Fatalf("hosts %d (kernel %d), want %d NIC hosts", len(dl.Hosts), len(dl.Kernel), len(l.Hosts))
	}
	for i, h := range l.Hosts {
		c, err := h.Config.WithDefaults()
		if err != nil {
			t.Fatal(err)
		}
		dc := dl.Hosts[i].Config
		// Defaults are resolved before dilating: a default RTO must be dilated too, never stay at paper value.
		if c.RTO == 0 || dc.RTO != c.RTO*d {
			t.Errorf("host %d RTO %v, want %v", i, dc.RTO, c.RTO*d)
		}
		if dc.DCQCN.RPTimer != c.DCQCN.RPTimer*d {
			t.Errorf("host %d DCQCN RP timer %v, want %v", i, dc.DCQCN.RPTimer, c.DCQCN.RPTimer*d)
		}
		if dc.Ports[0].RateBps != c.Ports[0].RateBps/d {
			t.Errorf("host %d rate %v, want %v", i, dc.Ports[0].RateBps, c.Ports[0].RateBps/d)
		}
		if dc.MTU != c.MTU {
			t.Errorf("host %d MTU changed: %v -> %v", i, c.MTU, dc.MTU)
		}
	}
	f, df := l.Flows[0], dl.Flows[0]
	if df.At != 2*clock.Microsecond*d || df.Size != f.Size || df.Ideal != f.Ideal*d {
		t.Errorf("flow: at %v size %v ideal %v; want at %v size %v ideal %v", df.At, df.Size, df.Ideal, 2*clock.Microsecond*d, f.Size, f.Ideal*d)
	}
	for i, lk := range l.Graph.Links {
		if dl.LinkDelay[i] != lk.Delay*d {
			t.Errorf("link %d delay %v, want %v", i, dl.LinkDelay[i], lk.Delay*d)
		}
	}
}

func TestDilateOneIsIdentityAndBadFactorsAreErrors(t *testing.T) {
	l := nstest.Lab(t, dilateSpec)
	dl, err := Dilate(l, 1)
	if err != nil {
		t.Fatal(err)
	}
	if dl.End != l.End || dl.Switches[0].Config.Ports[0].RateBps != l.Switches[0].Config.Ports[0].RateBps {
		t.Errorf("D=1 changed the lab")
	}
	for _, d := range []float64{0, 0.5, -3} {
		if _, err := Dilate(l, d); err == nil || !strings.Contains(err.Error(), "dilation") {
			t.Errorf("Dilate(%v): error %v, want one naming the dilation", d, err)
		}
	}
}

// Kernel-tcp hosts are set aside: no agent runs them and their config is the kernel's business.
func TestDilateSetsKernelHostsAside(t *testing.T) {
	l := nstest.Lab(t, `
name: dilk
backend: netns
topology: {family: ring, n: 3, hosts_per_switch: 1}
host: {transport: kernel-tcp, cc: cubic}
routing: {algorithm: shortest}
workload: [{kind: flows, list: [{src: h0, dst: h1, size: 1MB, at: 0s}]}]
duration: 1ms`)
	dl, err := Dilate(l, 200)
	if err != nil {
		t.Fatal(err)
	}
	if len(dl.Hosts) != 0 || len(dl.Kernel) != len(l.Hosts) {
		t.Errorf("NIC hosts %d, kernel hosts %d; want 0 and %d", len(dl.Hosts), len(dl.Kernel), len(l.Hosts))
	}
	if want := l.Spec.Host.MTU; labMTU(l) != want {
		t.Errorf("kernel lab MTU %d, want host.mtu %d (the kernel sizes segments to the link)", labMTU(l), want)
	}
}
