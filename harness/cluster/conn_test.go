package cluster

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/harness/nslink"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

// startServer runs a Server on 127.0.0.1 (its "underlay" is the loopback) with its state under a
// temporary directory, and returns its address and log.
// connectM1 is a connection of its own to the server at addr (machine m1), closed when the test ends.
func connectM1(t *testing.T, addr string) *Remote {
	t.Helper()
	r, err := ConnectMachine(context.Background(), Machine{Name: "m1", Control: addr, Underlay: "127.0.0.1"}, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func startServer(t *testing.T, offset time.Duration) (string, *logBuf) {
	t.Helper()
	nslink.StateRoot = t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lb := &logBuf{}
	s := &Server{Secret: testSecret, Name: "m1", Underlay: "127.0.0.1", ClockOffset: offset, Log: lb.add}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String(), lb
}

type logBuf struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBuf) add(s string) { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }
func (l *logBuf) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// nothingMade says whether the server's state root is still empty: no lab was started.
func nothingMade(t *testing.T) {
	t.Helper()
	ents, err := os.ReadDir(nslink.StateRoot)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(ents) > 0 {
		t.Fatalf("state root has %d entries after a refused client", len(ents))
	}
}

func waitLog(t *testing.T, lb *logBuf, sub string) {
	t.Helper()
	for i := 0; i < 200 && !lb.has(sub); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !lb.has(sub) {
		t.Fatalf("server never logged %q: %q", sub, lb.lines)
	}
}

func TestWrongSecretRefused(t *testing.T) {
	addr, lb := startServer(t, 0)
	_, err := ConnectMachine(context.Background(), Machine{Name: "m1", Control: addr, Underlay: "127.0.0.1"},
		[]byte("another secret of enough bytes!!"))
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("wrong secret: got %v, want ErrAuth", err)
	}
	waitLog(t, lb, "refused")
	nothingMade(t)
}

// A client that skips the handshake and sends the requests a coordinator would gets the connection
// closed, and the server acts on none of them.
func TestUnauthenticatedRefused(t *testing.T) {
	addr, lb := startServer(t, 0)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := `{"type":"up","up":{"lab":"evil","nodes":[0],"mtu":1500,"graph":{"nodes":[{"name":"x"}]}}}` + "\n"
	c.Write([]byte(strings.Repeat(req, 20)))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var all bytes.Buffer
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		all.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if all.Len() != len(magic)+nonceLen {
		t.Fatalf("server sent %d bytes to an unauthenticated client, want only its %d-byte challenge", all.Len(), len(magic)+nonceLen)
	}
	waitLog(t, lb, "refused")
	nothingMade(t)
}

func TestAuthenticatedClockProbe(t *testing.T) {
	const off = 3 * time.Millisecond
	addr, _ := startServer(t, off)
	r := connectM1(t, addr)
	if r.Hello.Name != "m1" || r.Hello.UnderlayIf != "lo" || r.Hello.UnderlayMTU < 1500 {
		t.Fatalf("hello %+v", r.Hello)
	}
	o, err := r.MeasureClock(context.Background(), 20)
	if err != nil {
		t.Fatal(err)
	}
	// The injected offset is within the estimate's stated uncertainty (plus the loopback's asymmetry,
	// which the bound already covers).
	if d := time.Duration(o.Offset) - off; d < -time.Duration(o.Uncertainty) || d > time.Duration(o.Uncertainty) {
		t.Fatalf("measured %v, injected %v", o, off)
	}
	if o.Error() < off {
		t.Fatalf("error bound %v below the injected offset %v", o.Error(), off)
	}
	t.Logf("%v", o)
	// A request the server cannot act on comes back as an error, and the connection stays usable.
	if err := r.Down(context.Background(), "BAD NAME"); err == nil || !strings.Contains(err.Error(), "invalid lab name") {
		t.Fatalf("down of an invalid name: %v", err)
	}
	if _, err := r.MeasureClock(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
}

// A frame altered on the wire fails its MAC.
func TestTamperedFrame(t *testing.T) {
	a, b := net.Pipe()
	var sc *Conn
	var serr error
	done := make(chan bool)
	go func() { sc, serr = Accept(a, testSecret); done <- true }()
	cc, err := clientHandshake(b, testSecret)
	<-done
	if err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	go cc.Send(Msg{Type: "ping", Clock: &Stamps{T1: 1}})
	var m Msg
	if err := sc.Recv(&m); err != nil || m.Type != "ping" {
		t.Fatalf("first frame: %v %+v", err, m)
	}
	// A replay of the same bytes fails: the sequence number is part of the MAC.
	cc.sendSeq--
	go cc.Send(Msg{Type: "ping", Clock: &Stamps{T1: 1}})
	if err := sc.Recv(&m); err == nil || !strings.Contains(err.Error(), "authentication") {
		t.Fatalf("replayed frame accepted: %v", err)
	}
}

func TestEstimatePicksTheShortestRoundTrip(t *testing.T) {
	// Offset +100; the second probe queued 1000 ns on the way out, which the first (shortest) does not.
	probes := []Stamps{{T1: 0, T2: 150, T3: 160, T4: 110}, {T1: 1000, T2: 2150, T3: 2160, T4: 2110}}
	o := estimate("m", probes)
	if o.Offset != 100 || o.RTT != 100 || o.Uncertainty != 50 {
		t.Fatalf("%+v", o)
	}
}
