package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fabriclab/fabriclab/fib"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/switchsw"
	"github.com/fabriclab/fabriclab/switchsw/fc"
	"github.com/fabriclab/fabriclab/wire"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// FramesOptions tune FramesPerSecond. The zero value means defaults.
type FramesOptions struct {
	Lab      string        // lab name (default "bench")
	Size     int           // frame bytes without FCS (default 64; at least 60)
	Duration time.Duration // per measurement (default 2 s)
}

// FramesResult compares one forwarding device between two veths: the kernel's bridge and the Go switch.
type FramesResult struct {
	Size                 int
	BridgeFPS, SwitchFPS float64 // frames/s counted at the receiver
	BridgeOffered        float64 // frames/s the generator wrote during the bridge run
	SwitchOffered        float64
	Ratio                float64 // SwitchFPS / BridgeFPS
	Forwarder            ForwarderStats
}

// FramesPerSecond measures, in one lab (h0 - s0 - h1), how many frames per second reach h1 when a
// sendmmsg generator on h0 floods UDP frames through s0: first with s0 a Linux bridge, then with s0 the
// switchsw engine in a Forwarder on the same veths. The lab is torn down before it returns.
func FramesPerSecond(ctx context.Context, o FramesOptions) (res *FramesResult, err error) {
	if o.Lab == "" {
		o.Lab = "bench"
	}
	if o.Size == 0 {
		o.Size = 64
	}
	if o.Size < 60 || o.Size > netns.DefaultMTU+14 {
		return nil, fmt.Errorf("size: %d bytes outside [60, %d]", o.Size, netns.DefaultMTU+14)
	}
	if o.Duration <= 0 {
		o.Duration = 2 * time.Second
	}
	b := topo.NewBuilder("bench", nil, 100e9, 0)
	h0, h1, s0 := b.AddHost(), b.AddHost(), b.AddSwitch()
	b.Connect(h0, s0)
	b.Connect(h1, s0)
	l, err := netns.Up(ctx, o.Lab, b.G, netns.Options{})
	if err != nil {
		return nil, err
	}
	defer func() {
		if derr := netns.Down(o.Lab); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	gen, err := netns.OpenPacketPort(l.NSPath("h0"), "p0", 0)
	if err != nil {
		return nil, err
	}
	defer gen.Close()
	sink, err := netns.OpenPacketPort(l.NSPath("h1"), "p0", 0)
	if err != nil {
		return nil, err
	}
	defer sink.Close()
	frame := udpFrame(0, 1, o.Size)
	res = &FramesResult{Size: o.Size}

	// The bridge, made inside s0's namespace (ours) and removed before the Go switch takes the ports.
	nl, err := l.Handle("s0")
	if err != nil {
		return nil, err
	}
	defer nl.Close()
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}
	if err := nl.LinkAdd(br); err != nil {
		return nil, fmt.Errorf("bridge in s0: %w", err)
	}
	for _, p := range []string{"p0", "p1"} {
		lk, err := nl.LinkByName(p)
		if err == nil {
			err = nl.LinkSetMaster(lk, br)
		}
		if err != nil {
			return nil, fmt.Errorf("bridge port %s: %w", p, err)
		}
	}
	if err := nl.LinkSetUp(br); err != nil {
		return nil, err
	}
	res.BridgeOffered, res.BridgeFPS, err = blast(ctx, gen, sink, frame, o.Duration)
	if err != nil {
		return nil, fmt.Errorf("bridge run: %w", err)
	}
	if err := nl.LinkDel(br); err != nil {
		return nil, fmt.Errorf("remove bridge: %w", err)
	}

	cfg := switchsw.Config{Device: int32(s0), BufferBytes: 4 << 20, FlowControl: fc.Config{Mode: "lossy"},
		Ports: []switchsw.PortConfig{{RateBps: 100e9, PeerIsHost: true, PeerHost: 0}, {RateBps: 100e9, PeerIsHost: true, PeerHost: 1}},
		FIB:   fib.Of([]uint8{0}, []uint8{1})}
	fwd, err := StartForwarder([]Switch{{Name: "s0", NSPath: l.NSPath("s0"), Config: cfg}}, 0)
	if err != nil {
		return nil, err
	}
	res.SwitchOffered, res.SwitchFPS, err = blast(ctx, gen, sink, frame, o.Duration)
	fs, ferr := fwd.Stop()
	res.Forwarder = fs
	if err = errors.Join(err, ferr); err != nil {
		return nil, fmt.Errorf("Go switch run: %w", err)
	}
	if res.BridgeFPS > 0 {
		res.Ratio = res.SwitchFPS / res.BridgeFPS
	}
	return res, nil
}

// blast floods frame from gen for d while counting arrivals at sink; it returns offered and received
// frames per second over the same window.
func blast(ctx context.Context, gen, sink *netns.PacketPort, frame []byte, d time.Duration) (offered, got float64, err error) {
	drain(sink)
	var stop atomic.Bool
	var rx atomic.Uint64
	var wg sync.WaitGroup
	var rerr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		fds := []unix.PollFd{{Fd: int32(sink.Fd()), Events: unix.POLLIN}}
		for !stop.Load() {
			n, err := sink.Recv(func([]byte) {})
			if err != nil {
				rerr = err
				return
			}
			rx.Add(uint64(n))
			if n == 0 {
				unix.Poll(fds, 10)
			}
		}
	}()
	batch := make([][]byte, netns.PortBatch)
	for i := range batch {
		batch[i] = frame
	}
	// Let the receiver start, then count over exactly the window the generator runs.
	time.Sleep(10 * time.Millisecond)
	start, rx0 := time.Now(), rx.Load()
	var sent uint64
	for time.Since(start) < d && ctx.Err() == nil {
		n, serr := gen.Send(batch)
		sent += uint64(n)
		if serr != nil && !errors.Is(serr, netns.ErrPortFull) {
			err = serr
			break
		}
	}
	el := time.Since(start).Seconds()
	rxN := rx.Load() - rx0
	time.Sleep(20 * time.Millisecond) // frames in flight at the end are not counted: the window is closed
	stop.Store(true)
	wg.Wait()
	return float64(sent) / el, float64(rxN) / el, errors.Join(err, rerr, ctx.Err())
}

func drain(p *netns.PacketPort) {
	for {
		if n, err := p.Recv(func([]byte) {}); n == 0 || err != nil {
			return
		}
	}
}

// udpFrame is a size-byte Ethernet/IPv4/UDP frame from host src to host dst (lab addresses, UDP
// checksum 0, which IPv4 allows). It is not RoCEv2 (port 9, discard), so switches see pkt.IP.
func udpFrame(src, dst, size int) []byte {
	f := make([]byte, size)
	copy(f[0:], wire.HostMAC(dst))
	copy(f[6:], wire.HostMAC(src))
	binary.BigEndian.PutUint16(f[12:], wire.EtherTypeIPv4)
	ip := f[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, unix.IPPROTO_UDP
	binary.BigEndian.PutUint16(ip[2:], uint16(size-14))
	s, d := wire.HostIP(src).As4(), wire.HostIP(dst).As4()
	copy(ip[12:], s[:])
	copy(ip[16:], d[:])
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	udp := f[34:42]
	binary.BigEndian.PutUint16(udp[0:], 9)
	binary.BigEndian.PutUint16(udp[2:], 9)
	binary.BigEndian.PutUint16(udp[4:], uint16(size-34))
	return f
}
