package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab/topo"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces")
	}
}

func pairGraph() *topo.Graph {
	b := topo.NewBuilder("pair", nil, 1e9, 0)
	h0, h1 := b.AddHost(), b.AddHost()
	b.Connect(h0, h1)
	return b.G
}

// upPair has the server at addr make lab name (two hosts) over a connection of its own, which holds it.
func upPair(t *testing.T, addr, name string) *Remote {
	t.Helper()
	r := connectM1(t, addr)
	if err := r.Up(context.Background(), &UpReq{Lab: name, Graph: pairGraph(), Nodes: []int{0, 1}, MTU: 1500}); err != nil {
		t.Fatal(err)
	}
	return r
}

// remoteExec runs argv on h0 of lab over a new connection; the result arrives on the channel.
type execResult struct {
	code int
	err  error
}

func remoteExec(t *testing.T, ctx context.Context, addr, lab string, out *syncBuf, argv ...string) chan execResult {
	t.Helper()
	r := connectM1(t, addr)
	ch := make(chan execResult, 1)
	go func() {
		code, err := r.Exec(ctx, lab, "h0", argv, out, out)
		ch <- execResult{code, err}
	}()
	return ch
}

// A command lab exec runs, and the child it started, end when the lab is removed (by the connection
// that holds it), and lab exec returns; before, they ran on in the removed lab's namespace.
func TestExecEndsWithLab(t *testing.T) {
	needRoot(t)
	addr, _ := startServer(t, 0)
	holder := upPair(t, addr, "ut-reli-exl")
	var out syncBuf
	res := remoteExec(t, context.Background(), addr, "ut-reli-exl", &out, "sh", "-c", "sleep 1000 & echo $!; wait")
	child := firstPid(t, &out)
	if err := holder.Down(context.Background(), "ut-reli-exl"); err != nil {
		t.Fatal(err)
	}
	goneSoon(t, child, "a command's child after its lab was removed")
	select {
	case r := <-res:
		if r.err != nil || r.code != -1 {
			t.Fatalf("lab exec of a command ended with its lab: code %d, %v", r.code, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("lab exec did not return after the lab was removed")
	}
}

// A command lab exec runs, and its child, end when the exec's connection ends (the client gone).
func TestExecEndsWithConnection(t *testing.T) {
	needRoot(t)
	addr, _ := startServer(t, 0)
	upPair(t, addr, "ut-reli-exc")
	var out syncBuf
	ctx, cancel := context.WithCancel(context.Background())
	res := remoteExec(t, ctx, addr, "ut-reli-exc", &out, "sh", "-c", "sleep 1000 & echo $!; wait")
	child := firstPid(t, &out)
	cancel() // closes the connection
	if r := <-res; r.err == nil {
		t.Fatal("a cancelled lab exec returned no error")
	}
	goneSoon(t, child, "a command's child after its connection ended")
}

// The command enters the namespace handle it is handed (descriptor 3: the one session.startExec checked
// with NSFile), not whatever is mounted at its name by then: here the lab is removed and made again
// under its name between taking the handle and the start.
func TestExecEntersTheCheckedNamespace(t *testing.T) {
	needRoot(t)
	nslink.StateRoot = t.TempDir()
	const name = "ut-reli-nsf"
	up := func() *nslink.Lab {
		nl, err := nslink.Up(context.Background(), name, pairGraph(), nslink.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return nl
	}
	nl := up()
	t.Cleanup(func() { nslink.Down(name) })
	f, err := nl.NSFile("h0")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st1 os.FileInfo
	if st1, err = f.Stat(); err != nil {
		t.Fatal(err)
	}
	if err := nslink.Down(name); err != nil {
		t.Fatal(err)
	}
	up()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuf
	p, err := startExec(exe, []string{exe, "readlink", "/proc/self/ns/net"}, append(os.Environ(), NSExecEnv+"=3"), []*os.File{f}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	<-p.exited
	p.output.Wait()
	want := fmt.Sprintf("net:[%d]", inode(st1))
	if got := strings.TrimSpace(out.String()); got != want || p.code != 0 {
		t.Fatalf("command ran in %q (code %d), want the checked namespace %s", got, p.code, want)
	}
}

// The lab's hosts file is the command's /etc/hosts.
func TestExecMountsHostsFile(t *testing.T) {
	needRoot(t)
	addr, _ := startServer(t, 0)
	upPair(t, addr, "ut-reli-exh")
	dir := filepath.Join("/etc/netns", nslink.NSName("ut-reli-exh", "h0"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte("198.18.0.9\treli-test-host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out syncBuf
	r := <-remoteExec(t, context.Background(), addr, "ut-reli-exh", &out, "cat", "/etc/hosts")
	if r.err != nil || r.code != 0 || out.String() != "198.18.0.9\treli-test-host\n" {
		t.Fatalf("code %d, %v, /etc/hosts %q", r.code, r.err, out.String())
	}
}

func inode(fi os.FileInfo) uint64 { return fi.Sys().(*syscall.Stat_t).Ino }

// One connection runs one command after another (lab pingall reuses its connections), never two at
// once.
func TestExecInTurnOnOneConnection(t *testing.T) {
	needRoot(t)
	addr, _ := startServer(t, 0)
	upPair(t, addr, "ut-reli-ext")
	r := connectM1(t, addr)
	for i := range 3 {
		var out syncBuf
		code, err := r.Exec(context.Background(), "ut-reli-ext", "h0", []string{"sh", "-c", fmt.Sprintf("echo %d; exit %d", i, i)}, &out, &out)
		if err != nil || code != i || out.String() != fmt.Sprintf("%d\n", i) {
			t.Fatalf("command %d on one connection: code %d, %v, output %q", i, code, err, out.String())
		}
	}
	if err := r.c.Send(Msg{Type: "exec", Exec: &ExecReq{Lab: "ut-reli-ext", Device: "h0", Argv: []string{"sleep", "1000"}}}); err != nil {
		t.Fatal(err)
	}
	var out syncBuf
	_, err := r.Exec(context.Background(), "ut-reli-ext", "h0", []string{"true"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "already runs a command") {
		t.Fatalf("a second command while one runs: %v", err)
	}
}

// A command over is reaped at once, its connection still open: a connection that runs one command
// after another (pingall, iperf) left every finished leader a zombie until it closed.
func TestExecReapedWhenOver(t *testing.T) {
	needRoot(t)
	addr, _ := startServer(t, 0)
	upPair(t, addr, "ut-reli-reap")
	r := connectM1(t, addr)
	for range 2 {
		var out syncBuf
		code, err := r.Exec(context.Background(), "ut-reli-reap", "h0", []string{"sh", "-c", "echo $$"}, &out, &out)
		if err != nil || code != 0 {
			t.Fatalf("exec: code %d, %v, output %q", code, err, out.String())
		}
		pid := strings.TrimSpace(out.String())
		if b, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil {
			t.Fatalf("the command's leader (pid %s) is still there after its exit was reported: %s", pid, b)
		}
	}
}
