// Package topo builds data-center topologies as one graph type: nodes (hosts and switches) with ports at
// stable indices, and links with a rate and a propagation delay. Builders check their parameters and say
// what is wrong; nothing here touches the system.
package topo

import (
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
)

// Kind is a node's role.
type Kind string

const (
	Host   Kind = "host"
	Switch Kind = "switch"
)

// End is one end of a link: a node and the port index on it.
type End struct {
	Node int `json:"node"`
	Port int `json:"port"`
}

// Node is a host or a switch. Ports[i] is the index into Graph.Links of the link on port i.
type Node struct {
	Name  string `json:"name"`
	Kind  Kind   `json:"kind"`
	Ports []int  `json:"ports"`
	// Index is the host number (h<Index>) or the switch number (s<Index>).
	Index int `json:"index"`
	// Family-specific coordinates, documented by each builder. Addr is the BCube digit array
	// (a_0 first) for NDC hosts and the switch id digits for NDC switches.
	Addr  []int `json:"addr,omitempty"`
	Layer int   `json:"layer,omitempty"` // NDC switch layer; fat-tree tier (0 edge, 1 agg, 2 core)
	Group int   `json:"group,omitempty"` // Dragonfly group; fat-tree pod
	// VLayer is the virtual layer a switch belongs to (FC/FC+); 0 where unused.
	VLayer int `json:"vlayer,omitempty"`
}

// Link joins two ports.
type Link struct {
	A, B    End
	RateBps float64
	Delay   clock.Time
	// Class tags links for families that distinguish them: "hbd" or "rail" (Rail-only NDC), "local" or
	// "global" (Dragonfly), "host" for host attachments. Empty otherwise.
	Class string
}

// Other returns the end of l that is not at node n (the first end if l is a self-loop).
func (l *Link) Other(n int) End {
	if l.A.Node == n {
		return l.B
	}
	return l.A
}

// Graph is a topology. Callers must not assume an order of Nodes; Hosts and Switches list node indices
// in name order (h0, h1, ... and s0, s1, ...).
type Graph struct {
	Family   string
	Params   map[string]string
	Nodes    []Node
	Links    []Link
	Hosts    []int // node index of h0, h1, ...
	Switches []int // node index of s0, s1, ...
}

// Peer returns the node and port at the far end of node n's port p.
func (g *Graph) Peer(n, p int) End {
	return g.Links[g.Nodes[n].Ports[p]].Other(n)
}

// LinkAt returns the link on node n's port p.
func (g *Graph) LinkAt(n, p int) *Link { return &g.Links[g.Nodes[n].Ports[p]] }

// Lookup returns the node index for a name, or an error naming it.
func (g *Graph) Lookup(name string) (int, error) {
	for i := range g.Nodes {
		if g.Nodes[i].Name == name {
			return i, nil
		}
	}
	return -1, fmt.Errorf("topology %s has no device %q", g.Family, name)
}

// Builder helps families assemble a Graph with names and ports in a canonical order.
type Builder struct {
	G       *Graph
	RateBps float64
	Delay   clock.Time
	limit   int // more nodes panic with tooMany (BuildWithin recovers it); 0: none
}

// NewBuilder starts a graph for a family with default link rate and delay.
func NewBuilder(family string, params map[string]string, rateBps float64, delay clock.Time) *Builder {
	return &Builder{G: &Graph{Family: family, Params: params}, RateBps: rateBps, Delay: delay}
}

// AddHost appends host h<len(Hosts)> and returns its node index.
func (b *Builder) AddHost() int {
	g := b.G
	if b.limit > 0 && len(g.Nodes) >= b.limit {
		panic(tooMany{b.limit})
	}
	i := len(g.Nodes)
	g.Nodes = append(g.Nodes, Node{Name: fmt.Sprintf("h%d", len(g.Hosts)), Kind: Host, Index: len(g.Hosts)})
	g.Hosts = append(g.Hosts, i)
	return i
}

// AddSwitch appends switch s<len(Switches)> and returns its node index.
func (b *Builder) AddSwitch() int {
	g := b.G
	if b.limit > 0 && len(g.Nodes) >= b.limit {
		panic(tooMany{b.limit})
	}
	i := len(g.Nodes)
	g.Nodes = append(g.Nodes, Node{Name: fmt.Sprintf("s%d", len(g.Switches)), Kind: Switch, Index: len(g.Switches)})
	g.Switches = append(g.Switches, i)
	return i
}

// Connect links the next free port of a to the next free port of b with the builder's rate and delay,
// and returns the link index.
func (b *Builder) Connect(a, c int) int {
	return b.ConnectWith(a, c, b.RateBps, b.Delay, "")
}

// ConnectWith links a and c with an explicit rate, delay and class.
func (b *Builder) ConnectWith(a, c int, rate float64, delay clock.Time, class string) int {
	g := b.G
	l := len(g.Links)
	g.Links = append(g.Links, Link{
		A: End{Node: a, Port: len(g.Nodes[a].Ports)}, B: End{Node: c, Port: len(g.Nodes[c].Ports)},
		RateBps: rate, Delay: delay, Class: class,
	})
	g.Nodes[a].Ports = append(g.Nodes[a].Ports, l)
	g.Nodes[c].Ports = append(g.Nodes[c].Ports, l)
	return l
}
