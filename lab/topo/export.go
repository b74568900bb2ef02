package topo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/fabriclab/fabriclab/bounded"
	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/units"
)

// The JSON form is the `lab topo --json` object (docs/architecture.md §Contracts). Beyond the contract's
// fields it carries what an import needs to rebuild the same graph: node coordinates (addr, layer, group,
// vlayer), link ports (a_port, b_port) and link class. Links name nodes, not indices, so files can be written
// by hand; a hand-written file may leave out ports (they are then assigned in link order), rates and delays
// (the file family's rate and delay apply).

type jsonGraph struct {
	Family string            `json:"family"`
	Params map[string]string `json:"params"`
	Nodes  []jsonNode        `json:"nodes"`
	Links  []jsonLink        `json:"links"`
	Stats  *Stats            `json:"stats,omitempty"`
}

type jsonNode struct {
	Name   string `json:"name"`
	Kind   Kind   `json:"kind"`
	Addr   []int  `json:"addr,omitempty"`
	Layer  int    `json:"layer,omitempty"`
	Group  int    `json:"group,omitempty"`
	VLayer int    `json:"vlayer,omitempty"`
}

type jsonLink struct {
	A       string   `json:"a"`
	B       string   `json:"b"`
	RateBps *float64 `json:"rate_bps,omitempty"`
	DelayS  *float64 `json:"delay_s,omitempty"`
	APort   *int     `json:"a_port,omitempty"`
	BPort   *int     `json:"b_port,omitempty"`
	Class   string   `json:"class,omitempty"`
}

// MarshalJSON writes the §8 object, stats included (all-pairs figures only below AllPairsLimit).
func (g *Graph) MarshalJSON() ([]byte, error) { return g.marshalJSON(false) }

func (g *Graph) marshalJSON(allPairs bool) ([]byte, error) {
	jg := jsonGraph{Family: g.Family, Params: g.Params, Nodes: make([]jsonNode, len(g.Nodes)),
		Links: make([]jsonLink, len(g.Links))}
	if jg.Params == nil {
		jg.Params = map[string]string{}
	}
	for i, n := range g.Nodes {
		jg.Nodes[i] = jsonNode{Name: n.Name, Kind: n.Kind, Addr: n.Addr, Layer: n.Layer, Group: n.Group, VLayer: n.VLayer}
	}
	for i, l := range g.Links {
		rate, delay, ap, bp := l.RateBps, l.Delay.Seconds(), l.A.Port, l.B.Port
		jg.Links[i] = jsonLink{A: g.Nodes[l.A.Node].Name, B: g.Nodes[l.B.Node].Name, RateBps: &rate, DelayS: &delay,
			APort: &ap, BPort: &bp, Class: l.Class}
	}
	st := g.StatsBounded(allPairs)
	jg.Stats = &st
	return json.Marshal(jg)
}

// WriteJSON writes the §8 object, indented, with a trailing newline.
func (g *Graph) WriteJSON(w io.Writer) error { return g.WriteJSONStats(w, false) }

// WriteJSONStats is WriteJSON computing the all-pairs statistics whatever the graph's size when
// allPairs is set.
func (g *Graph) WriteJSONStats(w io.Writer, allPairs bool) error {
	data, err := g.marshalJSON(allPairs)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, data, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err = w.Write(buf.Bytes())
	return err
}

// UnmarshalJSON reads the §8 object (stats are ignored: they are recomputed). Links without a rate or
// delay get 100Gbps and 1us; use ReadJSON to choose other defaults.
func (g *Graph) UnmarshalJSON(data []byte) error {
	ng, err := decodeGraph(data, 100e9, clock.Microsecond)
	if err != nil {
		return err
	}
	*g = *ng
	return nil
}

// ReadJSON reads a graph in the §8 form; links that omit rate_bps or delay_s get rateBps and delay.
// Family and params come from the file (family "file" if it names none), so an exported graph
// re-imports as itself.
func ReadJSON(r io.Reader, rateBps float64, delay clock.Time) (*Graph, error) {
	data, err := bounded.ReadAll(r, "topology JSON", bounded.Topology)
	if err != nil {
		return nil, err
	}
	return decodeGraph(data, rateBps, delay)
}

