package kernelhost

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/wire"
)

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces")
	}
}

func pair(t *testing.T, name string) *nslink.Lab {
	t.Helper()
	b := topo.NewBuilder("pair", nil, 1e9, 0)
	h0, h1 := b.AddHost(), b.AddHost()
	b.Connect(h0, h1)
	l, err := nslink.Up(context.Background(), name, b.G, nslink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := nslink.Down(name); err != nil {
			t.Error(err)
		}
	})
	return l
}

func TestAvailable(t *testing.T) {
	if err := Available("cubic"); err != nil {
		t.Fatal(err)
	}
	err := Available("nosuchcc")
	if err == nil || !strings.Contains(err.Error(), "nosuchcc") || !strings.Contains(err.Error(), "host.cc") {
		t.Fatalf("want an error naming host.cc and the algorithm, got %v", err)
	}
}

func TestSetupIdentity(t *testing.T) {
	needRoot(t)
	l := pair(t, "ut-kh-setup")
	hosts := []Host{{Device: "h0", Index: 0}, {Device: "h1", Index: 1}}
	if err := Setup(l, hosts, Config{CC: "cubic", ECN: true}); err != nil {
		t.Fatal(err)
	}
	nl, err := l.Handle("h1")
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	link, err := nl.LinkByName("p0")
	if err != nil {
		t.Fatal(err)
	}
	if got := link.Attrs().HardwareAddr.String(); got != wire.HostMAC(1).String() {
		t.Errorf("h1 p0 MAC %s, want %s", got, wire.HostMAC(1))
	}
	addrs, err := nl.AddrList(link, netlink.FAMILY_V4)
	if err != nil || len(addrs) != 1 || addrs[0].IP.String() != wire.HostIP(1).String() {
		t.Fatalf("h1 addresses %v (%v), want %s/15", addrs, err, wire.HostIP(1))
	}
	neighs, err := nl.NeighList(link.Attrs().Index, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range neighs {
		if n.IP.String() == wire.HostIP(0).String() {
			found = n.State == netlink.NUD_PERMANENT && n.HardwareAddr.String() == wire.HostMAC(0).String()
		}
	}
	if !found {
		t.Errorf("h1 has no permanent neighbour %s -> %s: %v", wire.HostIP(0), wire.HostMAC(0), neighs)
	}
	err = l.Do("h1", func() error {
		b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_ecn")
		if err == nil && strings.TrimSpace(string(b)) != "1" {
			t.Errorf("tcp_ecn in h1 = %s, want 1", b)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// The caller's namespace is untouched.
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_no_metrics_save"); err == nil && strings.TrimSpace(string(b)) == "1" {
		t.Log("note: the root namespace already has tcp_no_metrics_save=1")
	}
}

func TestSetupRejectsBadHosts(t *testing.T) {
	for _, hs := range [][]Host{
		{{Device: "h0", Index: -1}},
		{{Device: "h0", Index: 0}, {Device: "h1", Index: 0}},
	} {
		if err := Setup(nil, hs, Config{}); err == nil {
			t.Errorf("%v accepted", hs)
		}
	}
}

// Real kernel TCP over a direct veth: every flow completes, its FCT is at least the bytes' time at the
// kernel's own speed, and the sender's kernel reports what it delivered.
func TestRunDirect(t *testing.T) {
	needRoot(t)
	l := pair(t, "ut-kh-run")
	if err := Setup(l, []Host{{Device: "h0", Index: 0}, {Device: "h1", Index: 1}}, Config{CC: "cubic"}); err != nil {
		t.Fatal(err)
	}
	flows := []Flow{
		{ID: 1, Src: 0, Dst: 1, Size: 10 << 20},
		{ID: 2, Src: 1, Dst: 0, Size: 1 << 20, At: 5 * time.Millisecond},
		{ID: 3, Src: 0, Dst: 1, Size: 100, At: 10 * time.Millisecond},
	}
	res, err := Run(context.Background(), l, flows, Options{CC: "cubic"})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range res.Flows {
		if !f.Completed {
			t.Fatalf("flow %d did not complete", f.ID)
		}
		if f.FCT() <= 0 {
			t.Errorf("flow %d FCT %v", f.ID, f.FCT())
		}
		if res.Stats[i].Delivered == 0 {
			t.Errorf("flow %d: sender's kernel delivered no segments", f.ID)
		}
		if res.Stats[i].CC != "cubic" {
			t.Errorf("flow %d ran %q, want cubic (the root namespace default here may differ)", f.ID, res.Stats[i].CC)
		}
		t.Logf("flow %d: %d B in %v (%.2f Gb/s)", f.ID, f.Size, f.FCT(), float64(f.Size)*8/f.FCT().Seconds()/1e9)
	}
}

func TestRunErrors(t *testing.T) {
	for _, fl := range [][]Flow{
		{{ID: 1, Src: 0, Dst: 0, Size: 1}},
		{{ID: 1, Src: 0, Dst: 1, Size: 0}},
		{{ID: 1, Src: 0, Dst: 1, Size: 1, At: -1}},
		{{ID: 1, Src: 0, Dst: 1, Size: 1}, {ID: 1, Src: 1, Dst: 0, Size: 1}},
	} {
		if _, err := Run(context.Background(), nil, fl, Options{}); err == nil {
			t.Errorf("%+v accepted", fl)
		}
	}
}
