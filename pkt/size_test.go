package pkt

import (
	"testing"
	"unsafe"
)

// The descriptor fills a 128-byte size class exactly: a field added or moved that pads it past 128
// costs every queued packet 16 bytes (the next class is 144).
func TestPacketIs128Bytes(t *testing.T) {
	if n := unsafe.Sizeof(Packet{}); n != 128 {
		t.Fatalf("pkt.Packet is %d bytes, want 128", n)
	}
	var p Packet
	if off := unsafe.Offsetof(p.PSN); off+4 > 64 {
		t.Fatalf("PSN ends at byte %d, past the first cache line", off+4)
	}
}
