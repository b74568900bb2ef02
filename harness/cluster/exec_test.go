package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// TestExecOnlyInOwnLabs: an authenticated coordinator may run commands only in a lab this server made
// and holds (not in another lab on the machine), and a live lab's kernel hosts need a server that can
// set them up; either refusal leaves the connection usable.
func TestExecOnlyInOwnLabs(t *testing.T) {
	addr, _ := startServer(t, 0)
	r := connectM1(t, addr)
	var out, errb bytes.Buffer
	code, err := r.Exec(context.Background(), "other", "h0", []string{"true"}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), `no lab "other" made by this agent server`) || code != -1 {
		t.Fatalf("exec in a lab the server did not make: code %d, %v", code, err)
	}
	params, err := topo.ParseParams([]string{"k=2"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := topo.Build("fattree", params)
	if err != nil {
		t.Fatal(err)
	}
	err = r.Up(context.Background(), &UpReq{Lab: "lv", Graph: g, Nodes: []int{0}, MTU: 1500, Live: &LiveHosts{}})
	if err == nil || !strings.Contains(err.Error(), "cannot set up a live lab's kernel hosts") {
		t.Fatalf("live up on a server without HostSetup: %v", err)
	}
	if _, err := r.MeasureClock(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
}

// sh runs a shell command as lab exec's server runs one (startExec), its output in out.
func sh(t *testing.T, script string, out *syncBuf) *execProc {
	t.Helper()
	p, err := startExec("/bin/sh", []string{"sh", "-c", script}, os.Environ(), nil, out, out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	return p
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// firstPid waits for the first line of out, a PID the script printed.
func firstPid(t *testing.T, out *syncBuf) int {
	t.Helper()
	for i := 0; i < 500; i++ {
		if line, _, ok := strings.Cut(out.String(), "\n"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatalf("output %q", out.String())
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no PID printed: %q", out.String())
	return 0
}

// running says whether pid is a process that has not exited (a zombie has).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return f[0] != "Z" && f[0] != "X"
}

func goneSoon(t *testing.T, pid int, what string) {
	t.Helper()
	for i := 0; i < 100 && running(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if running(pid) {
		t.Fatalf("%s (pid %d) still runs", what, pid)
	}
}

// A command's children end with it: stop ends the whole process group (before, only the command's
// own process was killed, and a child it started ran on).
func TestExecStopEndsChildren(t *testing.T) {
	var out syncBuf
	p := sh(t, "sleep 1000 & echo $!; wait", &out)
	child := firstPid(t, &out)
	if !running(child) {
		t.Fatalf("child %d not running before stop", child)
	}
	t0 := time.Now()
	p.stop()
	goneSoon(t, child, "the command's child")
	if running(p.pid) {
		t.Fatal("the command still runs")
	}
	if d := time.Since(t0); d > execGrace {
		t.Fatalf("stop took %v: a group that obeys SIGTERM should not wait the %v grace", d, execGrace)
	}
	if p.code != -1 {
		t.Fatalf("exit code %d, want -1 (ended by a signal)", p.code)
	}
}

// A group that ignores SIGTERM gets SIGKILL after the grace.
func TestExecStopKillsAfterGrace(t *testing.T) {
	var out syncBuf
	p := sh(t, `trap "" TERM; sleep 1000 & echo $!; wait`, &out)
	child := firstPid(t, &out)
	t0 := time.Now()
	p.stop()
	if d := time.Since(t0); d < execGrace {
		t.Fatalf("stop took %v, less than the %v grace, for a group ignoring SIGTERM", d, execGrace)
	}
	goneSoon(t, child, "the child ignoring SIGTERM")
}

// The exit status and output of a command that ends by itself.
func TestExecExitCode(t *testing.T) {
	var out syncBuf
	p := sh(t, "echo hello; exit 3", &out)
	<-p.exited
	p.output.Wait()
	if p.code != 3 || out.String() != "hello\n" {
		t.Fatalf("code %d, output %q", p.code, out.String())
	}
}
