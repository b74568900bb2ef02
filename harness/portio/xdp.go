package portio

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	cnins "github.com/containernetworking/plugins/pkg/ns"
	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/harness/nslink"
)

// XDPPort is one lab port as an AF_XDP socket in copy mode: an XDP program on the interface hands every
// frame it receives to the socket (through an XSKMAP), which copies it into memory shared with this
// process (the UMEM); frames to send are written into the UMEM and the kernel is kicked once per batch.
// A received frame never reaches the namespace's IP stack (an AF_PACKET socket's frames went through
// it, to be dropped as not the host's: 8% of the agent's CPU), and reading one is a memory read.
//
// Frames stay Ethernet frames on the veth: tcpdump on the sending end shows them as it does AF_PACKET's
// (on the receiving end the XDP program takes them before the kernel's taps see them). veth takes the
// program in its driver (native) mode and in generic mode, the faster here (attach). veth has no
// zero-copy mode: each frame is copied once each way, like AF_PACKET's.
type XDPPort struct {
	fd   int
	Name string

	umem     []byte
	chunk    uint64 // bytes per UMEM frame
	fill, rx xdpRing
	tx, comp xdpRing
	free     []uint64 // UMEM frames free for sending
	rxFrames int      // the first rxFrames chunks belong to receiving, the rest to sending
	prog     *ebpf.Program
	xsks     *ebpf.Map
	attach   link.Link
	Mode     string // "native" or "generic": how the XDP program is attached
	// maxTx is the longest frame the interface sends: veth drops a longer one without a word where an
	// AF_PACKET socket says EMSGSIZE, so Send says it.
	maxTx int
}

// xdpRing is one of the four AF_XDP rings: a producer and a consumer index in shared memory and an
// array of descriptors (rx, tx: unix.XDPDesc; fill, completion: UMEM addresses).
type xdpRing struct {
	mem        []byte
	prod, cons *uint32
	desc       unsafe.Pointer
	mask       uint32
	size       uint32
}

func (r *xdpRing) xdesc(i uint32) *unix.XDPDesc {
	return (*unix.XDPDesc)(unsafe.Add(r.desc, uintptr(i&r.mask)*unsafe.Sizeof(unix.XDPDesc{})))
}

func (r *xdpRing) addr(i uint32) *uint64 {
	return (*uint64)(unsafe.Add(r.desc, uintptr(i&r.mask)*8))
}

// xdpHeadroom is the room the kernel leaves in front of a received frame in its UMEM chunk.
const xdpHeadroom = unix.XDP_PACKET_HEADROOM

// XDPMaxFrame is the longest frame the AF_XDP data path carries: a 4 KiB chunk less the kernel's
// headroom (larger chunks need unaligned mode, and veth's native XDP needs multi-buffer past ~3.5 KB).
const XDPMaxFrame = 4096 - xdpHeadroom

// XDPError is a port the kernel would not give an AF_XDP socket: which interface, which step and the
// errno, so a caller can fall back to AF_PACKET and say why.
type XDPError struct {
	Ifname string
	Step   string
	Err    error
}

func (e *XDPError) Error() string {
	var errno unix.Errno
	name := ""
	if errors.As(e.Err, &errno) {
		name = " (" + unix.ErrnoName(errno) + ")"
	}
	return fmt.Sprintf("AF_XDP on %s: %s: %v%s", e.Ifname, e.Step, e.Err, name)
}

func (e *XDPError) Unwrap() error { return e.Err }

// EveryPort says whether the refusal would be the answer for every port of the process, so a caller
// need not ask again for the next: the kernel or the process's privileges refuse AF_XDP sockets or XDP
// programs as such (no such socket family, no permission, not supported, a program the kernel will not
// load), or the MTU (one for every port of an agent) is more than AF_XDP's frames hold. What belongs
// to one interface (missing, busy, someone else's program on it) or to one port's receive ring is that
// port's alone, and a refusal that names such an errno anywhere is one, whatever else it names (the
// attach step joins two modes' errors).
func (e *XDPError) EveryPort() bool {
	switch e.Step {
	case xdpStepFrame, xdpStepProgram:
		return true
	case xdpStepRing, xdpStepIface:
		return false
	}
	for _, own := range []error{unix.EBUSY, unix.EEXIST, unix.ENODEV, unix.ENXIO} {
		if errors.Is(e.Err, own) {
			return false
		}
	}
	for _, all := range []error{nslink.ErrNotRoot, unix.EPERM, unix.EACCES, unix.EAFNOSUPPORT, unix.EPROTONOSUPPORT,
		unix.EOPNOTSUPP, unix.ENOSYS, ebpf.ErrNotSupported} {
		if errors.Is(e.Err, all) {
			return true
		}
	}
	return false
}

