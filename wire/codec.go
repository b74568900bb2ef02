package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

// Well-known numbers of fabriclab frames.
const (
	EtherTypeIPv4    = 0x0800
	EtherTypeMACCtrl = 0x8808 // IEEE 802.3 MAC control (PFC)
	EtherTypePortFC  = 0x88B5 // IEEE 802 local experimental EtherType 1

	RoCEv2Port = 4791 // IANA RoCEv2
	ProbePort  = 4792 // fabriclab telemetry probe (adjacent to RoCEv2, unassigned by IANA)

	PFCOpcode = 0x0101 // 802.1Qbb priority-based flow control

	// IPOptSourceRoute is the fabriclab source route option: RFC 4727 experimental option 30 with the copy
	// bit set (copy=1, class=0, number=30), so fragments would keep it.
	IPOptSourceRoute = 0x9E
	// MaxRouteHops is the longest source route an IPv4 header can carry (40 option bytes - 3).
	MaxRouteHops = 37

	ipTTL = 64

	MaxPSN = 1<<24 - 1

	// QPBase is added to a flow id to give the destination QP on the wire: QP 0 and QP 1 are InfiniBand's
	// management QPs (SMI, GSI), and Wireshark (rightly) decodes frames to them as MADs. A standard stack
	// never gives a connection those numbers, so neither do we.
	QPBase = 2
	// MaxFlowID is the largest flow id a frame can carry (24-bit QP minus QPBase).
	MaxFlowID = MaxPSN - QPBase
)

// BTH opcodes fabriclab uses (RC transport).
const (
	OpSendFirst  = 0x00
	OpSendMiddle = 0x01
	OpSendLast   = 0x02
	OpSendOnly   = 0x04
	OpAck        = 0x11 // RC ACKNOWLEDGE: BTH + AETH
	OpCNP        = 0x81 // RoCEv2 congestion notification packet
)

// AETH syndromes.
const (
	aethAck    = 0x1F // ACK with credit count 0x1F ("invalid"/not credit-limited)
	aethNakSeq = 0x60 // NAK, PSN sequence error: what go-back-N and IRN send on a gap

	// AckDelayUnit is the resolution of the reflected queueing delay an ACK carries in its MSN: 2^14 ps
	// (16 ns, a fifth of a 1000 B frame at 100 Gb/s) up to 275 ms (a 30 us delay dilated 1000 times).
	AckDelayUnit = 16384 * clock.Picosecond
	// dataMeta is how many payload bytes of a data packet carry SentAt and ProbeDelay (see Encode).
	dataMeta = 16
)

// Errors. Every error from Decode, Encode and the patch functions wraps one of these, so a port can count
// "malformed" and "not ours" separately with errors.Is.
var (
	// ErrMalformed: the bytes claim to be a frame fabriclab understands but are inconsistent or truncated.
	ErrMalformed = errors.New("malformed frame")
	// ErrUnsupported: a well-formed frame fabriclab does not handle (ARP, IPv6, VLAN tags, a non-lab
	// address, an RDMA opcode outside the subset engines use).
	ErrUnsupported = errors.New("unsupported frame")
	// ErrInvalidPacket: Encode was given a descriptor that cannot become a frame (a bug in the caller).
	ErrInvalidPacket = errors.New("invalid packet")
	// ErrNotECT: MarkCE on a frame that is not ECN-capable; the switch should drop instead of marking.
	ErrNotECT = errors.New("frame is not ECN-capable")
)

// Error is the concrete error type; its message starts with "wire: " and names what is wrong.
type Error struct {
	Class error // ErrMalformed, ErrUnsupported, ErrInvalidPacket or ErrNotECT
	Msg   string
}

func (e *Error) Error() string { return "wire: " + e.Msg }
func (e *Error) Unwrap() error { return e.Class }

func errf(class error, format string, args ...any) error {
	return &Error{Class: class, Msg: fmt.Sprintf(format, args...)}
}

