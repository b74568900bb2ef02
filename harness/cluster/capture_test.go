package cluster

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCaptureOnlyInOwnLabs: a capture is refused, naming the lab, in a lab this server did not make,
// and the connection stays usable.
func TestCaptureOnlyInOwnLabs(t *testing.T) {
	addr, _ := startServer(t, 0)
	r := connectM1(t, addr)
	var out bytes.Buffer
	_, err := r.StartCapture(context.Background(), "other", "s0", 1, &out)
	if err == nil || !strings.Contains(err.Error(), `no lab "other" made by this agent server`) {
		t.Fatalf("capture in a lab the server did not make: %v", err)
	}
	if out.Len() != 0 {
		t.Fatalf("a refused capture sent %d bytes", out.Len())
	}
	if _, err := r.MeasureClock(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
}

// TestOlderServerRefused: a server of another protocol version (an old agent image, which cannot
// capture) is refused at its hello, naming both versions.
func TestOlderServerRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			return
		}
		c, err := Accept(raw, testSecret)
		if err != nil {
			return
		}
		defer c.Close()
		c.Send(Msg{Type: "hello", Hello: &Hello{Name: "old", Underlay: "127.0.0.1", Version: 2}})
		var m Msg
		c.Recv(&m) // until the coordinator hangs up
	}()
	_, err = ConnectMachine(context.Background(), Machine{Name: "old", Control: ln.Addr().String()}, testSecret)
	if err == nil || !strings.Contains(err.Error(), "machine old: agent server speaks protocol 2, this coordinator "+strconv.Itoa(ProtocolVersion)) {
		t.Fatalf("an old server: %v", err)
	}
}

// TestTailSendsWhatIsAppended: a capture's file is sent as it grows, every byte once and in order,
// and the end read after the writer closed it.
func TestTailSendsWhatIsAppended(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.pcap")
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got, want bytes.Buffer
	tl := &tail{f: f, buf: make([]byte, 1000), send: func(b []byte) error { got.Write(b); return nil }}
	for i, n := range []int{0, 24, 5000, 1, 70000, 3} {
		b := bytes.Repeat([]byte{byte(i + 1)}, n)
		w.Write(b)
		want.Write(b)
		if err := tl.drain(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) || tl.off != int64(want.Len()) {
			t.Fatalf("after %d appends: sent %d bytes (offset %d), want %d", i+1, got.Len(), tl.off, want.Len())
		}
	}
	w.Close()
	if err := tl.drain(); err != nil || got.Len() != want.Len() {
		t.Fatalf("after close: %v, %d bytes", err, got.Len())
	}
}