// The steps of OpenXDPPort that EveryPort judges by the step alone.
const (
	xdpStepFrame   = "frame size"
	xdpStepRing    = "receive ring"
	xdpStepIface   = "no such interface in this namespace"
	xdpStepProgram = "XDP program"
)

// XDPRxMax is the most received frames an AF_XDP port's rings hold (32 MB of UMEM at 2 KB a frame). A
// caller asking for more (OpenXDPPort's rxFrames) is refused, step "receive ring", rather than given
// rings smaller than it said its peer can fill; the agent asks 64 or 4096 (agent.xdpRxFrames).
const XDPRxMax = 1 << 14

// OpenXDPPort opens interface ifname inside the namespace at nsPath ("": the caller's) as an AF_XDP
// port for frames of up to mtu+14 bytes, with room for rxFrames received frames waiting to be read
// (rounded up to a power of two, at least 64; more than XDPRxMax is refused). The XDP program and the
// socket go away when the port is closed or the process exits, whichever comes first.
func OpenXDPPort(nsPath, ifname string, mtu, rxFrames int) (*XDPPort, error) {
	if mtu <= 0 {
		mtu = nslink.DefaultMTU
	}
	if mtu+14 > XDPMaxFrame {
		return nil, &XDPError{ifname, xdpStepFrame, fmt.Errorf("MTU %d is more than AF_XDP's %d-byte frames hold", mtu, XDPMaxFrame)}
	}
	if rxFrames > XDPRxMax {
		return nil, &XDPError{ifname, xdpStepRing, fmt.Errorf("%d received frames to hold, more than AF_XDP's %d", rxFrames, XDPRxMax)}
	}
	if nsPath == "" {
		return openXDPPort(ifname, mtu, rxFrames)
	}
	var p *XDPPort
	err := cnins.WithNetNSPath(nsPath, func(cnins.NetNS) error {
		var err error
		p, err = openXDPPort(ifname, mtu, rxFrames)
		return err
	})
	return p, err
}

// XDPModeEnv set to "native" attaches the XDP program in veth's driver mode instead of generic (SKB)
// mode, for comparing the two.
const XDPModeEnv = "FABRICLAB_XDP_MODE"

// xdpTxFrames is how many UMEM frames a port sends from: a flush writes at most this many before
// kicking the kernel and reclaiming the ones it is done with (veth hands them back before the kick
// returns). A flush averaged 5-8 frames per port on NDC(4,1).
const xdpTxFrames = 128