// FrameSize is the wire size Encode produces for p (what p.Size must be), or -1 for kinds whose size is
// not determined by the descriptor (IP: len(Raw)) or an unknown kind.
func FrameSize(p *pkt.Packet) int {
	rb := pkt.RouteOptionBytes(len(p.Route))
	switch p.Kind {
	case pkt.Data:
		return pkt.RoCEv2Overhead + rb + int(p.Payload)
	case pkt.Ack:
		return pkt.AckSize + rb
	case pkt.Nack:
		return pkt.NackSize + rb
	case pkt.CNP:
		return pkt.CNPSize + rb
	case pkt.Probe:
		return pkt.ProbeSize + rb
	case pkt.PFC, pkt.PortFC:
		return pkt.MinFrame
	case pkt.IP:
		return len(p.Raw)
	}
	return -1
}

// Check reports whether Encode would accept p, without encoding it: the virtual backend calls it on
// every frame it carries, so a descriptor the real wire cannot carry fails there too, not only on netns
// (a go-back-N NAK sized without the IRN extension once went unnoticed in virtual runs for that reason).
func Check(p *pkt.Packet) error {
	switch p.Kind {
	case pkt.Data, pkt.Ack, pkt.Nack, pkt.CNP:
		if err := checkIPv4Packet(p, RoCEv2Port); err != nil {
			return err
		}
		if p.Flow > MaxFlowID || p.PSN > MaxPSN {
			return errf(ErrInvalidPacket, "%v packet Flow %d / PSN %d do not fit the 24-bit BTH fields (flow ids up to %d)", p.Kind, p.Flow, p.PSN, MaxFlowID)
		}
		if p.Kind == pkt.Data && p.Payload < 0 {
			return errf(ErrInvalidPacket, "data packet Payload %d", p.Payload)
		}
	case pkt.Probe:
		return checkIPv4Packet(p, ProbePort)
	case pkt.PFC, pkt.PortFC:
		if p.Size != pkt.MinFrame {
			return errf(ErrInvalidPacket, "%v packet Size %d, want %d", p.Kind, p.Size, pkt.MinFrame)
		}
	case pkt.IP:
		if p.Raw == nil {
			return errf(ErrInvalidPacket, "ip packet without Raw bytes")
		}
		if int(p.Size) != len(p.Raw) {
			return errf(ErrInvalidPacket, "ip packet Size %d but Raw has %d bytes", p.Size, len(p.Raw))
		}
		if len(p.Raw) < pkt.EthHdr+pkt.IPv4Hdr || binary.BigEndian.Uint16(p.Raw[12:]) != EtherTypeIPv4 {
			return errf(ErrInvalidPacket, "ip packet Raw is not an untagged IPv4 frame")
		}
	default:
		return errf(ErrInvalidPacket, "unknown packet kind %d", p.Kind)
	}
	return nil
}

