package topo

import "fmt"

func init() {
	register("dragonfly", []paramSpec{
		{name: "p", required: true}, {name: "a", required: true}, {name: "h", required: true},
		{name: "groups"}, {name: "arrangement", def: "absolute"},
	}, buildDragonfly)
}

// buildDragonfly builds Dragonfly(p,a,h) (telemetry paper §II-A, §IV-A): groups of a switches joined by a
// full mesh of "local" links, p hosts per switch, h "global" links per switch. The paper's topologies
// are the maximum size, g = a·h+1 groups with exactly one global link between every pair of groups;
// that is the default. groups=G (2 ≤ G ≤ a·h+1, a·h divisible by G−1) builds a smaller Dragonfly with
// a·h/(G−1) parallel global links between every pair of groups.
//
// Numbering: switch i of group q is s(q·a+i), Node.Group = q, Node.Addr = [q, i]; host j of that
// switch is h((q·a+i)·p+j) with the same Group and Addr [q, i, j].
//
// Ports of a switch: hosts 0..p−1, then local links to the other switches of its group in increasing
// order, then its global ports. Global port t (0..h−1) of switch i of group q is the group's global
// port k = i·h+t. Port k leads to the target at offset o = k mod (G−1) (parallel link number k/(G−1)):
//   - arrangement=absolute (Kim et al.'s consecutive, our default): group o if o < q, else o+1;
//   - arrangement=relative: group (q+o+1) mod G.
//
// The paper does not say which arrangement it used.
func buildDragonfly(p *params) (*Graph, error) {
	hp, err := p.int("p", 1)
	if err != nil {
		return nil, err
	}
	a, err := p.int("a", 1)
	if err != nil {
		return nil, err
	}
	h, err := p.int("h", 1)
	if err != nil {
		return nil, err
	}
	// Named by the product, not one key: p=100000 a=4 is too large for its p, not its a.
	if float64(a)*float64(h) > maxNodes || (float64(a)*float64(h)+1)*float64(a)*float64(hp+1) > maxNodes {
		return nil, &ParamError{Family: p.family, Param: "p, a, h", Reason: fmt.Sprintf(
			"Dragonfly(p=%d, a=%d, h=%d) has (a·h+1)·a·(p+1) = %.4g nodes, more than %d", hp, a, h,
			(float64(a)*float64(h)+1)*float64(a)*float64(hp+1), maxNodes)}
	}
	g := a*h + 1
	if p.has("groups") {
		if g, err = p.int("groups", 2); err != nil {
			return nil, err
		}
		if g > a*h+1 {
			return nil, p.errf("groups", "at most a·h+1 = %d: each group has only a·h = %d global ports and needs one to every other group", a*h+1, a*h)
		}
		if (a*h)%(g-1) != 0 {
			return nil, p.errf("groups", "a·h = %d global ports per group cannot be split evenly over %d other groups", a*h, g-1)
		}
	}
	p.m["groups"] = itoa(g)
	relative := false
	switch p.m["arrangement"] {
	case "absolute":
	case "relative":
		relative = true
	default:
		return nil, p.errf("arrangement", "want absolute or relative")
	}
	target := func(q, k int) int {
		o := k % (g - 1)
		if relative {
			return (q + o + 1) % g
		}
		if o < q {
			return o
		}
		return o + 1
	}
	// port returns the global port index on group q whose parallel link number is m and whose target is r.
	port := func(q, r, m int) int {
		var o int
		if relative {
			o = ((r-q-1)%g + g) % g
		} else if r < q {
			o = r
		} else {
			o = r - 1
		}
		return m*(g-1) + o
	}

	b := p.builder()
	G := b.G
	sw := make([][]int, g)
	for q := 0; q < g; q++ {
		for i := 0; i < a; i++ {
			s := b.AddSwitch()
			G.Nodes[s].Group, G.Nodes[s].Addr = q, []int{q, i}
			sw[q] = append(sw[q], s)
		}
	}
	var all []int
	for q := range sw {
		all = append(all, sw[q]...)
	}
	counts := make([]int, len(all))
	for i := range counts {
		counts[i] = hp
	}
	b.attachHosts(all, counts)
	for _, hidx := range G.Hosts {
		n := &G.Nodes[hidx]
		s := G.Nodes[G.Peer(hidx, 0).Node]
		n.Addr = []int{s.Addr[0], s.Addr[1], n.Index % hp}
	}
	for q := 0; q < g; q++ {
		for i := 0; i < a; i++ {
			for j := i + 1; j < a; j++ {
				b.ConnectWith(sw[q][i], sw[q][j], b.RateBps, b.Delay, "local")
			}
		}
	}
	// Global ports sit at fixed indices (see above), so they are placed explicitly rather than appended:
	// with the relative arrangement a switch does not meet its peers in port order.
	base := hp + a - 1
	for _, s := range all {
		for t := 0; t < h; t++ {
			G.Nodes[s].Ports = append(G.Nodes[s].Ports, -1)
		}
	}
	for q := 0; q < g; q++ {
		for k := 0; k < a*h; k++ {
			r := target(q, k)
			if r < q {
				continue // placed from the lower group
			}
			m := k / (g - 1)
			k2 := port(r, q, m)
			b.connectAt(sw[q][k/h], base+k%h, sw[r][k2/h], base+k2%h, "global")
		}
	}
	return G, nil
}

// connectAt links port pa of node a to port pc of node c; both slots must already exist and be free
// (-1). Validate catches a slot left free.
func (b *Builder) connectAt(a, pa, c, pc int, class string) int {
	g := b.G
	l := len(g.Links)
	g.Links = append(g.Links, Link{A: End{Node: a, Port: pa}, B: End{Node: c, Port: pc},
		RateBps: b.RateBps, Delay: b.Delay, Class: class})
	if g.Nodes[a].Ports[pa] != -1 || g.Nodes[c].Ports[pc] != -1 {
		panic("topo: connectAt onto a used port")
	}
	g.Nodes[a].Ports[pa] = l
	g.Nodes[c].Ports[pc] = l
	return l
}