func openXDPPort(ifname string, mtu, rxFrames int) (*XDPPort, error) {
	ifi, ifmtu, err := interfaceIndexMTU(ifname)
	if err != nil {
		return nil, &XDPError{ifname, xdpStepIface, err}
	}
	n := 64
	for n < rxFrames {
		n *= 2
	}
	p := &XDPPort{Name: ifname, rxFrames: n, fd: -1, chunk: 2048, maxTx: ifmtu + 14}
	if mtu+14+xdpHeadroom > 2048 {
		p.chunk = 4096
	}
	if err := p.open(ifi, n); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// open makes the socket, its UMEM and rings, and the XDP program that feeds it.
func (p *XDPPort) open(ifi, n int) (err error) {
	ifname := p.Name
	fail := func(step string, err error) error { return &XDPError{ifname, step, err} }
	if p.fd, err = unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0); err != nil {
		return fail("socket", nslink.WrapPerm(err))
	}
	if err := p.mapUmem(n + xdpTxFrames); err != nil {
		return fail("UMEM", err)
	}
	if err := p.mapRings(n); err != nil {
		return fail("rings", err)
	}
	// The transmit budget of one kick (32 frames before Linux 6.17 made it settable): a flush's frames
	// then go in one system call. Older kernels refuse the option and kick more often.
	_ = unix.SetsockoptInt(p.fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, xdpTxFrames)
	// A socket closed on this queue a moment ago holds it until the kernel has released it (deferred):
	// EBUSY for a few milliseconds, and for seconds when a whole lab's sockets were closed at once (a
	// run on a lab's namespaces right after a calibration's agent on them exited, load average 15 on 2
	// cores: fat-tree k=8's first port, of 768, still busy after 1 s, none after 5 s; Dragonfly(3,6,3)'s,
	// of 1,596, still busy after 5 s). The first port opened waits for them all. Someone else's socket
	// keeps it busy: refused after 30 s.
	for try := 0; ; try++ {
		err = unix.Bind(p.fd, &unix.SockaddrXDP{Flags: unix.XDP_COPY, Ifindex: uint32(ifi)})
		if err == nil {
			break
		}
		if err != unix.EBUSY || try == 3000 {
			return fail("bind", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.loadProgram(); err != nil {
		return fail(xdpStepProgram, err)
	}
	if err := p.attachProgram(ifi); err != nil {
		return fail("attaching the XDP program", err)
	}
	return nil
}

// attachProgram attaches the program as a BPF link (the kernel detaches it when the process goes), in
// generic mode first: on veth that measured 8-10% more frames per CPU-second than native, whose
// receive path copies every frame into a page of its own (skb_pp_cow_data) before the program runs.
// An interface that already has an XDP program (someone else's) refuses both, and is left alone.
func (p *XDPPort) attachProgram(ifi int) error {
	var errs []error
	modes := []string{"generic", "native"}
	if os.Getenv(XDPModeEnv) == "native" {
		modes = modes[1:]
	}
	for _, m := range modes {
		flags := link.XDPGenericMode
		if m == "native" {
			flags = link.XDPDriverMode
		}
		l, err := link.AttachXDP(link.XDPOptions{Program: p.prog, Interface: ifi, Flags: flags})
		if err == nil {
			p.attach, p.Mode = l, m
			return nil
		}
		errs = append(errs, fmt.Errorf("%s mode: %w", m, err))
	}
	if len(errs) == 2 {
		return fmt.Errorf("%w; %w", errs[0], errs[1]) // one line: the agent prints it
	}
	return errs[0]
}

func interfaceIndex(ifname string) (int, error) {
	ifi, _, err := interfaceIndexMTU(ifname)
	return ifi, err
}

// interfaceIndexMTU is the index and the MTU of interface ifname in this thread's namespace.
func interfaceIndexMTU(ifname string) (int, int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(ifname)
	if err != nil {
		return 0, 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, 0, err
	}
	ifi := int(ifr.Uint32())
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFMTU, ifr); err != nil {
		return 0, 0, err
	}
	return ifi, int(ifr.Uint32()), nil
}

// mapUmem maps and registers frames chunks and fills the fill ring's share (mapRings) later.
func (p *XDPPort) mapUmem(frames int) error {
	size := frames * int(p.chunk)
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return err
	}
	p.umem = mem
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&mem[0]))), Len: uint64(size), Size: uint32(p.chunk)}
	_, _, errno := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(p.fd), unix.SOL_XDP, unix.XDP_UMEM_REG,
		uintptr(unsafe.Pointer(&reg)), unsafe.Sizeof(reg), 0)
	if errno != 0 {
		return fmt.Errorf("XDP_UMEM_REG: %w", errno)
	}
	for i := p.rxFrames; i < frames; i++ {
		p.free = append(p.free, uint64(i)*p.chunk)
	}
	return nil
}

