package portio

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/harness/nslink/nstest"

	"golang.org/x/sys/unix"
)

// Frames written on h0's port arrive on s0's port 0 intact, in order, and our own transmissions are
// not read back (PACKET_IGNORE_OUTGOING), read with recvmmsg and through a receive ring (in batches of
// at most PortBatch, the ring's slots handed back and reused: 200 frames through 64 slots).
func TestPacketPortRoundTrip(t *testing.T) {
	for _, ring := range []int{0, 64} {
		t.Run(fmt.Sprintf("ring%d", ring), func(t *testing.T) { testRoundTrip(t, ring) })
	}
}

func testRoundTrip(t *testing.T, ring int) {
	nstest.NeedRoot(t)
	l, err := nslink.Up(context.Background(), "t-port", nstest.Tiny(), nslink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer nslink.Down("t-port")
	a, err := OpenPacketPort(l.NSPath("h0"), nslink.PortName(0), 1500)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenPacketPortRing(l.NSPath("s0"), nslink.PortName(0), 1500, ring)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Ring() != (ring > 0) {
		t.Fatalf("ring %d: port reads through a ring: %v", ring, b.Ring())
	}
	const n = 200
	var frames [][]byte
	for i := 0; i < n; i++ {
		f := make([]byte, 60+i)
		copy(f, []byte{0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x88, 0xb6})
		f[20] = byte(i)
		frames = append(frames, f)
	}
	var got [][]byte
	deadline := time.Now().Add(2 * time.Second)
	for k := 0; k < n; k += 50 { // a ring of 64 holds 50 frames, not 200: read between writes
		sent, err := a.Send(frames[k : k+50])
		if err != nil || sent != 50 {
			t.Fatalf("sent %d of 50: %v", sent, err)
		}
		for len(got) < k+50 && time.Now().Before(deadline) {
			fds := []unix.PollFd{{Fd: int32(b.Fd()), Events: unix.POLLIN}}
			unix.Poll(fds, 100)
			m, err := b.Recv(func(f []byte) { got = append(got, bytes.Clone(f)) })
			if err != nil {
				t.Fatal(err)
			}
			if m > PortBatch {
				t.Fatalf("one Recv handed over %d frames, more than PortBatch", m)
			}
		}
	}
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
	if ring > 0 {
		return
	}
	if _, err := OpenPacketPort(l.NSPath("h0"), "p9", 0); err == nil {
		t.Fatal("opening a missing interface succeeded")
	}
}
