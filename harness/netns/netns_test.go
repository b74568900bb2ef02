package netns

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/lab/topo"
	"golang.org/x/sys/unix"
)

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces")
	}
}

// tiny: h0 - s0 - h1, plus s0 - s1 - h2 so one switch has three ports.
func tiny() *topo.Graph {
	b := topo.NewBuilder("tiny", nil, 1e9, 0)
	h0, h1, h2 := b.AddHost(), b.AddHost(), b.AddHost()
	s0, s1 := b.AddSwitch(), b.AddSwitch()
	b.Connect(h0, s0)
	b.Connect(h1, s0)
	b.Connect(s0, s1)
	b.Connect(h2, s1)
	return b.G
}

// ndcHand builds NDC(n,1) (BCube(n,1)) without the topo builders: n*n hosts with 2 ports, 2n
// switches of n ports.
func ndcHand(n int) *topo.Graph {
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

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"a", "lab1", "my-lab", "0", "abcdefghijklmnop"} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-a", "a-", "A", "a_b", "a.b", "abcdefghijklmnopq", "a/b"} {
		if err := ValidateName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestUpDownTiny(t *testing.T) {
	needRoot(t)
	name := "ut-tiny"
	g := tiny()
	lab, err := Up(context.Background(), name, g, Options{MTU: 9000})
	if err != nil {
		t.Fatal(err)
	}
	defer Down(name)
	for i, n := range g.Nodes {
		h, err := lab.Handle(n.Name)
		if err != nil {
			t.Fatal(err)
		}
		links, err := h.LinkList()
		h.Close()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, l := range links {
			names = append(names, l.Attrs().Name)
			if l.Attrs().Name == "lo" {
				continue
			}
			if l.Attrs().MTU != 9000 || l.Attrs().TxQLen != DefaultTxQueueLen || l.Attrs().RawFlags&unix.IFF_LOWER_UP == 0 {
				// IFF_LOWER_UP (up and carrier) is immediate; OperState lags behind through linkwatch.
				t.Errorf("%s %s: mtu %d qlen %d flags %x", n.Name, l.Attrs().Name, l.Attrs().MTU, l.Attrs().TxQLen, l.Attrs().RawFlags)
			}
		}
		if len(names) != 1+len(g.Nodes[i].Ports) {
			t.Errorf("%s has links %v", n.Name, names)
		}
		o, err := lab.Offloads(n.Name, "p0")
		if err != nil {
			t.Fatal(err)
		}
		if o.TxChecksum || o.TSO || o.GSO || o.GRO || len(o.On) > 0 {
			t.Errorf("%s p0 offloads %+v", n.Name, o)
		}
	}
	// IPv6 is off inside: no link-local addresses on the ports.
	if err := lab.Do("s0", func() error {
		b, err := os.ReadFile("/proc/sys/net/ipv6/conf/p0/disable_ipv6")
		if err == nil && strings.TrimSpace(string(b)) != "1" {
			return fmt.Errorf("disable_ipv6 on s0 p0 is %q", b)
		}
		return err
	}); err != nil {
		t.Error(err)
	}
	// A second Up of the same name is refused.
	if _, err := Up(context.Background(), name, g, Options{}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second up: %v", err)
	}
	sts, err := Status()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range sts {
		if s.Lab == name {
			found = true
			if s.NamespacesPresent != 5 || s.LinksPresent != 4 || !s.Complete {
				t.Errorf("status %+v", s)
			}
		}
	}
	if !found {
		t.Fatal("status lacks lab")
	}
	if err := Down(name); err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Nodes {
		if _, err := os.Lstat(lab.NSPath(n.Name)); err == nil {
			t.Errorf("%s still there", lab.NSPath(n.Name))
		}
	}
	if _, err := os.Stat(stateDir(name)); err == nil {
		t.Error("state dir still there")
	}
}

// A namespace that exists under a name the lab needs is an error and is left alone.
func TestClashIsErrorNotDeletion(t *testing.T) {
	needRoot(t)
	name := "ut-clash"
	foreign := NSName(name, "s0")
	c, err := createNS(foreign, false)
	if err != nil {
		t.Fatal(err)
	}
	c.close()
	defer deleteNS(foreign, 0)
	_, err = Up(context.Background(), name, tiny(), Options{})
	if err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("want refusal, got %v", err)
	}
	if ino, _ := nsIno(foreign); ino == 0 {
		t.Fatal("foreign namespace was removed")
	}
	if _, err := os.Stat(statePath(name)); err == nil {
		t.Fatal("state file left behind")
	}
}

// Cancelling the context during bring-up removes what was made.
func TestCancelCleansUp(t *testing.T) {
	needRoot(t)
	name := "ut-cancel"
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := Up(ctx, name, ndcHand(4), Options{Workers: 1, Progress: func(string, int, int, time.Duration) {
		n++
		if n == 1 {
			cancel()
		}
	}})
	if err == nil {
		Down(name)
		t.Fatal("up succeeded despite cancel")
	}
	m, _ := filepath.Glob(filepath.Join(NetnsDir, "fl-"+name+"-*"))
	if len(m) != 0 {
		t.Fatalf("left %v", m)
	}
	if _, err := os.Stat(stateDir(name)); err == nil {
		t.Fatal("state dir left")
	}
}

// TestMeasureNDC81 prints how long NDC(8,1) (80 namespaces, 128 links) takes to come up and go down.
// Run: FL_MEASURE=3 go test -run TestMeasureNDC81 -v ./harness/netns
func TestMeasureNDC81(t *testing.T) {
	needRoot(t)
	runs := 0
	fmt.Sscan(os.Getenv("FL_MEASURE"), &runs)
	if runs == 0 {
		t.Skip("set FL_MEASURE=<runs> to measure")
	}
	g, err := topo.Build("ndc", map[string]string{"n": "8", "k": "1"})
	if err != nil {
		g = ndcHand(8)
	}
	workers := 0
	fmt.Sscan(os.Getenv("FL_WORKERS"), &workers)
	for r := 0; r < runs; r++ {
		t0 := time.Now()
		phases := []string{}
		_, err := Up(context.Background(), "ut-ndc81", g, Options{Workers: workers, Progress: func(p string, _, _ int, d time.Duration) {
			phases = append(phases, fmt.Sprintf("%s %v", p, d.Round(time.Millisecond)))
		}})
		up := time.Since(t0)
		if err != nil {
			t.Fatal(err)
		}
		t1 := time.Now()
		if err := Down("ut-ndc81"); err != nil {
			t.Fatal(err)
		}
		down := time.Since(t1)
		t.Logf("run %d: %d namespaces, %d links: up %v (%s), down %v", r+1, len(g.Nodes), len(g.Links),
			up.Round(time.Millisecond), strings.Join(phases, ", "), down.Round(time.Millisecond))
	}
}
