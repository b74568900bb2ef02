package topo

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/fabriclab/fabriclab/bounded"
	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/units"
)

// HPCC's topology file (simulation/mix/topology.txt of alibaba-edu/High-Precision-Congestion-Control
// at 9f4be2a, read by scratch/third.cc):
//
//	node_num switch_num link_num
//	switch ids (switch_num of them, whitespace separated)
//	src dst rate delay error_rate        (link_num lines: "0 320 100Gbps 1000ns 0.000000")
//
// Nodes are numbered 0..node_num-1; the ones not listed as switches are servers. third.cc installs a
// device on both ends of each link in file order, so a node's ports are its links in file order, which
// is how ReadHPCC numbers ports (HPCC's if_index = port + 1, device 0 being the loopback; pfc.txt uses it).

// ReadHPCC reads an HPCC topology file. Hosts are h0, h1, ... in ascending HPCC node id, switches s0,
// s1, ... likewise (HPCC's generators number servers first, so h<i> is HPCC node i there). Rates and
// delays are ns-3 strings ("100Gbps", "1000ns", "0.001ms"). A link with a non-zero error rate is
// refused: fabriclab links do not drop frames at random, and a parameter the file sets must act.
// Whatever follows the link_num links the header announces is ignored, as third.cc ignores it (HPCC's
// own mix/topology.txt lists more lines than its header counts).
func ReadHPCC(r io.Reader) (*Graph, error) {
	data, err := bounded.ReadAll(r, "HPCC topology", bounded.Topology)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 64<<10), len(data)+1)
	sc.Split(bufio.ScanWords)
	word := 0
	next := func(what string) (string, error) {
		if !sc.Scan() {
			return "", fmt.Errorf("HPCC topology: ended before %s (after %d words)", what, word)
		}
		word++
		return sc.Text(), nil
	}
	count := func(what string, min, max int) (int, error) {
		w, err := next(what)
		if err != nil {
			return 0, err
		}
		v, err := strconv.Atoi(w)
		if err != nil || v < min || v > max {
			return 0, fmt.Errorf("HPCC topology: %s %q: want an integer in [%d, %d]", what, w, min, max)
		}
		return v, nil
	}
	const maxNodes = 1 << 17
	nodes, err := count("node_num", 1, maxNodes)
	if err != nil {
		return nil, err
	}
	switches, err := count("switch_num", 0, nodes)
	if err != nil {
		return nil, err
	}
	links, err := count("link_num", 0, nodes*MaxPort)
	if err != nil {
		return nil, err
	}
	isSwitch := make([]bool, nodes)
	for i := 0; i < switches; i++ {
		id, err := count(fmt.Sprintf("switch id %d", i+1), 0, nodes-1)
		if err != nil {
			return nil, err
		}
		if isSwitch[id] {
			return nil, fmt.Errorf("HPCC topology: switch id %d listed twice", id)
		}
		isSwitch[id] = true
	}
	b := NewBuilder("file", map[string]string{"format": "hpcc"}, 0, 0)
	ours := make([]int, nodes)
	for id := 0; id < nodes; id++ {
		if !isSwitch[id] {
			ours[id] = b.AddHost()
		}
	}
	for id := 0; id < nodes; id++ {
		if isSwitch[id] {
			ours[id] = b.AddSwitch()
		}
	}
	for i := 0; i < links; i++ {
		what := fmt.Sprintf("link %d", i+1)
		a, err := count(what+" src", 0, nodes-1)
		if err != nil {
			return nil, err
		}
		c, err := count(what+" dst", 0, nodes-1)
		if err != nil {
			return nil, err
		}
		if a == c {
			return nil, fmt.Errorf("HPCC topology: %s joins node %d to itself", what, a)
		}
		rs, err := next(what + " rate")
		if err != nil {
			return nil, err
		}
		rate, err := units.ParseRate(rs)
		if err != nil {
			return nil, fmt.Errorf("HPCC topology: %s: %v", what, err)
		}
		ds, err := next(what + " delay")
		if err != nil {
			return nil, err
		}
		delay, err := units.ParseTime(ds)
		if err != nil {
			return nil, fmt.Errorf("HPCC topology: %s: %v", what, err)
		}
		es, err := next(what + " error rate")
		if err != nil {
			return nil, err
		}
		if e, err := strconv.ParseFloat(es, 64); err != nil || e != 0 {
			return nil, fmt.Errorf("HPCC topology: %s error rate %q: fabriclab links never drop at random, only 0 is accepted", what, es)
		}
		if len(b.G.Nodes[ours[a]].Ports) >= MaxPort || len(b.G.Nodes[ours[c]].Ports) >= MaxPort {
			return nil, fmt.Errorf("HPCC topology: %s: a node with more than %d ports", what, MaxPort)
		}
		b.ConnectWith(ours[a], ours[c], rate, delay, "")
	}
	if err := b.G.Validate(); err != nil {
		return nil, fmt.Errorf("HPCC topology: %w", err)
	}
	return b.G, nil
}

// WriteHPCC writes g as an HPCC topology file: hosts are HPCC nodes 0..H-1 (h<i> is node i, as HPCC's
// flow.txt and lab's flow.txt number them), switches H.. in s order; links in g's link order, so each
// node's ports keep their numbers where g numbered them in link order (every built-in family does).
// Rates are written in bps ("100000000000bps"), delays in ns (ps when not whole), error rates 0.
func (g *Graph) WriteHPCC(w io.Writer) error {
	if !g.portsInLinkOrder() {
		return fmt.Errorf("HPCC topology: a node's ports are not in link order, and an HPCC file cannot name ports (they would be renumbered)")
	}
	id := make([]int, len(g.Nodes))
	for i, n := range g.Hosts {
		id[n] = i
	}
	for i, n := range g.Switches {
		id[n] = len(g.Hosts) + i
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%d %d %d\n", len(g.Nodes), len(g.Switches), len(g.Links))
	sw := make([]string, len(g.Switches))
	for i := range g.Switches {
		sw[i] = strconv.Itoa(len(g.Hosts) + i)
	}
	fmt.Fprintln(bw, strings.Join(sw, " "))
	for _, l := range g.Links {
		delay := fmt.Sprintf("%dns", int64(l.Delay/clock.Nanosecond))
		if l.Delay%clock.Nanosecond != 0 {
			delay = fmt.Sprintf("%dps", int64(l.Delay/clock.Picosecond))
		}
		fmt.Fprintf(bw, "%d %d %sbps %s 0\n", id[l.A.Node], id[l.B.Node], strconv.FormatFloat(l.RateBps, 'f', -1, 64), delay)
	}
	return bw.Flush()
}

// portsInLinkOrder reports whether every node's ports are its links in ascending link order: then an
// HPCC file, which cannot name ports, keeps g's port numbers.
func (g *Graph) portsInLinkOrder() bool {
	for _, n := range g.Nodes {
		if !sort.IntsAreSorted(n.Ports) {
			return false
		}
	}
	return true
}
