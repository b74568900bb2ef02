package topo

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
)

func TestHPCCRoundTrip(t *testing.T) {
	for _, c := range []struct {
		family string
		params map[string]string
	}{{"ndc", map[string]string{"n": "4", "k": "1"}}, {"fattree", map[string]string{"k": "4"}}} {
		g, err := Build(c.family, c.params)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := g.WriteHPCC(&b); err != nil {
			t.Fatal(err)
		}
		back, err := ReadHPCC(&b)
		if err != nil {
			t.Fatalf("%s: %v", c.family, err)
		}
		if len(back.Links) != len(g.Links) || len(back.Hosts) != len(g.Hosts) || len(back.Switches) != len(g.Switches) {
			t.Fatalf("%s: %d links %d hosts %d switches back", c.family, len(back.Links), len(back.Hosts), len(back.Switches))
		}
		name := func(g *Graph, e End) string { return g.Nodes[e.Node].Name }
		for i, l := range g.Links {
			m := back.Links[i]
			if name(g, l.A) != name(back, m.A) || name(g, l.B) != name(back, m.B) || l.A.Port != m.A.Port || l.B.Port != m.B.Port ||
				l.RateBps != m.RateBps || l.Delay != m.Delay {
				t.Errorf("%s link %d: %+v became %+v", c.family, i, l, m)
			}
		}
	}
}

func TestReadHPCCFile(t *testing.T) {
	// Switches listed first in ids, servers after: hosts still come out h0.. in id order. Lines after
	// the announced links are ignored, as third.cc ignores them.
	in := "5 2 4\n0 1\n2 0 100Gbps 0.001ms 0\n3 0 100Gbps 1000ns 0\n4 1 25Gbps 1us 0.000000\n0 1 400Gbps 500ns 0\nsrc dst rate delay error_rate\n"
	g, err := ReadHPCC(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Hosts) != 3 || len(g.Switches) != 2 || g.Nodes[g.Hosts[0]].Name != "h0" {
		t.Fatalf("%+v", g.Nodes)
	}
	// h0 is HPCC node 2, on s0 (node 0) port 0; s0's second port goes to h1, its third to s1.
	if e := g.Peer(g.Hosts[0], 0); e.Node != g.Switches[0] || e.Port != 0 {
		t.Errorf("h0 peer %+v", e)
	}
	if e := g.Peer(g.Switches[0], 2); e.Node != g.Switches[1] || g.LinkAt(g.Switches[0], 2).RateBps != 400e9 {
		t.Errorf("s0 p2 peer %+v", e)
	}
	if l := g.LinkAt(g.Hosts[2], 0); l.RateBps != 25e9 || l.Delay != clock.Microsecond {
		t.Errorf("h2 link %+v", l)
	}
	for _, bad := range []struct{ in, want string }{
		{"3 1 2\n0\n1 0 100Gbps 1us 0.01\n2 0 100Gbps 1us 0\n", "error rate"},
		{"3 1 2\n0\n1 0 100Gbps 1us 0\n", "ended before"},
		{"3 1 1\n5\n1 0 100Gbps 1us 0\n", "switch id 1"},
		{"3 1 1\n0\n1 1 100Gbps 1us 0\n", "itself"},
		{"3 1 1\n0\n1 0 fast 1us 0\n", "rate"},
	} {
		if _, err := ReadHPCC(strings.NewReader(bad.in)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error about %s", bad.in, err, bad.want)
		}
	}
}
