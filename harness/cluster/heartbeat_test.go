package cluster

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/harness/nslink"
)

// shortBeats shortens the failure detector's bounds for one test.
func shortBeats(t *testing.T, beat, lost time.Duration) {
	t.Helper()
	ob, ol := Heartbeat, LostAfter
	Heartbeat, LostAfter = beat, lost
	t.Cleanup(func() { Heartbeat, LostAfter = ob, ol })
}

// cable is a TCP proxy between a client and the server at addr that can be cut: it then stops
// carrying bytes either way but keeps both sockets open, as a pulled cable or a dropped route does
// (no FIN, no RST: only silence).
type cable struct {
	ln  net.Listener
	mu  sync.Mutex
	cut chan struct{}
}

func newCable(t *testing.T, addr string) *cable {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cable{ln: ln, cut: make(chan struct{})}
	var conns []net.Conn
	var cmu sync.Mutex
	t.Cleanup(func() {
		ln.Close()
		cmu.Lock()
		for _, x := range conns {
			x.Close()
		}
		cmu.Unlock()
	})
	go func() {
		for {
			a, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", addr)
			if err != nil {
				a.Close()
				return
			}
			cmu.Lock()
			conns = append(conns, a, b)
			cmu.Unlock()
			go c.carry(a, b)
			go c.carry(b, a)
		}
	}()
	return c
}

func (c *cable) carry(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-c.cut:
			<-make(chan struct{}) // hold both ends open, carry nothing (the test's cleanup closes them)
		default:
		}
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				dst.(*net.TCPConn).CloseWrite()
			}
			return
		}
	}
}

func (c *cable) addr() string { return c.ln.Addr().String() }
func (c *cable) pull()        { close(c.cut) }

// Heartbeats keep a connection on which nothing else is said alive well past LostAfter.
func TestHeartbeatKeepsAnIdleConnection(t *testing.T) {
	// Bounds short enough for a test, long enough for a loaded machine's scheduler.
	shortBeats(t, 100*time.Millisecond, 2*time.Second)
	addr, _ := startServer(t, 0)
	r := connectM1(t, newCable(t, addr).addr())
	select {
	case <-r.Done():
		t.Fatalf("an idle connection was lost: %v", r.Err())
	case <-time.After(5 * time.Second):
	}
	if _, err := r.MeasureClock(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
}

// A cable cut while a lab is up: the coordinator's side finds the server silent, and the server
// removes the lab on its own, each within LostAfter (plus the removal).
func TestCutFoundBothWays(t *testing.T) {
	needRoot(t)
	const lost = 500 * time.Millisecond
	shortBeats(t, 100*time.Millisecond, lost)
	addr, lb := startServer(t, 0)
	cab := newCable(t, addr)
	r := connectM1(t, cab.addr())
	if err := r.Up(context.Background(), &UpReq{Lab: "ut-reli-cut", Graph: pairGraph(), Nodes: []int{0, 1}, MTU: 1500}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(nslink.StateRoot, "ut-reli-cut")); err != nil {
		t.Fatalf("the lab's state: %v", err)
	}
	t0 := time.Now()
	cab.pull()
	select {
	case <-r.Done():
	case <-time.After(10 * lost):
		t.Fatalf("the coordinator's side did not find the server gone within %v", 10*lost)
	}
	if !errors.Is(r.Err(), ErrSilent) {
		t.Fatalf("lost with %v, want ErrSilent", r.Err())
	}
	found := time.Since(t0)
	waitLog(t, lb, "lab ut-reli-cut: down")
	gone := time.Since(t0)
	if _, err := os.Stat(filepath.Join(nslink.StateRoot, "ut-reli-cut")); !os.IsNotExist(err) {
		t.Fatalf("the lab's state after the server removed it: %v", err)
	}
	t.Logf("cut: coordinator found it after %v, the server's lab was down after %v (LostAfter %v)", found, gone, lost)
	if found < lost {
		t.Fatalf("found after %v, before LostAfter %v: not by silence", found, lost)
	}
}

// A coordinator started before its agent (wait_for_agents) retries until the server listens, and says
// which machine it waits for; without the wait, or past it, the error names the machine.
func TestConnectWaitsForAgent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	m := Machine{Name: "late", Control: addr, Underlay: "127.0.0.1"}
	if _, err := connectWaiting(context.Background(), m, testSecret, 0, nil); err == nil || !strings.Contains(err.Error(), "machine late") {
		t.Fatalf("no wait, nothing listening: %v", err)
	}
	if _, err := connectWaiting(context.Background(), m, testSecret, 3*time.Second, func(string) {}); err == nil || !strings.Contains(err.Error(), "not reachable within wait_for_agents 3s") {
		t.Fatalf("a wait that runs out: %v", err)
	}
	var said []string
	var smu sync.Mutex
	go func() {
		time.Sleep(2500 * time.Millisecond)
		nslink.StateRoot = t.TempDir()
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
			return
		}
		s := &Server{Secret: testSecret, Name: "late", Underlay: "127.0.0.1", Log: func(string) {}}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go s.Serve(ctx, ln)
	}()
	r, err := connectWaiting(context.Background(), m, testSecret, time.Minute, func(s string) { smu.Lock(); said = append(said, s); smu.Unlock() })
	if err != nil {
		t.Fatalf("the agent came up 2.5 s after the coordinator: %v", err)
	}
	r.Close()
	smu.Lock()
	defer smu.Unlock()
	if len(said) == 0 || !strings.Contains(said[0], "waiting for machine late") {
		t.Fatalf("said %q", said)
	}
}