// mapRings sizes, maps and primes the four rings: the fill ring holds every receive frame.
func (p *XDPPort) mapRings(rx int) error {
	for _, s := range []struct{ opt, n int }{{unix.XDP_UMEM_FILL_RING, rx}, {unix.XDP_UMEM_COMPLETION_RING, xdpTxFrames},
		{unix.XDP_RX_RING, rx}, {unix.XDP_TX_RING, xdpTxFrames}} {
		if err := unix.SetsockoptInt(p.fd, unix.SOL_XDP, s.opt, s.n); err != nil {
			return fmt.Errorf("ring size (option %d): %w", s.opt, err)
		}
	}
	var off unix.XDPMmapOffsets
	ol := uint32(unsafe.Sizeof(off))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(p.fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&ol)), 0)
	if errno != 0 {
		return fmt.Errorf("XDP_MMAP_OFFSETS: %w", errno)
	}
	var err error
	desc := uint64(unsafe.Sizeof(unix.XDPDesc{}))
	if p.fill, err = mapXDPRing(p.fd, unix.XDP_UMEM_PGOFF_FILL_RING, off.Fr, rx, 8); err != nil {
		return err
	}
	if p.comp, err = mapXDPRing(p.fd, unix.XDP_UMEM_PGOFF_COMPLETION_RING, off.Cr, xdpTxFrames, 8); err != nil {
		return err
	}
	if p.rx, err = mapXDPRing(p.fd, unix.XDP_PGOFF_RX_RING, off.Rx, rx, desc); err != nil {
		return err
	}
	if p.tx, err = mapXDPRing(p.fd, unix.XDP_PGOFF_TX_RING, off.Tx, xdpTxFrames, desc); err != nil {
		return err
	}
	for i := 0; i < rx; i++ {
		*p.fill.addr(uint32(i)) = uint64(i) * p.chunk
	}
	atomic.StoreUint32(p.fill.prod, uint32(rx))
	return nil
}

func mapXDPRing(fd int, pgoff int64, off unix.XDPRingOffset, n int, descSize uint64) (xdpRing, error) {
	mem, err := unix.Mmap(fd, pgoff, int(off.Desc+uint64(n)*descSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return xdpRing{}, fmt.Errorf("mapping a ring: %w", err)
	}
	base := unsafe.Pointer(&mem[0])
	return xdpRing{mem: mem, prod: (*uint32)(unsafe.Add(base, off.Producer)), cons: (*uint32)(unsafe.Add(base, off.Consumer)),
		desc: unsafe.Add(base, off.Desc), mask: uint32(n - 1), size: uint32(n)}, nil
}

// loadProgram makes the port's XSKMAP, puts the socket in it and loads the program that redirects
// every frame of the receive queue to it (a frame of a queue without a socket goes on to the kernel).
func (p *XDPPort) loadProgram() error {
	var err error
	p.xsks, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		return fmt.Errorf("XSKMAP: %w", err)
	}
	if err := p.xsks.Put(uint32(0), uint32(p.fd)); err != nil {
		return fmt.Errorf("XSKMAP: %w", err)
	}
	p.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "fabriclab_xsk",
		Type: ebpf.XDP,
		Instructions: asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 16, asm.Word), // key: xdp_md.rx_queue_index
			asm.LoadMapPtr(asm.R1, p.xsks.FD()),
			asm.Mov.Imm(asm.R3, 2), // XDP_PASS when the queue has no socket
			asm.FnRedirectMap.Call(),
			asm.Return(),
		},
		License: "Dual MIT/GPL",
	})
	return err
}

// MemBytes is the memory the port's UMEM takes (locked in RAM by the kernel).
func (p *XDPPort) MemBytes() int { return len(p.umem) }

// Ring says the port is read without a system call (like a receive ring's).
func (p *XDPPort) Ring() bool { return true }

// Fd is the socket, for polling (readable when received frames wait).
func (p *XDPPort) Fd() int { return p.fd }

// Close detaches the program and frees the socket, rings and UMEM.
func (p *XDPPort) Close() error {
	if p.attach != nil {
		p.attach.Close()
	}
	if p.prog != nil {
		p.prog.Close()
	}
	if p.xsks != nil {
		p.xsks.Close()
	}
	for _, r := range []*xdpRing{&p.fill, &p.comp, &p.rx, &p.tx} {
		if r.mem != nil {
			unix.Munmap(r.mem)
			r.mem = nil
		}
	}
	var err error
	if p.fd >= 0 {
		err = unix.Close(p.fd)
		p.fd = -1
	}
	if p.umem != nil {
		unix.Munmap(p.umem)
		p.umem = nil
	}
	return err
}

