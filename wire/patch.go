package wire

import (
	"encoding/binary"

	"github.com/fabriclab/fabriclab/pkt"
)

// In-place patches of an IPv4 frame, for a switch forwarding bytes it did not build (kernel TCP) or did
// not want to re-encode. Each fixes the IPv4 header checksum incrementally (RFC 1624) and leaves every
// other byte alone; the RoCEv2 ICRC masks the fields MarkCE and SetDSCP touch, so it stays valid. The ICRC
// covers the source route option, so SetHop recomputes it.

func ipv4Header(raw []byte) ([]byte, error) {
	if len(raw) < pkt.EthHdr+pkt.IPv4Hdr {
		return nil, errf(ErrMalformed, "IPv4 frame truncated: %d bytes", len(raw))
	}
	if et := binary.BigEndian.Uint16(raw[12:]); et != EtherTypeIPv4 {
		return nil, errf(ErrUnsupported, "EtherType 0x%04x is not IPv4", et)
	}
	ip := raw[pkt.EthHdr:]
	ihl := int(ip[0]&15) * 4
	if ip[0]>>4 != 4 || ihl < pkt.IPv4Hdr || len(ip) < ihl {
		return nil, errf(ErrMalformed, "bad IPv4 version/header length byte 0x%02x in a %d-byte frame", ip[0], len(raw))
	}
	return ip[:ihl], nil
}

// setHeaderByte sets hdr[off] = v and updates the IPv4 header checksum (hdr starts at the IPv4 header).
func setHeaderByte(hdr []byte, off int, v byte) {
	w := off &^ 1
	old := binary.BigEndian.Uint16(hdr[w:])
	hdr[off] = v
	nw := binary.BigEndian.Uint16(hdr[w:])
	// HC' = ~(~HC + ~m + m')
	s := uint32(^binary.BigEndian.Uint16(hdr[10:])) + uint32(^old) + uint32(nw)
	s = s>>16 + s&0xffff
	s += s >> 16
	binary.BigEndian.PutUint16(hdr[10:], ^uint16(s))
}

// MarkCE sets the ECN field of an IPv4 frame to CE. A frame that is already CE is left alone; a Not-ECT
// frame is not changed and yields ErrNotECT (the switch should drop it instead, as RFC 3168 routers do).
func MarkCE(raw []byte) error {
	ip, err := ipv4Header(raw)
	if err != nil {
		return err
	}
	switch ip[1] & 3 {
	case pkt.CE:
		return nil
	case pkt.NotECT:
		return &Error{Class: ErrNotECT, Msg: "MarkCE: frame is Not-ECT"}
	}
	setHeaderByte(ip, 1, ip[1]|3)
	return nil
}

// SetDSCP sets the DSCP of an IPv4 frame to the class selector of traffic class prio (DSCP = prio<<3;
// see PrioDSCP), keeping ECN. PFC*-style per-hop priority changes use it on frames forwarded as bytes.
func SetDSCP(raw []byte, prio uint8) error {
	ip, err := ipv4Header(raw)
	if err != nil {
		return err
	}
	if prio > 7 {
		return errf(ErrInvalidPacket, "SetDSCP: priority %d > 7", prio)
	}
	if tos := PrioDSCP(prio)<<2 | ip[1]&3; tos != ip[1] {
		setHeaderByte(ip, 1, tos)
	}
	return nil
}

// SetHop sets the hop index of a frame's fabriclab source route option.
func SetHop(raw []byte, hop uint8) error {
	ip, err := ipv4Header(raw)
	if err != nil {
		return err
	}
	if len(ip) < pkt.IPv4Hdr+3 || ip[20] != IPOptSourceRoute {
		return errf(ErrMalformed, "SetHop: frame has no source route option")
	}
	n := int(ip[21]) - 3
	if n < 0 || pkt.IPv4Hdr+3+n > len(ip) {
		return errf(ErrMalformed, "SetHop: source route option length %d", ip[21])
	}
	if int(hop) > n {
		return errf(ErrInvalidPacket, "SetHop: hop %d beyond the %d-hop route", hop, n)
	}
	setHeaderByte(ip, 22, hop)
	return fixICRC(raw)
}

// fixICRC rewrites the ICRC of a RoCEv2 frame (UDP to RoCEv2Port) after an in-place change to a covered
// byte; other frames have no ICRC and are left alone.
func fixICRC(raw []byte) error {
	ip := raw[pkt.EthHdr:]
	ihl := int(ip[0]&15) * 4
	if ip[9] != 17 || len(ip) < ihl+pkt.UDPHdr || binary.BigEndian.Uint16(ip[ihl+2:]) != RoCEv2Port {
		return nil
	}
	c, err := ICRC(raw)
	if err != nil {
		return err
	}
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	binary.LittleEndian.PutUint32(ip[tot-pkt.ICRC:], c)
	return nil
}
