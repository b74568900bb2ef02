package topo

import (
	"bytes"
	"math"
	"testing"

	"github.com/fabriclab/fabriclab/units"
)

// FuzzReadJSON: seeds are the repo's own families exported by WriteJSON. An accepted file is a valid
// graph with finite, in-range links, and exporting and importing it again gives the same JSON.
func FuzzReadJSON(f *testing.F) {
	for _, c := range []struct {
		family string
		args   []string
	}{{"ndc", []string{"n=3", "k=1"}}, {"fattree", []string{"k=4"}}, {"ring", []string{"n=4"}}, {"dragonfly", []string{"p=1", "a=2", "h=1"}}} {
		p, err := ParseParams(c.args)
		if err != nil {
			f.Fatal(err)
		}
		g, err := Build(c.family, p)
		if err != nil {
			f.Fatal(err)
		}
		var b bytes.Buffer
		if err := g.WriteJSON(&b); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Add([]byte(`{"nodes":[{"name":"a","kind":"host"},{"name":"b","kind":"host"}],"links":[{"a":"a","b":"b","a_port":1000000000,"b_port":0}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ReadJSON(bytes.NewReader(data), 100e9, 1000)
		if err != nil {
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("accepted an invalid graph: %v", err)
		}
		for i, l := range g.Links {
			if !(l.RateBps > 0 && l.RateBps <= units.MaxRate) || math.IsNaN(l.RateBps) || l.Delay < 0 || l.Delay > units.MaxTime {
				t.Fatalf("links[%d]: rate %v delay %v out of range", i, l.RateBps, l.Delay)
			}
		}
		var b1, b2 bytes.Buffer
		if err := g.WriteJSON(&b1); err != nil {
			t.Fatalf("accepted graph does not export: %v", err)
		}
		g2, err := ReadJSON(bytes.NewReader(b1.Bytes()), 100e9, 1000)
		if err != nil {
			t.Fatalf("exported graph does not import: %v\n%s", err, b1.String())
		}
		if err := g2.WriteJSON(&b2); err != nil || b1.String() != b2.String() {
			t.Fatalf("export -> import -> export differs (%v)", err)
		}
	})
}

// Large graphs skip the all-pairs searches unless asked (NDC(317,1) ran over ten minutes); small ones
// compute them.
func TestStatsBounded(t *testing.T) {
	big, err := Build("ndc", map[string]string{"n": "200", "k": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if st := big.StatsBounded(false); !st.AllPairsSkipped || st.Hosts != 40000 || st.Diameter != 0 {
		t.Errorf("NDC(200,1): %+v (work %g)", st, big.AllPairsWork())
	}
	small, err := Build("ndc", map[string]string{"n": "4", "k": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if st := small.StatsBounded(false); st.AllPairsSkipped || st.Diameter != 4 {
		t.Errorf("NDC(4,1): %+v", st)
	}
}
