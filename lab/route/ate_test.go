package route

import (
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/lab/topo"
)

func TestATECandidates(t *testing.T) {
	g := topo.MustBuild("ndc", "n=4", "k=1", "rail=true", "hbd_rate=400Gbps")
	r, err := New("ate", g, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.(Adaptive).PathSelect() != "ate" || r.(*ATE).P != 0.9 {
		t.Fatalf("ate: policy %q, p %g", r.(Adaptive).PathSelect(), r.(*ATE).P)
	}
	bc, _ := New("bcube", g, nil)
	firstClass := func(p Path) string { return p.Links(g)[0].Class }
	for src := 0; src < 16; src++ {
		for dst := 0; dst < 16; dst++ {
			if src == dst {
				continue
			}
			ps, err := r.Paths(src, dst)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := bc.Paths(src, dst)
			if !ps[0].Equal(b[0]) {
				t.Fatalf("h%d->h%d: ATE's preferred path %v is not bcube's %v", src, dst, ps[0], b[0])
			}
			both := src%4 != dst%4 && src/4 != dst/4 // h<id>: id = 4·a1 + a0
			if !both {
				if len(ps) != 1 || ps[0].Hops() != 2 {
					t.Fatalf("h%d->h%d (one digit apart): %d candidates, want its direct path only", src, dst, len(ps))
				}
				continue
			}
			if len(ps) != 2 || ps[0].Hops() != 4 || ps[1].Hops() != 4 {
				t.Fatalf("h%d->h%d: %d candidates, want the two 4-hop digit orders", src, dst, len(ps))
			}
			if firstClass(ps[0]) != "hbd" || firstClass(ps[1]) != "rail" || ps[0].Ports[0] == ps[1].Ports[0] {
				t.Fatalf("h%d->h%d: first hops %s/%s by ports %d/%d, want HBD then rail", src, dst,
					firstClass(ps[0]), firstClass(ps[1]), ps[0].Ports[0], ps[1].Ports[0])
			}
			// Both cross one HBD and one rail link: ATE moves which node's HBD carries the flow, not how
			// many HBD links it uses.
			for _, p := range ps {
				c := map[string]int{}
				for _, l := range p.Links(g) {
					c[l.Class]++
				}
				if c["hbd"] != 2 || c["rail"] != 2 {
					t.Fatalf("h%d->h%d path %v: links by class %v", src, dst, p.Nodes, c)
				}
			}
		}
	}
	if _, err := New("ate", g, map[string]string{"p": "0.75"}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"inflight", "assigned", "offered"} {
		if a, err := New("ate", g, map[string]string{"measure": m}); err != nil || a.(*ATE).Measure != m {
			t.Fatalf("measure=%s: %v", m, err)
		}
	}
	for _, bad := range []map[string]string{{"p": "1"}, {"p": "0"}, {"p": "x"}, {"q": "0.5"}, {"measure": "rate"}} {
		if _, err := New("ate", g, bad); err == nil {
			t.Errorf("ate %v accepted", bad)
		}
	}
	// Plain NDC is fine (homogeneous: layer 0 is still first); other families are refused by name.
	if _, err := New("ate", topo.MustBuild("ndc", "n=2", "k=1"), nil); err != nil {
		t.Fatal(err)
	}
	_, err = New("ate", topo.MustBuild("fattree", "k=4"), nil)
	if err == nil || !strings.Contains(err.Error(), "NDC") || !strings.Contains(err.Error(), "fattree") {
		t.Fatalf("ate on a fat-tree: %v", err)
	}
}