// Encode appends the frame for p to buf and returns the extended slice. It allocates only when buf lacks
// capacity, so a port that reuses one buffer encodes without allocating.
//
// The descriptor must be self-consistent: Size must equal FrameSize(p) (Data: pkt.DataSize(Payload,
// len(Route)); Ack/Nack/CNP/Probe: their pkt constant plus pkt.RouteOptionBytes(len(Route))), DPort must be
// RoCEv2Port (ProbePort for probes) and Proto 17, Src/Dst valid host indices, Flow and PSN below 2^24
// (BTH fields are 24 bits). Otherwise Encode returns an ErrInvalidPacket error rather than silently
// producing a frame that decodes into a different descriptor (which would, for instance, change the ECMP
// hash between the virtual and netns backends).
//
// What each kind carries:
//   - all IPv4 kinds: Src, Dst, SPort, DPort, Proto, Prio (DSCP), ECN, Route, Hop.
//   - Data: Flow (dest QP), PSN, Last (opcode SEND_LAST vs SEND_MIDDLE, and the AckReq bit), Payload;
//     when Payload >= 16 the first 16 payload bytes carry SentAt and ProbeDelay (fabriclab-specific:
//     RoCE payload is opaque, so this costs no bytes and lets one-way delay and piggybacked telemetry
//     survive the wire).
//   - Ack: Flow, PSN (cumulative: the next PSN expected; on the wire BTH.PSN = PSN-1 mod 2^24, the last
//     PSN acknowledged, as RC ACKs mean it); ProbeDelay, the queueing delay the receiver reflects for
//     telemetry routing, in the AETH's 24-bit MSN (fabriclab-specific: engines do not track messages),
//     in units of AckDelayUnit, rounded down and saturating.
//   - Nack: Flow, PSN (the expected PSN, as an RC NAK-sequence-error means it), SackPSN (IRN extension).
//   - CNP: Flow, PSN.
//   - Probe: Flow, PSN, Last, SentAt, ProbeDelay.
//   - PFC: PauseMask, PauseQuanta. PortFC: FCPause, FCQueue, FCPort.
//   - IP: Raw is copied out; if Prio or ECN differ from Raw's, the copy gets DSCP=Prio<<3 / the new ECN and
//     a fixed header checksum (Raw itself is not modified).
func Encode(p *pkt.Packet, buf []byte) ([]byte, error) {
	if err := Check(p); err != nil {
		return buf, err
	}
	switch p.Kind {
	case pkt.Data, pkt.Ack, pkt.Nack, pkt.CNP:
		return encodeRoCE(p, buf)
	case pkt.Probe:
		return encodeProbe(p, buf)
	case pkt.PFC:
		buf, f := grow(buf, pkt.MinFrame)
		clear(f)
		copy(f[0:6], PFCDstMAC)
		copy(f[6:12], LinkSrcMAC)
		binary.BigEndian.PutUint16(f[12:], EtherTypeMACCtrl)
		binary.BigEndian.PutUint16(f[14:], PFCOpcode)
		binary.BigEndian.PutUint16(f[16:], uint16(p.PauseMask))
		for i, q := range p.PauseQuanta {
			binary.BigEndian.PutUint16(f[18+2*i:], q)
		}
		return buf, nil
	case pkt.PortFC:
		buf, f := grow(buf, pkt.MinFrame)
		clear(f)
		copy(f[0:6], PortFCDstMAC)
		copy(f[6:12], LinkSrcMAC)
		binary.BigEndian.PutUint16(f[12:], EtherTypePortFC)
		PutPortFC(f[14:], p.FCPause, p.FCQueue, p.FCPort, p.Hop)
		return buf, nil
	case pkt.IP:
		return encodeRaw(p, buf)
	}
	return buf, errf(ErrInvalidPacket, "unknown packet kind %d", p.Kind)
}

// grow extends buf by n bytes and returns it and the new n-byte tail.
func grow(buf []byte, n int) ([]byte, []byte) {
	l := len(buf)
	buf = slices.Grow(buf, n)[:l+n]
	return buf, buf[l:]
}

func checkIPv4Packet(p *pkt.Packet, dport uint16) error {
	if uint32(p.Src) >= MaxHosts || uint32(p.Dst) >= MaxHosts {
		return errf(ErrInvalidPacket, "%v packet Src %d / Dst %d: not host indices in [0, %d)", p.Kind, p.Src, p.Dst, MaxHosts)
	}
	if p.DPort != dport || p.Proto != 17 {
		return errf(ErrInvalidPacket, "%v packet DPort %d Proto %d, want %d and 17", p.Kind, p.DPort, p.Proto, dport)
	}
	if p.Prio > 7 || p.ECN > 3 {
		return errf(ErrInvalidPacket, "%v packet Prio %d ECN %d out of range", p.Kind, p.Prio, p.ECN)
	}
	if len(p.Route) > MaxRouteHops {
		return errf(ErrInvalidPacket, "%v packet source route has %d hops, an IPv4 option holds at most %d", p.Kind, len(p.Route), MaxRouteHops)
	}
	if p.Size-pkt.EthHdr > 0xffff {
		return errf(ErrInvalidPacket, "%v packet Size %d exceeds the IPv4 total length limit", p.Kind, p.Size)
	}
	if int(p.Hop) > len(p.Route) {
		return errf(ErrInvalidPacket, "%v packet Hop %d beyond its %d-hop route", p.Kind, p.Hop, len(p.Route))
	}
	if want := FrameSize(p); int(p.Size) != want {
		return errf(ErrInvalidPacket, "%v packet Size %d, want %d (payload %d, %d route hops)", p.Kind, p.Size, want, p.Payload, len(p.Route))
	}
	return nil
}

