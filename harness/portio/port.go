// Package portio is the port data path: one lab port (interface p<i> in a device's namespace) as a
// socket an agent sends and receives raw Ethernet frames on, behind the small Port interface: AF_XDP
// (XDPPort, xdp.go), AF_PACKET with sendmmsg/recvmmsg (PacketPort), and a TPACKET_V2 receive ring
// (portring.go). It opens sockets inside namespaces nslink made; it knows nothing of engines or
// lockstep.
package portio

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	cnins "github.com/containernetworking/plugins/pkg/ns"
	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/harness/nslink"
)

// PacketPort is one lab port as an AF_PACKET socket: raw Ethernet frames in and out of interface p<i>
// of a device's namespace. The socket is opened inside the namespace and stays bound to it, so the
// process using it can live anywhere. It is non-blocking; the owner polls Fd (ppoll/epoll) and moves
// frames in batches with recvmmsg/sendmmsg (docs/architecture.md §Measured choices: the best all-rounder
// measured; TPACKET_V3 rings added ~1 ms per hop).
//
// Offload policy: labs are created with offloads off (see setOffloadsOff), so every frame read is one
// MTU-sized frame with a valid checksum, and no PACKET_VNET_HDR is needed. PACKET_IGNORE_OUTGOING keeps
// our own transmissions out of the receive path.
type PacketPort struct {
	fd      int
	ifindex int
	Name    string

	rxHdr  []unix.Mmsghdr
	rxIov  []unix.Iovec
	rxBufs [][]byte
	txHdr  []unix.Mmsghdr
	txIov  []unix.Iovec
	ring   *rxRing // receive ring (portring.go); nil: recvmmsg
}

// PortBatch is how many frames one recvmmsg/sendmmsg moves at most.
const PortBatch = 64

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// OpenPacketPort opens interface ifname inside the namespace at nsPath (a bind mount such as
// /run/netns/fl-lab-h0; "" means the caller's namespace). mtu sizes the receive buffers (0: MaxMTU).
func OpenPacketPort(nsPath, ifname string, mtu int) (*PacketPort, error) {
	return OpenPacketPortRing(nsPath, ifname, mtu, 0)
}

// OpenPacketPortRing is OpenPacketPort reading through a receive ring of ringFrames frames (portring.go;
// 0: none, recvmmsg). A ring must hold every frame written to the port before its reader looks: a
// full ring drops what comes next. FABRICLAB_RXRING=0 turns rings off.
func OpenPacketPortRing(nsPath, ifname string, mtu, ringFrames int) (*PacketPort, error) {
	if os.Getenv(RxRingEnv) == "0" {
		ringFrames = 0
	}
	if nsPath == "" {
		return openPacketPort(ifname, mtu, ringFrames)
	}
	var p *PacketPort
	err := cnins.WithNetNSPath(nsPath, func(cnins.NetNS) error {
		var err error
		p, err = openPacketPort(ifname, mtu, ringFrames)
		return err
	})
	return p, err
}

