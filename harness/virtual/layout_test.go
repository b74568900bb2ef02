package virtual

import (
	"testing"
	"unsafe"
)

// TestLinkLayout: what Send and deliver read lies in the link's first 128 bytes, and the link is 256
// bytes, a size class whose objects start on 256-byte boundaries, so those bytes are one aligned pair
// of cache lines (see link).
func TestLinkLayout(t *testing.T) {
	var l link
	if s := unsafe.Sizeof(l); s != 256 {
		t.Errorf("link is %d bytes, want 256", s)
	}
	hot := map[string]uintptr{"clk": unsafe.Offsetof(l.clk), "delay": unsafe.Offsetof(l.delay),
		"flight": unsafe.Offsetof(l.flight) + unsafe.Sizeof(l.flight) - 1, "check": unsafe.Offsetof(l.check),
		"meter": unsafe.Offsetof(l.meter), "to": unsafe.Offsetof(l.to) + unsafe.Sizeof(l.to) - 1,
		"port": unsafe.Offsetof(l.port), "ord": unsafe.Offsetof(l.ord), "pending": unsafe.Offsetof(l.pending),
		"pcap": unsafe.Offsetof(l.pcap), "cross": unsafe.Offsetof(l.cross)}
	for name, end := range hot {
		if end >= 128 {
			t.Errorf("link.%s ends at byte %d, past the first two cache lines", name, end)
		}
	}
}