// putIPv4UDP writes Ethernet, IPv4 (with the source route option) and UDP headers for p into the frame f
// (len(f) = whole frame) and returns the offset of the UDP payload. The IPv4 checksum is left for the
// caller (finishIPv4), because RoCE frames first compute the ICRC over a masked header.
func putIPv4UDP(f []byte, p *pkt.Packet, dport uint16) int {
	putHostMAC(f[0:6], int(p.Dst))
	putHostMAC(f[6:12], int(p.Src))
	binary.BigEndian.PutUint16(f[12:], EtherTypeIPv4)
	rb := pkt.RouteOptionBytes(len(p.Route))
	ihl := pkt.IPv4Hdr + rb
	ip := f[pkt.EthHdr:]
	ip[0] = 0x40 | byte(ihl/4)
	ip[1] = p.Prio<<5 | p.ECN
	binary.BigEndian.PutUint16(ip[2:], uint16(len(f)-pkt.EthHdr))
	binary.BigEndian.PutUint32(ip[4:], 0x00004000) // ID 0, DF: RoCEv2 frames are never fragmented
	ip[8] = ipTTL
	ip[9] = 17
	ip[10], ip[11] = 0, 0
	s4, d4 := hostIP4(uint32(p.Src)), hostIP4(uint32(p.Dst))
	copy(ip[12:16], s4[:])
	copy(ip[16:20], d4[:])
	if rb > 0 {
		o := ip[20:ihl]
		o[0] = IPOptSourceRoute
		o[1] = byte(3 + len(p.Route))
		o[2] = p.Hop
		n := copy(o[3:], p.Route)
		clear(o[3+n:]) // EOL padding
	}
	u := ip[ihl:]
	binary.BigEndian.PutUint16(u[0:], p.SPort)
	binary.BigEndian.PutUint16(u[2:], dport)
	binary.BigEndian.PutUint16(u[4:], uint16(len(f)-pkt.EthHdr-ihl))
	u[6], u[7] = 0, 0 // no UDP checksum: allowed for IPv4 and what RoCEv2 NICs send
	return pkt.EthHdr + ihl + pkt.UDPHdr
}

func finishIPv4(f []byte) {
	ip := f[pkt.EthHdr:]
	ihl := int(ip[0]&15) * 4
	ip[10], ip[11] = 0, 0
	binary.BigEndian.PutUint16(ip[10:], ^onesSum(ip[:ihl]))
}

// onesSum is the folded 16-bit one's complement sum of an IPv4 header (len(b) a multiple of 4, at most
// 60). Summing 32-bit words into 64 bits and folding once is the same sum, with a quarter of the steps.
func onesSum(b []byte) uint16 {
	var s uint64
	for ; len(b) >= 4; b = b[4:] {
		s += uint64(binary.BigEndian.Uint32(b))
	}
	s = s>>32 + s&0xffffffff
	s = s>>16 + s&0xffff
	s = s>>16 + s&0xffff
	s += s >> 16
	return uint16(s)
}

// encodeRoCE, encodeProbe and encodeRaw take descriptors Check has accepted.
func encodeRoCE(p *pkt.Packet, buf []byte) ([]byte, error) {
	n := int(p.Size)
	buf, f := grow(buf, n)
	off := putIPv4UDP(f, p, RoCEv2Port)
	bth := f[off : off+pkt.BTHHdr]
	body := f[off+pkt.BTHHdr : n-pkt.ICRC]
	psn := p.PSN
	var op, flags byte
	switch p.Kind {
	case pkt.Data:
		// A flow is one message: PSN 0 opens it (PSNs start at 0 and never wrap, nodes refuses flows
		// that would), the Last packet closes it.
		op = OpSendMiddle
		switch {
		case p.PSN == 0 && p.Last:
			op, flags = OpSendOnly, 0x80
		case p.PSN == 0:
			op = OpSendFirst
		case p.Last:
			op, flags = OpSendLast, 0x80 // AckReq on the message's last packet
		}
		clear(body)
		if len(body) >= dataMeta {
			binary.BigEndian.PutUint64(body[0:], uint64(p.SentAt))
			binary.BigEndian.PutUint64(body[8:], uint64(p.ProbeDelay))
		}
	case pkt.Ack:
		op = OpAck
		psn = (psn - 1) & MaxPSN
		binary.BigEndian.PutUint32(body, aethAck<<24|ackDelayMSN(p.ProbeDelay))
	case pkt.Nack:
		op = OpAck
		binary.BigEndian.PutUint32(body, aethNakSeq<<24)
		binary.BigEndian.PutUint32(body[4:], p.SackPSN)
	case pkt.CNP:
		op = OpCNP
		clear(body)
	}
	bth[0] = op
	bth[1] = 0 // SE=0, M=0, PadCnt=0 (payload is not padded to 4 bytes), TVer=0
	bth[2], bth[3] = 0xff, 0xff
	binary.BigEndian.PutUint32(bth[4:], p.Flow+QPBase) // byte 4 (FECN/BECN/resv) is set below
	binary.BigEndian.PutUint32(bth[8:], psn)
	bth[8] = flags

	// ICRC: write the variant fields masked to ones, CRC, then write their real values. This avoids a
	// scratch copy of the pseudo-header. The source route option is already in place: the ICRC covers it.
	ip := f[pkt.EthHdr:]
	ihl := int(ip[0]&15) * 4
	ip[1], ip[8], ip[10], ip[11] = 0xff, 0xff, 0xff, 0xff
	u := ip[ihl:]
	u[6], u[7] = 0xff, 0xff
	bth[4] = 0xff
	binary.LittleEndian.PutUint32(f[n-pkt.ICRC:], icrcOf(f[pkt.EthHdr:n-pkt.ICRC]))
	ip[1], ip[8] = p.Prio<<5|p.ECN, ipTTL
	u[6], u[7] = 0, 0
	if p.Kind == pkt.CNP {
		bth[4] = 0x40 // BECN, as RoCEv2 CNPs set it
	} else {
		bth[4] = 0
	}
	finishIPv4(f)
	return buf, nil
}

