package lab_test

import (
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/nodes"
)

// TestProfilesReachTheNICs: host.profile fills the NICs' notification point, DCQCN steps and NACK
// pacing from the reference simulator's values, a field the spec names still wins, and the switches'
// ECN thresholds follow HPCC's bw/25G scaling only under hpcc.
func TestProfilesReachTheNICs(t *testing.T) {
	const base = "name: p\ntopology: {family: ndc, n: 2, k: 1}\nduration: 1ms\nhost: {transport: irn, "
	for _, tc := range []struct {
		host         string
		cnp          string
		ai, hai, min float64
		nack         clock.Time
		kmin, kmax   int64
	}{
		{"}", nodes.CNPInterval, 20e6, 200e6, 1e9, 500 * clock.Microsecond, 100_000, 400_000},
		{"profile: hpcc}", nodes.CNPPerPacket, 20e6, 200e6, 1e9, 500 * clock.Microsecond, 400_000, 1_600_000},
		{"profile: conweave}", nodes.CNPPerPacket, 40e6, 100e6, 100e6, 4 * clock.Microsecond, 100_000, 400_000},
		{"profile: conweave, cnp: interval, dcqcn: {rate_ai: 7Mbps}}", nodes.CNPInterval, 7e6, 100e6, 100e6, 4 * clock.Microsecond, 100_000, 400_000},
	} {
		l, err := buildLab(t, base+tc.host)
		if err != nil {
			t.Fatalf("%s: %v", tc.host, err)
		}
		c, err := l.Hosts[0].Config.WithDefaults()
		if err != nil {
			t.Fatal(err)
		}
		sc := l.Switches[0].Config.ECN
		if c.CNP != tc.cnp || c.DCQCN.RateAIBps != tc.ai || c.DCQCN.RateHAIBps != tc.hai || c.DCQCN.MinRateBps != tc.min ||
			c.NackInterval != tc.nack || sc.KMinBytes != tc.kmin || sc.KMaxBytes != tc.kmax {
			t.Errorf("%s: cnp %s ai %g hai %g min %g nack %v K %d/%d", tc.host, c.CNP, c.DCQCN.RateAIBps, c.DCQCN.RateHAIBps,
				c.DCQCN.MinRateBps, c.NackInterval, sc.KMinBytes, sc.KMaxBytes)
		}
	}
	if _, err := spec.Parse([]byte(base + "profile: ns3}")); err == nil || !strings.Contains(err.Error(), "host.profile") {
		t.Fatalf("unknown profile: %v, want an error naming host.profile", err)
	}
}

// TestIRNWindowRailOnly: IRN's BDP-FC window is the bottleneck's (100 Gb/s rails), not the 160 Gb/s
// HBD port 0 of every host.
func TestIRNWindowRailOnly(t *testing.T) {
	const s = "name: r\ntopology: {family: ndc, n: 4, k: 1, rail: true, hbd_rate: 160Gbps}\nduration: 1ms\nhost: {transport: irn}\n"
	l, err := buildLab(t, s)
	if err != nil {
		t.Fatal(err)
	}
	flat, err := buildLab(t, "name: f\ntopology: {family: ndc, n: 4, k: 1}\nduration: 1ms\nhost: {transport: irn}\n")
	if err != nil {
		t.Fatal(err)
	}
	got, want := l.Hosts[0].Config.BDPCapBytes, flat.Hosts[0].Config.BDPCapBytes
	if got != want || got < 100_000 || got > 110_000 {
		t.Fatalf("rail-only IRN window %d B, want the 100 Gb/s window %d B (8 us of propagation and 4 frames at 100 Gb/s)", got, want)
	}
}
