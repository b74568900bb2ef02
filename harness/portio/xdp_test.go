package portio

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/harness/nslink/nstest"

	"golang.org/x/sys/unix"
)

// Frames go through AF_XDP ports as the same Ethernet frames an AF_PACKET port writes and reads:
// AF_XDP to AF_PACKET (what is on the veth is exactly what was sent), AF_PACKET to AF_XDP, and AF_XDP
// to AF_XDP in sends larger than the transmit ring and the kernel's budget per kick (into a receive
// ring that holds them), in order.
func TestXDPPortRoundTrip(t *testing.T) {
	nstest.NeedRoot(t)
	l, err := nslink.Up(context.Background(), "t-xdp", nstest.Tiny(), nslink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer nslink.Down("t-xdp")
	open := func(t *testing.T, dev string, xdp bool, rx int) Port {
		t.Helper()
		var p Port
		var err error
		if xdp {
			p, err = OpenXDPPort(l.NSPath(dev), nslink.PortName(0), 1500, rx)
		} else {
			p, err = OpenPacketPort(l.NSPath(dev), nslink.PortName(0), 1500)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name     string
		txX, rxX bool
		n, batch int
		garbage  bool
	}{{"xdp-to-packet", true, false, 300, 50, false}, {"packet-to-xdp", false, true, 300, 50, false},
		{"xdp-to-xdp", true, true, 2000, 1000, false}, {"garbage", true, true, 300, 100, true}} {
		t.Run(c.name, func(t *testing.T) {
			a, b := open(t, "h0", c.txX, 0), open(t, "s0", c.rxX, c.batch)
			defer a.Close()
			defer b.Close()
			frames := testFrames(c.n)
			if c.garbage { // random bytes, 14 to 213 of them: carried as they are, for the agent to refuse
				r := rand.New(rand.NewPCG(1, 2))
				for i := range frames {
					frames[i] = make([]byte, 14+r.IntN(200))
					for j := range frames[i] {
						frames[i][j] = byte(r.Uint32())
					}
				}
			}
			var got [][]byte
			for k := 0; k < c.n; k += c.batch {
				if sent, err := a.Send(frames[k : k+c.batch]); err != nil || sent != c.batch {
					t.Fatalf("sent %d of %d: %v", sent, c.batch, err)
				}
				got = readFrames(t, b, got, k+c.batch)
			}
			if len(got) != c.n {
				t.Fatalf("received %d of %d frames", len(got), c.n)
			}
			for i := range got {
				if !bytes.Equal(got[i], frames[i]) {
					t.Fatalf("frame %d differs: % x", i, got[i][:min(24, len(got[i]))])
				}
			}
			if x, ok := b.(*XDPPort); ok {
				if s, err := x.Stats(); err != nil || s.Rx_dropped+s.Rx_ring_full+s.Rx_fill_ring_empty_descs != 0 {
					t.Fatalf("receiver's kernel counters: %+v %v", s, err)
				}
			}
		})
	}
	// Frames encoded in lent UMEM slots go as they lie, mixed with frames Send copies; every slot comes
	// back (sent, refused or unslotted), so the sending share never runs dry.
	t.Run("slots", func(t *testing.T) {
		a, b := open(t, "h0", true, 0).(*XDPPort), open(t, "s0", true, 1000)
		defer a.Close()
		defer b.Close()
		free := len(a.free)
		frames := testFrames(200)
		var got [][]byte
		for round := 0; round < 5; round++ {
			batch := make([][]byte, len(frames))
			for i, f := range frames {
				if i%3 == 0 {
					batch[i] = f // not a slot: copied
					continue
				}
				s := a.Slot()
				if s == nil || len(s) != 0 || cap(s) < len(f) {
					t.Fatalf("round %d frame %d: slot %d/%d", round, i, len(s), cap(s))
				}
				batch[i] = append(s, f...)
				if i%7 == 1 { // encoded, then given back unsent
					a.Unslot(batch[i])
					batch[i] = f
				}
			}
			if n, err := a.Send(batch); n != len(batch) || err != nil {
				t.Fatalf("round %d: sent %d of %d: %v", round, n, len(batch), err)
			}
			got = readFrames(t, b, got[:0], len(frames))
			for i := range frames {
				if i >= len(got) || !bytes.Equal(got[i], frames[i]) {
					t.Fatalf("round %d: frame %d differs or is missing (%d received)", round, i, len(got))
				}
			}
		}
		s := a.Slot()
		if n, err := a.Send([][]byte{append(s, make([]byte, 1515)...)}); n != 0 || err == nil {
			t.Fatalf("a refused frame in a slot: sent %d, %v", n, err)
		}
		a.reclaim()
		if len(a.free) != free {
			t.Fatalf("%d UMEM frames free after the rounds, %d before: slots leaked", len(a.free), free)
		}
		for i := 0; i < free; i++ {
			if a.Slot() == nil {
				t.Fatalf("slot %d of %d: none", i, free)
			}
		}
		if a.Slot() != nil {
			t.Fatal("a slot beyond the sending share")
		}
	})
	t.Run("refusals", func(t *testing.T) {
		x := open(t, "h0", true, 0)
		defer x.Close()
		if _, err := x.Send([][]byte{make([]byte, 5000)}); err == nil || !strings.Contains(err.Error(), "does not fit") {
			t.Fatalf("a 5000-byte frame: %v", err)
		}
		// veth would drop it without a word: Send refuses it as AF_PACKET does.
		if n, err := x.Send([][]byte{testFrames(1)[0], make([]byte, 1515)}); n != 1 || !errors.Is(err, unix.EMSGSIZE) {
			t.Fatalf("a 1515-byte frame on an MTU of 1500: sent %d, %v", n, err)
		}
		_, err := OpenXDPPort(l.NSPath("h0"), "p9", 1500, 0)
		var xe *XDPError
		if !errors.As(err, &xe) || xe.Ifname != "p9" || !strings.Contains(err.Error(), "ENODEV") {
			t.Fatalf("a missing interface: %v", err)
		}
		if _, err := OpenXDPPort(l.NSPath("h0"), nslink.PortName(0), 9000, 0); err == nil || !strings.Contains(err.Error(), "MTU 9000") {
			t.Fatalf("MTU 9000: %v", err)
		}
	})
}

func testFrames(n int) [][]byte {
	var frames [][]byte
	for i := 0; i < n; i++ {
		f := make([]byte, 60+i%1400)
		copy(f, []byte{0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x88, 0xb6})
		f[20], f[21] = byte(i), byte(i>>8)
		frames = append(frames, f)
	}
	return frames
}

// readFrames reads from p until it holds want frames or two seconds pass.
func readFrames(t *testing.T, p Port, got [][]byte, want int) [][]byte {
	deadline := time.Now().Add(2 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		fds := []unix.PollFd{{Fd: int32(p.Fd()), Events: unix.POLLIN}}
		unix.Poll(fds, 100)
		m, err := p.Recv(func(f []byte) { got = append(got, bytes.Clone(f)) })
		if err != nil {
			t.Fatal(err)
		}
		if m > PortBatch {
			t.Fatalf("one Recv handed over %d frames, more than PortBatch", m)
		}
	}
	return got
}

// An interface that already has an XDP program (here another port's) is refused with the interface,
// the step and the errno named, and its program is left in place.
func TestXDPPortRefusesTakenInterface(t *testing.T) {
	nstest.NeedRoot(t)
	l, err := nslink.Up(context.Background(), "t-xdpb", nstest.Tiny(), nslink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer nslink.Down("t-xdpb")
	a, err := OpenXDPPort(l.NSPath("h0"), nslink.PortName(0), 1500, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, err = OpenXDPPort(l.NSPath("h0"), nslink.PortName(0), 1500, 0)
	var xe *XDPError
	if !errors.As(err, &xe) || xe.Ifname != nslink.PortName(0) || !strings.Contains(err.Error(), "(E") {
		t.Fatalf("a second AF_XDP port on one interface: %v", err)
	}
	t.Log(err)
	if _, err := a.Send([][]byte{testFrames(1)[0]}); err != nil {
		t.Fatalf("the first port after the refusal: %v", err)
	}
}

// Which refusals apply to every port: the kernel's or the privileges' answer to AF_XDP as such, not an
// interface's or a ring's.
func TestXDPErrorEveryPort(t *testing.T) {
	for _, c := range []struct {
		step  string
		err   error
		every bool
	}{
		{"socket", unix.EAFNOSUPPORT, true},
		{"socket", nslink.ErrNotRoot, true},
		{"XDP program", unix.EINVAL, true},
		{"frame size", unix.EINVAL, true},
		{"attaching the XDP program", unix.EOPNOTSUPP, true},
		{"attaching the XDP program", unix.EPERM, true},
		{"receive ring", unix.EPERM, false},
		{"no such interface in this namespace", unix.ENODEV, false},
		{"bind", unix.EBUSY, false},
		{"attaching the XDP program", errors.Join(unix.EBUSY, unix.EOPNOTSUPP), false},
		{"UMEM", unix.ENOMEM, false},
	} {
		if got := (&XDPError{Ifname: "p0", Step: c.step, Err: c.err}).EveryPort(); got != c.every {
			t.Errorf("%s: %v: EveryPort %v, want %v", c.step, c.err, got, c.every)
		}
	}
}

// A port whose peer can write more between two reads than an AF_XDP ring holds is refused, before any
// interface is touched, so it falls back to AF_PACKET (it used to get a ring of XDPRxMax silently).
func TestXDPPortRefusesRingPastMax(t *testing.T) {
	_, err := OpenXDPPort("", "fabriclab-none", 1500, XDPRxMax+1)
	var xe *XDPError
	if !errors.As(err, &xe) || xe.Step != "receive ring" || xe.EveryPort() || !strings.Contains(err.Error(), "16385") {
		t.Fatalf("a ring of %d: %v", XDPRxMax+1, err)
	}
}
