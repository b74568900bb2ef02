package virtual_test

import (
	"context"
	"fmt"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"testing"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// coreBytes runs yaml and returns the bytes each core switch (fat-tree layer 2) sent.
func coreBytes(t *testing.T, yaml string) []uint64 {
	t.Helper()
	l, f := virtual.FabricOf(t, yaml)
	if res := f.Run(context.Background()); !res.AllDone {
		t.Fatalf("flows did not complete: %+v", res)
	}
	var out []uint64
	for n, nd := range l.Graph.Nodes {
		if nd.Kind != topo.Switch || nd.Layer != 2 {
			continue
		}
		var b uint64
		for _, p := range f.Switches[n].Counters().Ports {
			b += p.SentBytes
		}
		out = append(out, b)
	}
	return out
}

// TestECMPSpreadsOverEveryCore: four random permutations on a fat-tree k=8 (448 inter-pod flows over 16
// core switches) put bytes on every core, and no core carries more than 1.6x the mean. With one hash
// seed on every switch (before per-switch salts) an aggregation switch repeats the edge switch's choice
// and only 4 of the 16 cores carry bytes.
func TestECMPSpreadsOverEveryCore(t *testing.T) {
	for _, seed := range []int{1, 2, 3} {
		yaml := fmt.Sprintf(`
name: ecmp-spread
seed: %d
duration: 10ms
topology: {family: fattree, k: 8, link: {rate: 100Gbps, delay: 1us}}
routing: {algorithm: shortest}
switch: {flow_control: pfc}
host: {transport: lossless, cc: none}
workload:
  - {kind: permutation, size: 20KB}
  - {kind: permutation, size: 20KB}
  - {kind: permutation, size: 20KB}
  - {kind: permutation, size: 20KB}
`, seed)
		bytes := coreBytes(t, yaml)
		if len(bytes) != 16 {
			t.Fatalf("seed %d: %d core switches, want 16", seed, len(bytes))
		}
		var sum, hi uint64
		lo := bytes[0]
		for _, b := range bytes {
			sum += b
			hi, lo = max(hi, b), min(lo, b)
		}
		mean := float64(sum) / float64(len(bytes))
		t.Logf("seed %d: core bytes min %.2f max %.2f of the mean", seed, float64(lo)/mean, float64(hi)/mean)
		if lo == 0 {
			t.Errorf("seed %d: a core switch carried no bytes: %v", seed, bytes)
		}
		if float64(hi) > 1.6*mean {
			t.Errorf("seed %d: a core carried %.2fx the mean (%v), want at most 1.6x", seed, float64(hi)/mean, bytes)
		}
	}
}