func encodeProbe(p *pkt.Packet, buf []byte) ([]byte, error) {
	buf, f := grow(buf, int(p.Size))
	off := putIPv4UDP(f, p, ProbePort)
	PutProbe(f[off:], p.Flow, p.PSN, p.Last, int64(p.SentAt), int64(p.ProbeDelay))
	finishIPv4(f)
	return buf, nil
}

const (
	ProbeVersion  = 1
	ProbeTypePTM  = 1
	PortFCVersion = 1
	PortFCPause   = 1
	PortFCResume  = 2
)

// PortFCLen is the PortFC header after the Ethernet header: version/type, hops (reserved, 0), queue,
// port, via (the relaying node's ingress port + 1, 0 when not relayed: pkt.Packet.FCVia).
const PortFCLen = 8

func clockTime(v uint64) clock.Time { return clock.Time(int64(v)) }

// PutProbe writes a probe's 28-byte UDP payload (the layout Decode reads) into b.
func PutProbe(b []byte, flow, psn uint32, last bool, sentAt, delay int64) {
	b[0] = ProbeVersion<<4 | ProbeTypePTM
	b[1] = 0
	if last {
		b[1] = 1
	}
	b[2], b[3] = 0, 0
	binary.BigEndian.PutUint32(b[4:], flow)
	binary.BigEndian.PutUint32(b[8:], psn)
	binary.BigEndian.PutUint64(b[12:], uint64(sentAt))
	binary.BigEndian.PutUint64(b[20:], uint64(delay))
}

// PutPortFC writes a PortFC header (PortFCLen bytes after the Ethernet header) into b.
func PutPortFC(b []byte, pause bool, queue, port int16, via uint8) {
	t := byte(PortFCResume)
	if pause {
		t = PortFCPause
	}
	b[0] = PortFCVersion<<4 | t
	b[1] = 0 // reserved (a hop count if pauses are ever propagated in-band)
	binary.BigEndian.PutUint16(b[2:], uint16(queue))
	binary.BigEndian.PutUint16(b[4:], uint16(port))
	binary.BigEndian.PutUint16(b[6:], uint16(via))
}

func encodeRaw(p *pkt.Packet, buf []byte) ([]byte, error) {
	l := len(buf)
	buf = append(buf, p.Raw...)
	f := buf[l:]
	tos := f[pkt.EthHdr+1]
	want := tos
	if DSCPPrio(tos>>2) != p.Prio {
		want = PrioDSCP(p.Prio)<<2 | want&3
	}
	if want&3 != p.ECN&3 {
		want = want&^3 | p.ECN&3
	}
	if want != tos {
		setHeaderByte(f[pkt.EthHdr:], 1, want)
	}
	return buf, nil
}

