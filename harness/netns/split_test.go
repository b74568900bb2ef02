package netns

import (
	"testing"

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
