package topo

func init() {
	register("ndc", []paramSpec{
		{name: "n", required: true}, {name: "k", required: true},
		{name: "rail", def: "false"}, {name: "hbd_rate", def: "160Gbps"},
	}, buildNDC)
}

// buildNDC builds NDC(n,k), i.e. BCube(n,k) (PortFC paper §III-A, BCube SIGCOMM'09 addressing).
//
// Hosts: n^(k+1), host h<id> has the BCube address a_0..a_k with id = Σ a_i·n^i, stored in Node.Addr
// with a_0 first. Host port l goes to the host's layer-l switch, so a host's port index is the layer.
//
// Switches: (k+1)·n^k of n ports, layer 0 first (s0..s(n^k−1)), then layer 1, and so on. Within a
// layer, switches are ordered by switch id: the host address with digit l removed, read base n (lowest
// remaining digit least significant); Node.Addr holds those k digits lowest first and Node.Layer the
// layer. Switch port i connects the host whose digit a_l is i (the BCube port rule). For NDC(4,1) this
// is the PortFC paper's Fig. 6 numbering with switches 16..23 renamed s0..s7 (switch 16+a_1 = s(a_1),
// switch 20+a_0 = s(4+a_0)).
//
// rail=true is the Rail-only variant (PortFC §II-A, §V-E): layer-0 switches are the high-bandwidth
// domain inside a server, so layer-0 links run at hbd_rate and are classed "hbd"; higher layers are
// rails at rate, classed "rail". Which layer is the HBD is the paper's Fig. 1(b) reading (PortFC paper
// §II-A); the paper never states it in the text.
func buildNDC(p *params) (*Graph, error) {
	n, err := p.int("n", 2)
	if err != nil {
		return nil, err
	}
	k, err := p.int("k", 0)
	if err != nil {
		return nil, err
	}
	rail, err := p.bool("rail")
	if err != nil {
		return nil, err
	}
	hbd := p.rateBps
	if rail {
		if hbd, err = p.rate("hbd_rate"); err != nil {
			return nil, err
		}
	} else {
		if p.given["hbd_rate"] {
			return nil, p.errf("hbd_rate", "only meaningful with rail=true")
		}
		// A non-rail graph's params should not claim an HBD rate it does not use.
		delete(p.m, "hbd_rate")
	}
	hosts := 1
	for i := 0; i <= k; i++ {
		hosts *= n
		if hosts > maxNodes {
			return nil, p.errf("k", "NDC(%d,%d) has more than %d hosts", n, k, maxNodes)
		}
	}
	perLayer := hosts / n

	b := p.builder()
	g := b.G
	for id := 0; id < hosts; id++ {
		h := b.AddHost()
		g.Nodes[h].Addr = digits(id, n, k+1)
	}
	for l := 0; l <= k; l++ {
		for s := 0; s < perLayer; s++ {
			sw := b.AddSwitch()
			g.Nodes[sw].Layer = l
			g.Nodes[sw].Addr = digits(s, n, k)
		}
	}
	// Layer-major, host-id-minor order gives both port rules at once: a host's layer-l link is its
	// l-th link, and a switch meets its hosts in increasing a_l.
	for l := 0; l <= k; l++ {
		rate, class := p.rateBps, ""
		if rail {
			rate, class = p.rateBps, "rail"
			if l == 0 {
				rate, class = hbd, "hbd"
			}
		}
		for id := 0; id < hosts; id++ {
			b.ConnectWith(g.Hosts[id], g.Switches[l*perLayer+NDCSwitchID(g.Nodes[g.Hosts[id]].Addr, n, l)],
				rate, b.Delay, class)
		}
	}
	return g, nil
}

// NDCSwitchID is the within-layer id of the layer-l switch that host address addr (a_0 first) attaches
// to: the address with digit l removed, read base n. The switch is s(l·n^k + id).
func NDCSwitchID(addr []int, n, l int) int {
	id, mul := 0, 1
	for i, d := range addr {
		if i == l {
			continue
		}
		id += d * mul
		mul *= n
	}
	return id
}

// digits returns v's count base-n digits, least significant first.
func digits(v, n, count int) []int {
	d := make([]int, count)
	for i := range d {
		d[i] = v % n
		v /= n
	}
	return d
}