func decodeGraph(data []byte, rateBps float64, delay clock.Time) (*Graph, error) {
	var jg jsonGraph
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&jg); err != nil {
		return nil, fmt.Errorf("topology JSON: %w", err)
	}
	g := &Graph{Family: jg.Family, Params: jg.Params}
	if g.Family == "" {
		g.Family = "file"
	}
	if g.Params == nil {
		g.Params = map[string]string{}
	}
	byName := map[string]int{}
	for i, n := range jg.Nodes {
		if n.Name == "" {
			return nil, fmt.Errorf("topology JSON: nodes[%d]: missing name", i)
		}
		if _, dup := byName[n.Name]; dup {
			return nil, fmt.Errorf("topology JSON: nodes[%d]: name %q used twice", i, n.Name)
		}
		byName[n.Name] = i
		nd := Node{Name: n.Name, Kind: n.Kind, Addr: n.Addr, Layer: n.Layer, Group: n.Group, VLayer: n.VLayer}
		switch n.Kind {
		case Host:
			nd.Index = len(g.Hosts)
			g.Hosts = append(g.Hosts, i)
		case Switch:
			nd.Index = len(g.Switches)
			g.Switches = append(g.Switches, i)
		default:
			return nil, fmt.Errorf("topology JSON: nodes[%d] (%s): kind %q, want host or switch", i, n.Name, n.Kind)
		}
		g.Nodes = append(g.Nodes, nd)
	}
	explicit := 0
	for _, l := range jg.Links {
		if l.APort != nil || l.BPort != nil {
			explicit++
		}
	}
	if explicit != 0 && explicit != len(jg.Links) {
		return nil, fmt.Errorf("topology JSON: %d of %d links give a_port/b_port; give them on every link or none", explicit, len(jg.Links))
	}
	for i, l := range jg.Links {
		a, ok := byName[l.A]
		if !ok {
			return nil, fmt.Errorf("topology JSON: links[%d]: a: no node named %q", i, l.A)
		}
		b, ok := byName[l.B]
		if !ok {
			return nil, fmt.Errorf("topology JSON: links[%d]: b: no node named %q", i, l.B)
		}
		lk := Link{A: End{Node: a}, B: End{Node: b}, RateBps: rateBps, Delay: delay, Class: l.Class}
		if l.RateBps != nil {
			if !(*l.RateBps > 0 && *l.RateBps <= units.MaxRate) {
				return nil, fmt.Errorf("topology JSON: links[%d]: rate_bps %v is not in (0, %g]", i, *l.RateBps, units.MaxRate)
			}
			lk.RateBps = *l.RateBps
		}
		if l.DelayS != nil {
			if !(*l.DelayS >= 0 && *l.DelayS <= units.MaxTime.Seconds()) {
				return nil, fmt.Errorf("topology JSON: links[%d]: delay_s %v is not in [0, %.0f]", i, *l.DelayS, units.MaxTime.Seconds())
			}
			lk.Delay = clock.FromSeconds(*l.DelayS)
		}
		if explicit > 0 {
			// Ports are one byte in source routes; a port of 1e9 would allocate a billion-entry table.
			if l.APort == nil || l.BPort == nil || *l.APort < 0 || *l.BPort < 0 || *l.APort > MaxPort || *l.BPort > MaxPort {
				return nil, fmt.Errorf("topology JSON: links[%d]: a_port and b_port must both be given, in 0..%d", i, MaxPort)
			}
			lk.A.Port, lk.B.Port = *l.APort, *l.BPort
			for _, e := range []End{lk.A, lk.B} {
				ps := &g.Nodes[e.Node].Ports
				for len(*ps) <= e.Port {
					*ps = append(*ps, -1)
				}
				if (*ps)[e.Port] != -1 {
					return nil, fmt.Errorf("topology JSON: links[%d]: port %d of %s is already used by links[%d]", i, e.Port, g.Nodes[e.Node].Name, (*ps)[e.Port])
				}
				(*ps)[e.Port] = i
			}
		} else {
			lk.A.Port = len(g.Nodes[a].Ports)
			g.Nodes[a].Ports = append(g.Nodes[a].Ports, i)
			lk.B.Port = len(g.Nodes[b].Ports)
			g.Nodes[b].Ports = append(g.Nodes[b].Ports, i)
		}
		g.Links = append(g.Links, lk)
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("topology JSON: %w", err)
	}
	return g, nil
}

// MaxPort is the largest port number a file may give: source routes hold ports in one byte.
const MaxPort = 255

func init() {
	// format=json (docs/architecture.md §Contracts; links may omit rate and delay) or hpcc (HPCC's
	// topology.txt, ReadHPCC).
	register("file", []paramSpec{{name: "path", required: true}, {name: "format", def: "json"}}, func(p *params) (*Graph, error) {
		format := p.m["format"]
		if format != "json" && format != "hpcc" {
			return nil, p.errf("format", "want json or hpcc")
		}
		f, err := bounded.Open(p.m["path"])
		if err != nil {
			return nil, p.errf("path", "%v", err)
		}
		defer f.Close()
		if format == "hpcc" {
			// Every HPCC link names its rate and delay, so rate= and delay= (defaults for links that
			// omit them, as in JSON) have nothing to fill.
			g, err := ReadHPCC(bufio.NewReader(f))
			if err != nil {
				return nil, p.errf("path", "%v", err)
			}
			g.Params = map[string]string{"path": p.m["path"], "format": "hpcc"}
			return g, nil
		}
		g, err := ReadJSON(bufio.NewReader(f), p.rateBps, p.delay)
		if err != nil {
			return nil, p.errf("path", "%v", err)
		}
		return g, nil
	})
}

// WriteDOT writes the graph for Graphviz: hosts as ellipses, switches as boxes, port numbers at
// each link's ends, and the link class as its label where a family sets one.
func (g *Graph) WriteDOT(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "graph %s {\n", strconv.Quote(g.Family))
	for _, n := range g.Nodes {
		shape := "box"
		if n.Kind == Host {
			shape = "ellipse"
		}
		fmt.Fprintf(bw, "  %s [shape=%s];\n", strconv.Quote(n.Name), shape)
	}
	for _, l := range g.Links {
		fmt.Fprintf(bw, "  %s -- %s [taillabel=%d, headlabel=%d", strconv.Quote(g.Nodes[l.A.Node].Name),
			strconv.Quote(g.Nodes[l.B.Node].Name), l.A.Port, l.B.Port)
		if l.Class != "" && l.Class != "host" {
			fmt.Fprintf(bw, ", label=%s", strconv.Quote(l.Class))
		}
		bw.WriteString("];\n")
	}
	bw.WriteString("}\n")
	return bw.Flush()
}
