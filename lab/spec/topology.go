package spec

// TopologyParams converts the topology section into what the topology builders take: the family name
// and string parameters as typed, with link.rate and link.delay as "rate" and "delay". Rate and delay
// are written exactly (e.g. "100Gbps", "1us"), so the builder parses back the same values.
func (s *Spec) TopologyParams() (family string, params map[string]string) {
	t := &s.Topology
	params = make(map[string]string, len(t.Params)+2)
	for k, v := range t.Params {
		params[k] = v
	}
	if t.Link.Rate > 0 {
		params["rate"] = formatRate(float64(t.Link.Rate))
	}
	if t.Link.Delay > 0 {
		params["delay"] = formatTime(t.Link.Delay.Clock())
	}
	return t.Family, params
}

// Clone returns a deep copy, so a suite can derive variants (flow control, routing, load sweeps) from
// one base spec without aliasing its slices and maps.
func (s *Spec) Clone() *Spec {
	c := *s
	c.Topology.Params = cloneMap(s.Topology.Params)
	c.Expect = cloneMap(s.Expect)
	c.Sweep = cloneMap(s.Sweep)
	// lines is shared: it is never written after decoding.
	c.Stop = cloneBool(s.Stop)
	c.Switch.ECN.Enabled = cloneBool(s.Switch.ECN.Enabled)
	c.Host.BDPCap = cloneBool(s.Host.BDPCap)
	if s.Workload != nil {
		c.Workload = make([]Workload, len(s.Workload))
		for i, w := range s.Workload {
			w.Hosts = append([]string(nil), w.Hosts...)
			w.Pairs = append([]Pair(nil), w.Pairs...)
			if w.List != nil {
				list := make([]Flow, len(w.List))
				for j, f := range w.List {
					f.Via = append([]string(nil), f.Via...)
					f.Path = append([]string(nil), f.Path...)
					list[j] = f
				}
				w.List = list
			}
			c.Workload[i] = w
		}
	}
	return &c
}

func cloneMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}
