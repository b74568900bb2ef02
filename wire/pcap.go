package wire

import (
	"bufio"
	"encoding/binary"
	"io"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

// PcapWriter writes frames to a pcap file (Ethernet link type, nanosecond timestamps), readable by
// Wireshark and tcpdump. It buffers; call Flush or Close. Not safe for concurrent use: give each goroutine
// (each agent port loop) its own writer, or serialize calls.
//
// The format (libpcap's, nanosecond variant) is two fixed headers, so it is written here rather than
// through gopacket's pcapgo: pcapgo imports gopacket/layers, whose package initialisation fills
// 65536-entry protocol tables and costs every lab process 10 MB of memory and 4 ms at start, whether
// or not it captures. The tests read the files back with pcapgo and decode them with gopacket.
type PcapWriter struct {
	bw      *bufio.Writer
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
	var h [24]byte
	le := binary.LittleEndian
	le.PutUint32(h[0:], pcapMagicNanos)
	le.PutUint16(h[4:], 2) // version 2.4
	le.PutUint16(h[6:], 4)
	// h[8:16]: time zone offset and timestamp accuracy, both 0 as every writer sets them.
	le.PutUint32(h[16:], uint32(snaplen))
	le.PutUint32(h[20:], linkTypeEthernet)
	if _, err := bw.Write(h[:]); err != nil {
		return nil, err
	}
	return &PcapWriter{bw: bw, under: w, snaplen: snaplen}, nil
}

const (
	pcapMagicNanos   = 0xa1b23c4d // libpcap's magic for nanosecond timestamps
	linkTypeEthernet = 1          // LINKTYPE_ETHERNET
)

// WriteFrame records one frame seen at ts.
func (pw *PcapWriter) WriteFrame(ts time.Time, frame []byte) error {
	data := frame
	if len(data) > pw.snaplen {
		data = data[:pw.snaplen]
	}
	var h [16]byte
	le := binary.LittleEndian
	le.PutUint32(h[0:], uint32(ts.Unix())) // as pcapgo does: a Base before 1970 wraps, as in libpcap
	le.PutUint32(h[4:], uint32(ts.Nanosecond()))
	le.PutUint32(h[8:], uint32(len(data)))
	le.PutUint32(h[12:], uint32(len(frame)))
	if _, err := pw.bw.Write(h[:]); err != nil {
		return err
	}
	_, err := pw.bw.Write(data)
	return err
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
