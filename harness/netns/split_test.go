package netns

import (
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// --agents N splits the fabric into N connected parts of near-equal size, each with hosts and switches
// (dealing hosts to one agent and switches to the other put every frame on a cross-process hop).
func TestConnectedParts(t *testing.T) {
	l := buildNetns(t, "topology: {family: ndc, n: 4, k: 1}\nhost: {transport: lossless}")
	dl, err := Dilate(l, 1000)
	if err != nil {
		t.Fatal(err)
	}
	g := l.Graph
	for _, n := range []int{2, 3, 4} {
		part := connectedParts(g, dl, n)
		if len(part) != len(g.Nodes) {
			t.Fatalf("n=%d: %d of %d devices assigned", n, len(part), len(g.Nodes))
		}
		members := map[int][]int{}
		for v, a := range part {
			members[a] = append(members[a], v)
		}
		if len(members) != n {
			t.Errorf("n=%d: %d parts", n, len(members))
		}
		for a, vs := range members {
			in := map[int]bool{}
			hosts, switches := 0, 0
			for _, v := range vs {
				in[v] = true
				if g.Nodes[v].Kind == topo.Host {
					hosts++
				} else {
					switches++
				}
			}
			// Connected: a search from one member inside the part reaches every member.
			seen := map[int]bool{vs[0]: true}
			stack := []int{vs[0]}
			for len(stack) > 0 {
				v := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				for p := range g.Nodes[v].Ports {
					if w := g.Peer(v, p).Node; in[w] && !seen[w] {
						seen[w] = true
						stack = append(stack, w)
					}
				}
			}
			if len(seen) != len(vs) {
				t.Errorf("n=%d: part %d is not connected (%d of %d reached)", n, a, len(seen), len(vs))
			}
			if hosts == 0 || switches == 0 {
				t.Errorf("n=%d: part %d has %d hosts, %d switches", n, a, hosts, switches)
			}
			if share := (len(g.Nodes) + n - 1) / n; len(vs) > share+share/2 {
				t.Errorf("n=%d: part %d has %d devices, share %d", n, a, len(vs), share)
			}
		}
	}
}

// The traffic split cuts no more expected frames than the equal-size connected parts it starts from, and
// keeps every agent's expected frame-hops within 10% of an equal share.
func TestTrafficParts(t *testing.T) {
	for _, topoLine := range []string{"topology: {family: fattree, k: 4}", "topology: {family: ndc, n: 4, k: 1}"} {
		y := "name: tp\nbackend: netns\ndilation: 1000\nduration: 2ms\nseed: 3\nhost: {transport: lossless}\n" + topoLine +
			"\nworkload: [{kind: poisson, cdf: websearch, load: 0.5, duration: 2ms}]\n"
		s, err := spec.Parse([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		l, err := lab.Build(s)
		if err != nil {
			t.Fatal(err)
		}
		dl, err := Dilate(l, 1000)
		if err != nil {
			t.Fatal(err)
		}
		w := LinkFrames(l)
		cutOf := func(part map[int]int) float64 {
			c := 0.0
			for li, lk := range l.Graph.Links {
				if part[lk.A.Node] != part[lk.B.Node] {
					c += w[li]
				}
			}
			return c
		}
		for _, n := range []int{2, 3} {
			part, cut := TrafficParts(l, dl, n)
			if len(part) != len(l.Graph.Nodes) || cut.Agents != n {
				t.Fatalf("%s n=%d: %d of %d devices in %d agents", topoLine, n, len(part), len(l.Graph.Nodes), cut.Agents)
			}
			conn := connectedParts(l.Graph, dl, n)
			before := cutOf(conn)
			// Balance comes first: only where the connected parts were within the share must the cut not grow.
			connLoad := make([]float64, n)
			for v, a := range conn {
				connLoad[a]++
				for _, li := range l.Graph.Nodes[v].Ports {
					connLoad[a] += w[li]
				}
			}
			balanced := slices.Max(connLoad) <= 1.1*floats.Sum(connLoad)/float64(n)
			if cut.Frames != cutOf(part) || balanced && cut.Frames > before {
				t.Errorf("%s n=%d: cut %.0f expected frames (reported %.0f), connected parts cut %.0f", topoLine, n, cutOf(part), cut.Frames, before)
			}
			sum, most := 0.0, 0.0
			for _, x := range cut.Load {
				sum += x
				most = max(most, x)
			}
			if most > 1.1*sum/float64(n)+1 {
				t.Errorf("%s n=%d: loads %v, the largest over 1.1 x the mean", topoLine, n, cut.Load)
			}
			t.Logf("%s n=%d: %s (connected parts: %.0f)", topoLine, n, cut, before)
		}
	}
}

// Every flow dependency stays inside one agent (dependencyGroups): a completion releases its dependents
// at its own instant, which lockstep cannot carry to another agent in time.
func TestTrafficPartsKeepsDependencies(t *testing.T) {
	for _, c := range []struct{ topo, workload string }{
		{"{family: ndc, n: 4, k: 1}", "{kind: ps, server: h0, workers: 4, push_size: 200KB, broadcast_size: 100KB, rounds: 2}"},
		{"{family: ndc, n: 4, k: 1}", "{kind: moe, experts: 8, top_k: 2, tokens: 64, token_size: 4KB, zipf: 1.0, layers: 2}"},
		{"{family: fattree, k: 4}", "{kind: ps, server: h0, workers: 6, push_size: 200KB, broadcast_size: 100KB, rounds: 2}"},
	} {
		y := "name: dep\nbackend: netns\ndilation: 1000\nduration: 5ms\nseed: 1\nhost: {transport: lossless}\ntopology: " + c.topo +
			"\nworkload: [" + c.workload + "]\n"
		s, err := spec.Parse([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		l, err := lab.Build(s)
		if err != nil {
			t.Fatal(err)
		}
		dl, err := Dilate(l, 1000)
		if err != nil {
			t.Fatal(err)
		}
		src := map[uint32]int{}
		deps := 0
		for _, f := range l.Flows {
			src[f.ID] = f.SrcNode
			deps += len(f.After)
		}
		if deps == 0 {
			t.Fatalf("%s: no dependencies to keep", c.workload)
		}
		for _, n := range []int{2, 3} {
			part, cut := TrafficParts(l, dl, n)
			used := map[int]bool{}
			for _, a := range part {
				used[a] = true
			}
			if len(part) != len(l.Graph.Nodes) || cut.Agents != len(used) || cut.Agents < 2 {
				t.Fatalf("%s n=%d: %d of %d devices, %d parts used, %d reported", c.workload, n, len(part), len(l.Graph.Nodes), len(used), cut.Agents)
			}
			for a := range cut.Agents {
				if !used[a] {
					t.Errorf("%s n=%d: part %d is empty", c.workload, n, a)
				}
			}
			for _, f := range l.Flows {
				for _, id := range f.After {
					if part[f.SrcNode] != part[src[id]] {
						t.Errorf("%s n=%d: flow %d (node %d, agent %d) waits for flow %d (node %d, agent %d)", c.workload, n,
							f.ID, f.SrcNode, part[f.SrcNode], id, src[id], part[src[id]])
					}
				}
			}
			t.Logf("%s n=%d: %s", c.workload, n, cut)
		}
	}
}
