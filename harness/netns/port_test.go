package netns

import (
	"bytes"
	"context"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Frames written on h0's port arrive on s0's port 0 intact, in order, and our own transmissions are
// not read back (PACKET_IGNORE_OUTGOING).
func TestPacketPortRoundTrip(t *testing.T) {
	needRoot(t)
	l, err := Up(context.Background(), "t-port", tiny(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer Down("t-port")
	a, err := OpenPacketPort(l.NSPath("h0"), PortName(0), 1500)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenPacketPort(l.NSPath("s0"), PortName(0), 1500)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const n = 200
	var frames [][]byte
	for i := 0; i < n; i++ {
		f := make([]byte, 60+i)
		copy(f, []byte{0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x88, 0xb6})
		f[20] = byte(i)
		frames = append(frames, f)
	}
	sent, err := a.Send(frames)
	if err != nil || sent != n {
		t.Fatalf("sent %d of %d: %v", sent, n, err)
	}
	var got [][]byte
	deadline := time.Now().Add(2 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		fds := []unix.PollFd{{Fd: int32(b.Fd()), Events: unix.POLLIN}}
		unix.Poll(fds, 100)
		if _, err := b.Recv(func(f []byte) { got = append(got, bytes.Clone(f)) }); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != n {
		t.Fatalf("received %d of %d frames", len(got), n)
	}
	for i := range got {
		if !bytes.Equal(got[i], frames[i]) {
			t.Fatalf("frame %d differs: % x", i, got[i][:24])
		}
	}
	echo := 0
	a.Recv(func([]byte) { echo++ })
	if echo != 0 {
		t.Fatalf("the sender read %d of its own frames back", echo)
	}
	if _, err := OpenPacketPort(l.NSPath("h0"), "p9", 0); err == nil {
		t.Fatal("opening a missing interface succeeded")
	}
}
