// Package nstest holds what the tests of the netns harness packages share: a root check and small
// hand-built fabrics.
package nstest

import (
	"fmt"
	"os"
	"testing"

	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// NeedRoot skips t unless the test runs as root.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces")
	}
}

// Tiny: h0 - s0 - h1, plus s0 - s1 - h2 so one switch has three ports.
func Tiny() *topo.Graph {
	b := topo.NewBuilder("tiny", nil, 1e9, 0)
	h0, h1, h2 := b.AddHost(), b.AddHost(), b.AddHost()
	s0, s1 := b.AddSwitch(), b.AddSwitch()
	b.Connect(h0, s0)
	b.Connect(h1, s0)
	b.Connect(s0, s1)
	b.Connect(h2, s1)
	return b.G
}

// NDCHand builds NDC(n,1) (BCube(n,1)) without the topo builders: n*n hosts with 2 ports, 2n
// switches of n ports.
func NDCHand(n int) *topo.Graph {
	b := topo.NewBuilder("ndc", map[string]string{"n": fmt.Sprint(n), "k": "1"}, 1e9, 0)
	hosts := make([]int, n*n)
	for i := range hosts {
		hosts[i] = b.AddHost()
	}
	for level := 0; level < 2; level++ {
		for s := 0; s < n; s++ {
			sw := b.AddSwitch()
			for d := 0; d < n; d++ {
				if level == 0 {
					b.Connect(hosts[s*n+d], sw)
				} else {
					b.Connect(hosts[d*n+s], sw)
				}
			}
		}
	}
	return b.G
}

// Lab builds the lab of spec y.
func Lab(t *testing.T, y string) *lab.Lab {
	t.Helper()
	s, err := spec.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
