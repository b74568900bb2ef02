package wire

import (
	"bufio"
	"io"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

// PcapWriter writes frames to a pcap file (Ethernet link type, nanosecond timestamps), readable by
// Wireshark and tcpdump. It buffers; call Flush or Close. Not safe for concurrent use: give each goroutine
// (each agent port loop) its own writer, or serialize calls.
type PcapWriter struct {
	bw      *bufio.Writer
	w       *pcapgo.Writer
	under   io.Writer
	snaplen int
	// Base is the wall time WriteAt maps clock.Time 0 to. The zero value puts virtual runs at the Unix
	// epoch, which Wireshark shows as relative times just as well.
	Base time.Time
	buf  []byte
}

// DefaultSnaplen captures jumbo frames whole.
const DefaultSnaplen = 65535

// NewPcapWriter writes the pcap file header to w. snaplen <= 0 means DefaultSnaplen; longer frames are
// truncated in the file (their original length is still recorded).
func NewPcapWriter(w io.Writer, snaplen int) (*PcapWriter, error) {
	if snaplen <= 0 {
		snaplen = DefaultSnaplen
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	pw := pcapgo.NewWriterNanos(bw)
	if err := pw.WriteFileHeader(uint32(snaplen), layers.LinkTypeEthernet); err != nil {
		return nil, err
	}
	return &PcapWriter{bw: bw, w: pw, under: w, snaplen: snaplen}, nil
}

// WriteFrame records one frame seen at ts.
func (pw *PcapWriter) WriteFrame(ts time.Time, frame []byte) error {
	data := frame
	if len(data) > pw.snaplen {
		data = data[:pw.snaplen]
	}
	return pw.w.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(data), Length: len(frame)}, data)
}

// WriteAt records a frame at engine time t (Base + t, nanosecond resolution).
func (pw *PcapWriter) WriteAt(t clock.Time, frame []byte) error {
	return pw.WriteFrame(pw.Base.Add(t.Duration()), frame)
}

// WritePacket encodes p (see Encode) and records it at engine time t; the virtual backend uses it to
// produce the same pcaps the netns backend captures.
func (pw *PcapWriter) WritePacket(t clock.Time, p *pkt.Packet) error {
	b, err := Encode(p, pw.buf[:0])
	if err != nil {
		return err
	}
	pw.buf = b
	return pw.WriteAt(t, b)
}

// Flush writes buffered records to the underlying writer.
func (pw *PcapWriter) Flush() error { return pw.bw.Flush() }

// Close flushes, then closes the underlying writer if it is an io.Closer.
func (pw *PcapWriter) Close() error {
	err := pw.bw.Flush()
	if c, ok := pw.under.(io.Closer); ok {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