// Decode parses frame b into p, overwriting every field of p. It never panics; every frame it cannot
// turn into a descriptor yields an *Error wrapping ErrMalformed or ErrUnsupported, and p is then
// unspecified.
//
// p.Route (engine frames) and p.Raw (IP frames) alias b: keep b unmodified while p is in use, or copy.
// Route aliasing is what keeps Decode allocation-free; the engines never mutate Route.
//
// Decode does not check the ICRC (veths do not corrupt frames and checking costs a CRC over the whole
// payload); use VerifyICRC where that matters. It does check the IPv4 header checksum.
//
// For engine frames Size is the frame length the headers imply (Ethernet padding of short frames is
// not counted, so re-encoding reproduces Size); for PFC and PortFC it is pkt.MinFrame; for IP frames it
// is len(b).
func Decode(b []byte, p *pkt.Packet) error {
	*p = pkt.Packet{}
	if len(b) < pkt.EthHdr {
		return errf(ErrMalformed, "frame truncated: %d bytes, an Ethernet header is %d", len(b), pkt.EthHdr)
	}
	switch et := binary.BigEndian.Uint16(b[12:]); et {
	case EtherTypeIPv4:
		return decodeIPv4(b, p)
	case EtherTypeMACCtrl:
		return decodePFC(b, p)
	case EtherTypePortFC:
		return decodePortFC(b, p)
	case 0x8100, 0x88a8:
		return errf(ErrUnsupported, "VLAN-tagged frame (EtherType 0x%04x); fabriclab frames are untagged", et)
	default:
		return errf(ErrUnsupported, "EtherType 0x%04x", et)
	}
}

func decodePFC(b []byte, p *pkt.Packet) error {
	if len(b) < pkt.EthHdr+20 {
		return errf(ErrMalformed, "PFC frame truncated: %d bytes, want at least %d", len(b), pkt.EthHdr+20)
	}
	if op := binary.BigEndian.Uint16(b[14:]); op != PFCOpcode {
		return errf(ErrUnsupported, "MAC control opcode 0x%04x (only PFC 0x0101 is handled)", op)
	}
	p.Kind = pkt.PFC
	p.Size = pkt.MinFrame
	p.Src, p.Dst = -1, -1
	p.PauseMask = b[17]
	for i := range p.PauseQuanta {
		p.PauseQuanta[i] = binary.BigEndian.Uint16(b[18+2*i:])
	}
	return nil
}

func decodePortFC(b []byte, p *pkt.Packet) error {
	if len(b) < pkt.EthHdr+PortFCLen {
		return errf(ErrMalformed, "PortFC frame truncated: %d bytes, want at least %d", len(b), pkt.EthHdr+PortFCLen)
	}
	h := b[pkt.EthHdr:]
	if v := h[0] >> 4; v != PortFCVersion {
		return errf(ErrUnsupported, "PortFC version %d", v)
	}
	switch h[0] & 15 {
	case PortFCPause:
		p.FCPause = true
	case PortFCResume:
	default:
		return errf(ErrMalformed, "PortFC type %d, want 1 (pause) or 2 (resume)", h[0]&15)
	}
	p.Kind = pkt.PortFC
	p.Size = pkt.MinFrame
	p.Src, p.Dst = -1, -1
	p.FCQueue = int16(binary.BigEndian.Uint16(h[2:]))
	p.FCPort = int16(binary.BigEndian.Uint16(h[4:]))
	v := binary.BigEndian.Uint16(h[6:])
	if v > 255 {
		return errf(ErrMalformed, "PortFC via %d, want a node port + 1 below 256", v)
	}
	p.Hop = uint8(v)
	return nil
}

