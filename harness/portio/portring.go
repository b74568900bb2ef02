package portio

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rxRing is a TPACKET_V2 receive ring: the kernel copies each frame into a slot of memory shared with
// this process and flips the slot's status, so reading a frame is a memory read, not a system call.
// (V2, not V3: V3 hands frames over a block at a time, after a block timeout, which added ~1 ms per hop.)
type rxRing struct {
	mem       []byte
	frameSize int
	perBlock  int // slots per block: a slot never straddles two blocks
	blockSize int
	frames    int
	head      int
}

// RxRingEnv turns the receive ring off ("0"): ports then read with recvmmsg.
const RxRingEnv = "FABRICLAB_RXRING"

// setupRxRing maps a receive ring for frames of up to mtu+14 bytes (before bind, so no frame is queued
// on the socket instead).
func setupRxRing(fd, mtu, frames int) (*rxRing, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return nil, fmt.Errorf("PACKET_VERSION: %w", err)
	}
	// A slot holds the header, the kernel's alignment padding and the frame.
	fs := (mtu + 14 + 32 + 64 + 15) &^ 15
	page := os.Getpagesize()
	block := (fs + page - 1) &^ (page - 1)
	for block < 64<<10 && block < fs*frames {
		block *= 2
	}
	per := block / fs
	blocks := (frames + per - 1) / per
	req := unix.TpacketReq{Block_size: uint32(block), Block_nr: uint32(blocks), Frame_size: uint32(fs), Frame_nr: uint32(blocks * per)}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return nil, fmt.Errorf("PACKET_RX_RING: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, block*blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping the receive ring: %w", err)
	}
	return &rxRing{mem: mem, frameSize: fs, perBlock: per, blockSize: block, frames: blocks * per}, nil
}

// recv hands up to max ready frames to fn (valid during the call only) and gives their slots back.
func (r *rxRing) recv(max int, fn func([]byte)) int {
	n := 0
	for n < max {
		off := r.head/r.perBlock*r.blockSize + r.head%r.perBlock*r.frameSize
		slot := r.mem[off : off+r.frameSize]
		h := (*unix.Tpacket2Hdr)(unsafe.Pointer(&slot[0]))
		status := atomic.LoadUint32(&h.Status)
		if status&unix.TP_STATUS_USER == 0 {
			break
		}
		if end := int(h.Mac) + int(h.Snaplen); end <= len(slot) && h.Snaplen == h.Len {
			fn(slot[h.Mac:end])
		} else {
			fn(slot[:0]) // cut short (longer than the MTU): an empty frame, which decodes as malformed
		}
		atomic.StoreUint32(&h.Status, unix.TP_STATUS_KERNEL)
		r.head++
		if r.head == r.frames {
			r.head = 0
		}
		n++
	}
	return n
}

func (r *rxRing) close() {
	if r != nil && r.mem != nil {
		unix.Munmap(r.mem)
		r.mem = nil
	}
}