func openPacketPort(ifname string, mtu, ringFrames int) (*PacketPort, error) {
	if mtu <= 0 || mtu > nslink.MaxMTU {
		mtu = nslink.MaxMTU
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return nil, fmt.Errorf("AF_PACKET socket for %s: %w", ifname, nslink.WrapPerm(err))
	}
	var ring *rxRing
	fail := func(what string, err error) (*PacketPort, error) {
		ring.close()
		unix.Close(fd)
		return nil, fmt.Errorf("port %s: %s: %w", ifname, what, err)
	}
	ifr, err := unix.NewIfreq(ifname)
	if err != nil {
		return fail("interface name", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return fail("no such interface in this namespace", err)
	}
	idx := int(ifr.Uint32())
	if ringFrames > 0 {
		if ring, err = setupRxRing(fd, mtu, ringFrames); err != nil {
			return fail("receive ring", err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: idx}); err != nil {
		return fail("bind", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return fail("PACKET_IGNORE_OUTGOING", err)
	}
	// Frames go straight to the veth's transmit, past the queueing discipline: the engines do the
	// queueing, and a veth's qdisc (noqueue) would only add its locking and accounting per frame.
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
		return fail("PACKET_QDISC_BYPASS", err)
	}
	// Enough socket buffer for a few batches: the engines pace, so the kernel should never hold more.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
	p := &PacketPort{fd: fd, ifindex: idx, Name: ifname, ring: ring,
		rxHdr: make([]unix.Mmsghdr, PortBatch), rxIov: make([]unix.Iovec, PortBatch), rxBufs: make([][]byte, PortBatch),
		txHdr: make([]unix.Mmsghdr, PortBatch), txIov: make([]unix.Iovec, PortBatch)}
	for i := range p.rxBufs {
		p.rxBufs[i] = make([]byte, mtu+14)
		p.rxIov[i].Base = &p.rxBufs[i][0]
		p.rxIov[i].SetLen(len(p.rxBufs[i]))
		p.rxHdr[i].Hdr.Iov = &p.rxIov[i]
		p.rxHdr[i].Hdr.SetIovlen(1)
	}
	return p, nil
}

// Ring says whether the port reads through a receive ring (checking it for frames costs no system call).
func (p *PacketPort) Ring() bool { return p.ring != nil }

// Fd is the socket, for polling.
func (p *PacketPort) Fd() int { return p.fd }

// Close closes the socket.
func (p *PacketPort) Close() error {
	p.ring.close()
	return unix.Close(p.fd)
}

// Recv reads up to PortBatch waiting frames without blocking and calls fn for each; the slice is only
// valid during the call. It returns how many frames it read (0 when none were waiting).
func (p *PacketPort) Recv(fn func(frame []byte)) (int, error) {
	if p.ring != nil {
		return p.ring.recv(PortBatch, fn), nil
	}
	for i := range p.rxHdr {
		p.rxHdr[i].Len = 0
	}
	n, _, errno := unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(p.fd), uintptr(unsafe.Pointer(&p.rxHdr[0])),
		uintptr(len(p.rxHdr)), unix.MSG_DONTWAIT, 0, 0)
	runtime.KeepAlive(p)
	if errno != 0 {
		if errno == unix.EAGAIN || errno == unix.EINTR {
			return 0, nil
		}
		return 0, fmt.Errorf("port %s: recvmmsg: %w", p.Name, errno)
	}
	for i := 0; i < int(n); i++ {
		fn(p.rxBufs[i][:p.rxHdr[i].Len])
	}
	return int(n), nil
}

// ErrPortFull says the kernel would not take more frames right now.
var ErrPortFull = errors.New("socket send buffer full")

// Send writes frames with as few sendmmsg calls as possible and returns how many were written. A
// partial count (the veth's queue or the socket buffer was full) is retried immediately a few times;
// if the kernel still refuses, Send returns the count and ErrPortFull and the caller decides (the
// engine already paced these frames, so a full kernel queue means the peer's agent is not reading).
func (p *PacketPort) Send(frames [][]byte) (int, error) {
	sent, stalls := 0, 0
	for sent < len(frames) {
		batch := frames[sent:]
		if len(batch) > PortBatch {
			batch = batch[:PortBatch]
		}
		for i, f := range batch {
			p.txIov[i].Base = &f[0]
			p.txIov[i].SetLen(len(f))
			p.txHdr[i] = unix.Mmsghdr{}
			p.txHdr[i].Hdr.Iov = &p.txIov[i]
			p.txHdr[i].Hdr.SetIovlen(1)
		}
		n, _, errno := unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(p.fd), uintptr(unsafe.Pointer(&p.txHdr[0])),
			uintptr(len(batch)), unix.MSG_DONTWAIT, 0, 0)
		runtime.KeepAlive(batch)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN || errno == unix.ENOBUFS || (errno == 0 && n == 0):
			if stalls++; stalls > 1000 {
				return sent, fmt.Errorf("port %s: %w", p.Name, ErrPortFull)
			}
			runtime.Gosched()
			continue
		case errno != 0:
			return sent, fmt.Errorf("port %s: sendmmsg: %w", p.Name, errno)
		}
		sent += int(n)
	}
	return sent, nil
}

// DatapathEnv selects the agents' data path: unset or "xdp" (AF_XDP sockets, xdp.go), "batched" (the
// same loop on AF_PACKET sockets with receive rings), "legacy" (the one of 26274ad: a frame written
// when due, a port flushed at every loop step, decoded frames cloned), kept while `lab bench` compares
// them side by side. Agents inherit it from the process that starts them.
const DatapathEnv = "FABRICLAB_DATAPATH"