func decodeIPv4(b []byte, p *pkt.Packet) error {
	ip := b[pkt.EthHdr:]
	if len(ip) < pkt.IPv4Hdr {
		return errf(ErrMalformed, "IPv4 header truncated: %d bytes", len(ip))
	}
	if v := ip[0] >> 4; v != 4 {
		return errf(ErrMalformed, "IPv4 EtherType but IP version %d", v)
	}
	ihl := int(ip[0]&15) * 4
	if ihl < pkt.IPv4Hdr {
		return errf(ErrMalformed, "IPv4 header length %d < 20", ihl)
	}
	if len(ip) < ihl {
		return errf(ErrMalformed, "IPv4 header truncated: %d of %d bytes", len(ip), ihl)
	}
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	if tot == 0 {
		tot = len(ip) // a GSO frame from a kernel host may leave total length 0
	}
	if tot < ihl {
		return errf(ErrMalformed, "IPv4 total length %d < header length %d", tot, ihl)
	}
	if tot > len(ip) {
		return errf(ErrMalformed, "IPv4 total length %d exceeds the %d bytes after the Ethernet header", tot, len(ip))
	}
	if tot < len(ip) && len(b) > pkt.MinFrame {
		return errf(ErrMalformed, "%d bytes after the IPv4 packet (only padding to %d bytes is allowed)", len(ip)-tot, pkt.MinFrame)
	}
	if s := onesSum(ip[:ihl]); s != 0xffff {
		return errf(ErrMalformed, "IPv4 header checksum 0x%04x is wrong", binary.BigEndian.Uint16(ip[10:]))
	}
	ip = ip[:tot]
	src, sok := hostOf4(ip[12], ip[13], ip[14], ip[15])
	dst, dok := hostOf4(ip[16], ip[17], ip[18], ip[19])
	proto := ip[9]
	frag := binary.BigEndian.Uint16(ip[6:]) & 0x3fff // MF + offset
	if proto == 17 && frag == 0 && tot >= ihl+pkt.UDPHdr {
		if dp := binary.BigEndian.Uint16(ip[ihl+2:]); dp == RoCEv2Port || dp == ProbePort {
			if !sok || !dok {
				return errf(ErrMalformed, "UDP port %d frame between non-lab addresses %v -> %v", dp, addr4(ip[12:16]), addr4(ip[16:20]))
			}
			p.Src, p.Dst = int32(src), int32(dst)
			return decodeEngine(ip, ihl, dp, p)
		}
	}
	if !sok || !dok {
		return errf(ErrUnsupported, "IPv4 %v -> %v is not between lab hosts", addr4(ip[12:16]), addr4(ip[16:20]))
	}
	p.Kind = pkt.IP
	p.Size = int32(len(b))
	p.Src, p.Dst = int32(src), int32(dst)
	p.Proto = proto
	p.Prio = DSCPPrio(ip[1] >> 2)
	p.ECN = ip[1] & 3
	if (proto == 6 || proto == 17) && frag&0x1fff == 0 && tot >= ihl+4 {
		p.SPort = binary.BigEndian.Uint16(ip[ihl:])
		p.DPort = binary.BigEndian.Uint16(ip[ihl+2:])
	}
	p.Raw = b
	return nil
}

func addr4(b []byte) netip.Addr { return netip.AddrFrom4([4]byte(b[:4])) }

