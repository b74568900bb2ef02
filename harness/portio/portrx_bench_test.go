package portio

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/harness/nslink/nstest"

	cnins "github.com/containernetworking/plugins/pkg/ns"
	"golang.org/x/sys/unix"
)

// BenchmarkPortRx moves 1000-byte frames from h0 to s0 over one veth, 64 per send, and reports the
// process's CPU (user + system: the receiving softirq runs in the sender's system call) per frame
// received, for each way of receiving: recvmmsg, a TPACKET_V2 ring (the batched data path), a
// TPACKET_V3 block ring, AF_XDP; then AF_XDP sending to AF_XDP (the xdp data path), to a V2 ring and to
// a V3 ring. The sending side is the same AF_PACKET sendmmsg in the first four, so their differences
// are the receiving side's. FABRICLAB_BENCH_BATCH=N sends N frames per call (AF_XDP to AF_XDP: 1.29-1.30
// us a frame at 8, 1.21 at 16, 1.19 at 64 on the VM of 2026-11-27; 0.77 at 1, 0.58 at 4, 0.51-0.53 at
// 64 on the one of 2026-11-28, whose kernel path costs less than half as much). Root; takes the
// namespace lock.
//
//	go test -run - -bench PortRx -benchtime 20000x ./harness/netns/
func BenchmarkPortRx(b *testing.B) {
	nstest.NeedRoot(b)
	lock, err := os.OpenFile("/tmp/fabriclab-netns.lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		b.Fatal(err)
	}
	name := fmt.Sprintf("brx%d", os.Getpid())
	l, err := nslink.Up(context.Background(), name, nstest.Tiny(), nslink.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer nslink.Down(name)
	for _, c := range []string{"recvmmsg", "tpacket_v2", "tpacket_v3", "af_xdp", "af_xdp_both", "af_xdp_tx_v2", "af_xdp_tx_v3"} {
		b.Run(c, func(b *testing.B) { benchRx(b, l, c) })
	}
}

func benchRx(b *testing.B, l *nslink.Lab, how string) {
	var tx, rx Port
	var err error
	if strings.HasPrefix(how, "af_xdp_") {
		tx, err = OpenXDPPort(l.NSPath("h0"), nslink.PortName(0), 1500, 0)
	} else {
		tx, err = OpenPacketPort(l.NSPath("h0"), nslink.PortName(0), 1500)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Close()
	switch how {
	case "recvmmsg":
		rx, err = OpenPacketPort(l.NSPath("s0"), nslink.PortName(0), 1500)
	case "tpacket_v2", "af_xdp_tx_v2":
		rx, err = OpenPacketPortRing(l.NSPath("s0"), nslink.PortName(0), 1500, 512)
	case "tpacket_v3", "af_xdp_tx_v3":
		rx, err = openV3(l.NSPath("s0"))
	default:
		rx, err = OpenXDPPort(l.NSPath("s0"), nslink.PortName(0), 1500, 512)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer rx.Close()
	batch := 64
	if v, err := strconv.Atoi(os.Getenv("FABRICLAB_BENCH_BATCH")); err == nil && v > 0 {
		batch = v
	}
	frames := make([][]byte, batch)
	for i := range frames {
		frames[i] = make([]byte, 1000)
		copy(frames[i], []byte{0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x88, 0xb6})
	}
	got := 0
	count := func([]byte) { got++ }
	cpu0 := cpuNow()
	for b.Loop() {
		if _, err := tx.Send(frames); err != nil {
			b.Fatal(err)
		}
		for {
			n, err := rx.Recv(count)
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
	}
	cpu := cpuNow() - cpu0
	for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); { // V3's last block
		rx.Recv(count)
	}
	if got < b.N*len(frames)*9/10 {
		b.Fatalf("received %d of %d frames", got, b.N*len(frames))
	}
	b.ReportMetric(float64(cpu)/float64(got), "cpu_ns/frame")
}

func cpuNow() int64 {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// v3Port reads a TPACKET_V3 ring: the kernel fills 64 KB blocks and hands one to user space when it is
// full or its 1 ms timer fires (which is why the agent does not use it: a frame must be readable
// within a quarter link delay of its writing).
type v3Port struct {
	fd     int
	mem    []byte
	blocks int
	head   int
}

const v3Block = 64 << 10

func openV3(nsPath string) (*v3Port, error) {
	var p *v3Port
	err := withNS(nsPath, func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		p = &v3Port{fd: fd, blocks: 16}
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
			return err
		}
		req := unix.TpacketReq3{Block_size: v3Block, Block_nr: uint32(p.blocks), Frame_size: 2048,
			Frame_nr: uint32(p.blocks * v3Block / 2048), Retire_blk_tov: 1}
		if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
			return err
		}
		if p.mem, err = unix.Mmap(fd, 0, v3Block*p.blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
			return err
		}
		ifi, err := interfaceIndex(nslink.PortName(0))
		if err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi})
	})
	return p, err
}

func withNS(nsPath string, fn func() error) error {
	return cnins.WithNetNSPath(nsPath, func(cnins.NetNS) error { return fn() })
}

// Recv hands every frame of the next retired block to fn and gives the block back.
func (p *v3Port) Recv(fn func([]byte)) (int, error) {
	blk := p.mem[p.head*v3Block : (p.head+1)*v3Block]
	bd := (*unix.TpacketBlockDesc)(unsafe.Pointer(&blk[0]))
	h := (*unix.TpacketHdrV1)(unsafe.Pointer(&bd.Hdr[0]))
	if atomic.LoadUint32(&h.Block_status)&unix.TP_STATUS_USER == 0 {
		return 0, nil
	}
	off := h.Offset_to_first_pkt
	n := int(h.Num_pkts)
	for i := 0; i < n; i++ {
		ph := (*unix.Tpacket3Hdr)(unsafe.Pointer(&blk[off]))
		fn(blk[off+uint32(ph.Mac) : off+uint32(ph.Mac)+ph.Snaplen])
		off += ph.Next_offset
	}
	atomic.StoreUint32(&h.Block_status, unix.TP_STATUS_KERNEL)
	p.head = (p.head + 1) % p.blocks
	return n, nil
}

func (p *v3Port) Send([][]byte) (int, error) { return 0, nil }
func (p *v3Port) Fd() int                    { return p.fd }
func (p *v3Port) Ring() bool                 { return true }
func (p *v3Port) Close() error {
	unix.Munmap(p.mem)
	return unix.Close(p.fd)
}