// Recv hands up to PortBatch received frames to fn (each valid during the call only) and gives their
// frames back to the kernel's fill ring. It returns how many it read.
func (p *XDPPort) Recv(fn func(frame []byte)) (int, error) {
	cons := *p.rx.cons // only this process writes it
	n := atomic.LoadUint32(p.rx.prod) - cons
	if n == 0 {
		return 0, nil
	}
	n = min(n, PortBatch)
	fprod := *p.fill.prod
	for i := uint32(0); i < n; i++ {
		d := p.rx.xdesc(cons + i)
		if end := d.Addr + uint64(d.Len); end <= uint64(len(p.umem)) && d.Options&unix.XDP_PKT_CONTD == 0 {
			fn(p.umem[d.Addr:end:end])
		} else {
			fn(nil) // not one whole frame: decodes as malformed
		}
		*p.fill.addr(fprod + i) = d.Addr &^ (p.chunk - 1)
	}
	atomic.StoreUint32(p.rx.cons, cons+n)
	atomic.StoreUint32(p.fill.prod, fprod+n)
	return int(n), nil
}

// reclaim takes back the frames the kernel has sent.
func (p *XDPPort) reclaim() {
	cons := *p.comp.cons
	n := atomic.LoadUint32(p.comp.prod) - cons
	for i := uint32(0); i < n; i++ {
		p.free = append(p.free, *p.comp.addr(cons + i))
	}
	atomic.StoreUint32(p.comp.cons, cons+n)
}

// Slot lends a UMEM frame to encode the next frame into, as an empty slice with the chunk's capacity, so
// that Send queues it where it lies instead of copying it there (nil: none free; encode elsewhere). A
// slot goes back with Send, sent or not, or with Unslot.
func (p *XDPPort) Slot() []byte {
	if len(p.free) == 0 {
		p.reclaim()
		if len(p.free) == 0 {
			return nil
		}
	}
	a := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	return p.umem[a : a : a+p.chunk]
}

// Unslot gives back a slot the caller did not send.
func (p *XDPPort) Unslot(b []byte) {
	if a, ok := p.umemAddr(b); ok {
		p.free = append(p.free, a&^(p.chunk-1))
	}
}