// decodeEngine parses a RoCEv2 or probe frame; ip is the IPv4 packet trimmed to its total length.
func decodeEngine(ip []byte, ihl int, dport uint16, p *pkt.Packet) error {
	if ihl > pkt.IPv4Hdr {
		// Only the canonical form Encode writes is accepted: the source route option first, then EOL
		// padding. Anything else would not re-encode to the same Size.
		o := ip[pkt.IPv4Hdr:ihl]
		if o[0] != IPOptSourceRoute {
			return errf(ErrMalformed, "IPv4 option type 0x%02x on a fabriclab frame (only the 0x9e source route is allowed)", o[0])
		}
		if len(o) < 3 || o[1] < 3 || int(o[1]) > len(o) {
			return errf(ErrMalformed, "source route option length %d in %d option bytes", o[1], len(o))
		}
		n := int(o[1]) - 3
		if pkt.RouteOptionBytes(n) != len(o) {
			return errf(ErrMalformed, "source route of %d hops in %d option bytes, want %d", n, len(o), pkt.RouteOptionBytes(n))
		}
		for _, c := range o[3+n:] {
			if c != 0 {
				return errf(ErrMalformed, "source route option padding is not EOL")
			}
		}
		if int(o[2]) > n {
			return errf(ErrMalformed, "source route hop index %d beyond its %d hops", o[2], n)
		}
		if n > 0 {
			p.Route = o[3 : 3+n : 3+n]
		}
		p.Hop = o[2]
	}
	u := ip[ihl:]
	if ul := int(binary.BigEndian.Uint16(u[4:])); ul != len(u) {
		return errf(ErrMalformed, "UDP length %d, IPv4 carries %d UDP bytes", ul, len(u))
	}
	p.Size = int32(pkt.EthHdr + len(ip))
	p.SPort = binary.BigEndian.Uint16(u[0:])
	p.DPort = dport
	p.Proto = 17
	p.Prio = DSCPPrio(ip[1] >> 2)
	p.ECN = ip[1] & 3
	u = u[pkt.UDPHdr:]
	if dport == ProbePort {
		if len(u) != pkt.ProbeHdr {
			return errf(ErrMalformed, "probe payload %d bytes, want %d", len(u), pkt.ProbeHdr)
		}
		if u[0] != ProbeVersion<<4|ProbeTypePTM {
			return errf(ErrUnsupported, "probe version/type byte 0x%02x", u[0])
		}
		p.Kind = pkt.Probe
		p.Last = u[1]&1 != 0
		p.Flow = binary.BigEndian.Uint32(u[4:])
		p.PSN = binary.BigEndian.Uint32(u[8:])
		p.SentAt = clockTime(binary.BigEndian.Uint64(u[12:]))
		p.ProbeDelay = clockTime(binary.BigEndian.Uint64(u[20:]))
		return nil
	}
	if len(u) < pkt.BTHHdr+pkt.ICRC {
		return errf(ErrMalformed, "BTH truncated: %d bytes, want at least %d with the ICRC", len(u), pkt.BTHHdr+pkt.ICRC)
	}
	bth := u[:pkt.BTHHdr]
	body := u[pkt.BTHHdr : len(u)-pkt.ICRC]
	if tv := bth[1] & 15; tv != 0 {
		return errf(ErrUnsupported, "BTH transport version %d", tv)
	}
	if pad := bth[1] >> 4 & 3; pad != 0 {
		return errf(ErrUnsupported, "BTH pad count %d (fabriclab does not pad payloads)", pad)
	}
	qp := binary.BigEndian.Uint32(bth[4:]) & MaxPSN
	if qp < QPBase {
		return errf(ErrUnsupported, "BTH destination QP %d (a management QP)", qp)
	}
	p.Flow = qp - QPBase
	psn := binary.BigEndian.Uint32(bth[8:]) & MaxPSN
	switch op := bth[0]; op {
	case OpSendFirst, OpSendMiddle, OpSendLast, OpSendOnly:
		p.Kind = pkt.Data
		p.Last = op == OpSendLast || op == OpSendOnly
		p.PSN = psn
		p.Payload = int32(len(body))
		if len(body) >= dataMeta {
			p.SentAt = clockTime(binary.BigEndian.Uint64(body[0:]))
			p.ProbeDelay = clockTime(binary.BigEndian.Uint64(body[8:]))
		}
	case OpAck:
		if len(body) < pkt.AETHHdr {
			return errf(ErrMalformed, "AETH truncated: %d bytes", len(body))
		}
		switch syn := body[0]; {
		case syn>>5 == 0:
			if len(body) != pkt.AETHHdr {
				return errf(ErrMalformed, "ACK with %d bytes after the AETH", len(body)-pkt.AETHHdr)
			}
			p.Kind = pkt.Ack
			p.PSN = (psn + 1) & MaxPSN
			p.ProbeDelay = clock.Time(binary.BigEndian.Uint32(body)&MaxPSN) * AckDelayUnit
		case syn == aethNakSeq:
			if len(body) != pkt.AETHHdr+4 {
				return errf(ErrMalformed, "NAK with %d bytes after the AETH, want the 4-byte IRN SACK extension", len(body)-pkt.AETHHdr)
			}
			p.Kind = pkt.Nack
			p.PSN = psn
			p.SackPSN = binary.BigEndian.Uint32(body[4:])
		default:
			return errf(ErrUnsupported, "AETH syndrome 0x%02x (only ACK and NAK-sequence-error are used)", syn)
		}
	case OpCNP:
		if len(body) != 16 {
			return errf(ErrMalformed, "CNP with %d bytes after the BTH, want 16", len(body))
		}
		p.Kind = pkt.CNP
		p.PSN = psn
	default:
		return errf(ErrUnsupported, "BTH opcode 0x%02x", op)
	}
	return nil
}

// ackDelayMSN is d in AckDelayUnits, clamped to the 24-bit MSN.
func ackDelayMSN(d clock.Time) uint32 {
	switch {
	case d <= 0:
		return 0
	case d/AckDelayUnit >= MaxPSN:
		return MaxPSN
	}
	return uint32(d / AckDelayUnit)
}
