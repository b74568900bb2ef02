package topo

import "strconv"

func itoa(v int) string { return strconv.Itoa(v) }

func init() {
	register("ring", append([]paramSpec{{name: "n", required: true}}, attachKeys...), buildRing)
	register("torus", append([]paramSpec{{name: "x", required: true}, {name: "y", required: true}}, attachKeys...), buildTorus)
	register("petersen", attachKeys, buildPetersen)
	register("envelope", attachKeys, buildEnvelope)
}

// Small fixed fabrics (Fibre Channel paper §2-3). All are switch-only graphs with hosts attached by
// hosts_per_switch (default 1) or hosts (spread evenly, lower-numbered switches take the extra), host
// ports first on every switch, fabric links after host links in the order each builder lists.

// buildRing: switches s0..s(n−1) in a cycle; links s_i–s_(i+1 mod n) for i = 0..n−1.
func buildRing(p *params) (*Graph, error) {
	n, err := p.int("n", 3)
	if err != nil {
		return nil, err
	}
	if n > maxNodes {
		return nil, p.errf("n", "more than %d switches", maxNodes)
	}
	var edges [][2]int
	for i := 0; i < n; i++ {
		edges = append(edges, [2]int{i, (i + 1) % n})
	}
	return edgeGraph(p, n, edges, nil)
}

// buildTorus: an x×y wrapped mesh; switch s(iy·x+ix) has Node.Addr [ix, iy]. For each switch in order,
// the link to +x then the link to +y (wrapping). A dimension of size 2 has a single link between its
// two switches, not two parallel ones, so 2×5 is the FC paper's degree-3 "2×5 wrapped mesh".
func buildTorus(p *params) (*Graph, error) {
	x, err := p.int("x", 2)
	if err != nil {
		return nil, err
	}
	y, err := p.int("y", 2)
	if err != nil {
		return nil, err
	}
	if x*y > maxNodes {
		return nil, p.errf("y", "more than %d switches", maxNodes)
	}
	id := func(ix, iy int) int { return iy*x + ix }
	var edges [][2]int
	for iy := 0; iy < y; iy++ {
		for ix := 0; ix < x; ix++ {
			if x > 2 || ix == 0 {
				edges = append(edges, [2]int{id(ix, iy), id((ix+1)%x, iy)})
			}
			if y > 2 || iy == 0 {
				edges = append(edges, [2]int{id(ix, iy), id(ix, (iy+1)%y)})
			}
		}
	}
	addr := make([][]int, x*y)
	for s := range addr {
		addr[s] = []int{s % x, s / x}
	}
	return edgeGraph(p, x*y, edges, addr)
}

// buildPetersen: outer cycle s0..s4 (s_i–s_(i+1 mod 5)), spokes s_i–s_(i+5), inner pentagram
// s(5+i)–s(5+(i+2) mod 5); 10 switches, 15 links, 3-regular, diameter 2.
func buildPetersen(p *params) (*Graph, error) {
	var edges [][2]int
	for i := 0; i < 5; i++ {
		edges = append(edges, [2]int{i, (i + 1) % 5})
	}
	for i := 0; i < 5; i++ {
		edges = append(edges, [2]int{i, i + 5})
	}
	for i := 0; i < 5; i++ {
		edges = append(edges, [2]int{5 + i, 5 + (i+2)%5})
	}
	return edgeGraph(p, 10, edges, nil)
}

// buildEnvelope: the FC paper's Fig. 5 "envelope". The figure survives only as a caption; the text says
// paths among switches 1–4 can be routed "clockwise" and that destinations two hops away can instead go
// via "central switch 5". That is the wheel W5: rim cycle 1-2-3-4-1 plus a hub joined to all four (the
// drawing of an envelope's back: a rectangle with its flaps meeting in the middle). Paper switches 1..4
// are s0..s3, the hub 5 is s4. Links: rim s0–s1, s1–s2, s2–s3, s3–s0, then spokes s_i–s4.
func buildEnvelope(p *params) (*Graph, error) {
	edges := [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 4}, {1, 4}, {2, 4}, {3, 4}}
	return edgeGraph(p, 5, edges, nil)
}

// edgeGraph materializes n switches and an ordered edge list, with hosts attached first.
func edgeGraph(p *params, n int, edges [][2]int, addr [][]int) (*Graph, error) {
	counts, err := p.hostCounts(n)
	if err != nil {
		return nil, err
	}
	b := p.builder()
	sw := make([]int, n)
	for i := range sw {
		sw[i] = b.AddSwitch()
		if addr != nil {
			b.G.Nodes[sw[i]].Addr = addr[i]
		}
	}
	b.attachHosts(sw, counts)
	for _, e := range edges {
		b.Connect(sw[e[0]], sw[e[1]])
	}
	return b.G, nil
}