// umemAddr is b's offset in the UMEM if b lies in it (a Slot).
func (p *XDPPort) umemAddr(b []byte) (uint64, bool) {
	if cap(b) == 0 {
		return 0, false
	}
	// Only the sending share: a received frame's chunk is back on the fill ring once Recv's fn returns.
	base := uintptr(unsafe.Pointer(unsafe.SliceData(p.umem)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if at < base+uintptr(p.rxFrames)*uintptr(p.chunk) || at >= base+uintptr(len(p.umem)) {
		return 0, false
	}
	return uint64(at - base), true
}

// Send queues frames on the transmit ring, copying into the UMEM those not encoded in a Slot, and kicks
// the kernel once per batch of as many as it can take. Like PacketPort.Send, a kernel that keeps
// refusing yields ErrPortFull with the count written; the slots of the frames not written are free again.
func (p *XDPPort) Send(frames [][]byte) (sent int, err error) {
	defer func() {
		for _, f := range frames[sent:] {
			p.Unslot(f)
		}
	}()
	for stalls := 0; sent < len(frames); {
		p.reclaim()
		prod := *p.tx.prod
		room := int(p.tx.size - (prod - atomic.LoadUint32(p.tx.cons)))
		n := 0
		for ; n < room && sent+n < len(frames); n++ {
			f := frames[sent+n]
			if len(f) > int(p.chunk) || len(f) > p.maxTx {
				atomic.StoreUint32(p.tx.prod, prod+uint32(n))
				p.kick()
				sent += n
				if len(f) > int(p.chunk) {
					return sent, fmt.Errorf("port %s: a %d-byte frame does not fit AF_XDP's %d-byte frames", p.Name, len(f), p.chunk)
				}
				return sent, fmt.Errorf("port %s: a %d-byte frame is longer than the interface's MTU %d allows: %w", p.Name, len(f), p.maxTx-14, unix.EMSGSIZE)
			}
			a, inUmem := p.umemAddr(f)
			if !inUmem {
				if len(p.free) == 0 {
					break
				}
				a = p.free[len(p.free)-1]
				p.free = p.free[:len(p.free)-1]
				copy(p.umem[a:], f)
			}
			*p.tx.xdesc(prod + uint32(n)) = unix.XDPDesc{Addr: a, Len: uint32(len(f))}
		}
		atomic.StoreUint32(p.tx.prod, prod+uint32(n))
		sent += n
		if err := p.kick(); err != nil {
			return sent, err
		}
		if n == 0 {
			if stalls++; stalls > 1000 {
				return sent, fmt.Errorf("port %s: %w", p.Name, ErrPortFull)
			}
			runtime.Gosched()
		}
	}
	return sent, nil
}

// kick has the kernel transmit what the transmit ring holds: copy mode sends from the sendto call, a
// budget of frames per call, so it repeats while the kernel says there is more.
func (p *XDPPort) kick() error {
	for tries := 0; atomic.LoadUint32(p.tx.cons) != *p.tx.prod; tries++ {
		if tries > 1000 {
			return fmt.Errorf("port %s: %w", p.Name, ErrPortFull)
		}
		_, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(p.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
		case unix.EAGAIN, unix.EBUSY, unix.ENOBUFS, unix.EINTR:
			// The budget was spent or the completion ring is full: reclaim and go on.
			p.reclaim()
		default:
			return fmt.Errorf("port %s: AF_XDP send: %w", p.Name, errno)
		}
	}
	return nil
}

// Stats are the socket's kernel counters (frames it dropped for want of room, bad descriptors).
func (p *XDPPort) Stats() (unix.XDPStatistics, error) {
	var s unix.XDPStatistics
	l := uint32(unsafe.Sizeof(s))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(p.fd), unix.SOL_XDP, unix.XDP_STATISTICS,
		uintptr(unsafe.Pointer(&s)), uintptr(unsafe.Pointer(&l)), 0)
	if errno != 0 {
		return s, errno
	}
	return s, nil
}

// Port is a lab port as an agent moves frames through it: an AF_PACKET socket (PacketPort) or an
// AF_XDP one (XDPPort).
type Port interface {
	// Send writes frames, as few system calls as it can, and returns how many went.
	Send(frames [][]byte) (int, error)
	// Recv hands up to PortBatch waiting frames to fn (each valid during the call only).
	Recv(fn func(frame []byte)) (int, error)
	Fd() int
	// Ring says frames are read from shared memory: looking for them costs no system call.
	Ring() bool
	Close() error
}

// A Slotter is a Port that lends the buffers frames are encoded in (XDPPort: its UMEM).
type Slotter interface {
	Slot() []byte
	Unslot([]byte)
}

var (
	_ Port    = (*PacketPort)(nil)
	_ Port    = (*XDPPort)(nil)
	_ Slotter = (*XDPPort)(nil)
)

// Datapaths are the values DatapathEnv takes: xdp (batched, through AF_XDP sockets), batched (through
// AF_PACKET sockets with receive rings) and legacy (26274ad's).
var Datapaths = []string{"xdp", "batched", "legacy"}

// DefaultDatapath is the data path of an agent started without DatapathEnv: AF_XDP moved 10-20% more
// frame-hops per CPU-second than AF_PACKET with rings (lab bench, NDC(4,1) and fat-tree k=4, 1 and 2
// agents, alternated in one run), and a port the kernel refuses it falls back to AF_PACKET.
const DefaultDatapath = "xdp"

// ValidDatapath says whether dp names a data path.
func ValidDatapath(dp string) bool {
	for _, d := range Datapaths {
		if d == dp {
			return true
		}
	}
	return false
}

// DatapathFromEnv is the data path DatapathEnv selects; unset (or not a data path's name) is the default.
func DatapathFromEnv() string {
	if dp := os.Getenv(DatapathEnv); ValidDatapath(dp) {
		return dp
	}
	return DefaultDatapath
}
