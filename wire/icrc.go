package wire

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/fabriclab/fabriclab/pkt"
)

// The RoCEv2 ICRC (IBA Annex A17.3.3) is a CRC-32 (the Ethernet polynomial) over a pseudo-packet:
// 8 bytes of ones standing in for the InfiniBand LRH, then the IP header, UDP header, BTH and the rest of
// the transport packet, with the fields routers may change replaced by ones: IPv4 ToS (DSCP+ECN), TTL and
// header checksum, the UDP checksum, and BTH byte 4 (FECN, BECN, reserved). It is stored least significant
// byte first, as Linux rxe and RoCE NICs do, so Wireshark and rxe agree with our frames.
//
// The whole IPv4 header as its IHL gives it is covered, options (the source route) included and unmasked,
// as the standard masks only the fields above: a receiver computing the standard ICRC verifies our frames.
// Devices re-encode frames hop by hop (Encode computes the ICRC), so a new hop index gets a new ICRC;
// SetHop, which patches bytes in place, recomputes it too. MarkCE and SetDSCP touch only masked fields.

// icrcSeed is the CRC state after the 8 masked LRH bytes.
var icrcSeed = crc32.ChecksumIEEE([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})

var ones = [40]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// icrcOf is the ICRC of an already-masked pseudo-packet (IP header through the byte before the ICRC).
func icrcOf(masked []byte) uint32 { return crc32.Update(icrcSeed, crc32.IEEETable, masked) }

// ICRC computes the ICRC a RoCEv2 frame (Ethernet through ICRC) should carry. It does not modify frame.
func ICRC(frame []byte) (uint32, error) {
	if len(frame) < pkt.EthHdr+pkt.IPv4Hdr || binary.BigEndian.Uint16(frame[12:]) != EtherTypeIPv4 {
		return 0, errf(ErrMalformed, "ICRC: not an IPv4 frame")
	}
	ip := frame[pkt.EthHdr:]
	ihl := int(ip[0]&15) * 4
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	if ihl < pkt.IPv4Hdr || tot > len(ip) || tot < ihl+pkt.UDPHdr+pkt.BTHHdr+pkt.ICRC {
		return 0, errf(ErrMalformed, "ICRC: IPv4 header length %d / total length %d in a %d-byte frame", ihl, tot, len(frame))
	}
	// CRC the frame piecewise, feeding ones in place of the masked fields: no copy, no allocation (a
	// stack copy would escape through crc32's dispatch).
	u := ip[ihl:]
	c := crc32.Update(icrcSeed, crc32.IEEETable, ip[0:1])
	c = crc32.Update(c, crc32.IEEETable, ones[:1]) // ToS
	c = crc32.Update(c, crc32.IEEETable, ip[2:8])
	c = crc32.Update(c, crc32.IEEETable, ones[:1]) // TTL
	c = crc32.Update(c, crc32.IEEETable, ip[9:10])
	c = crc32.Update(c, crc32.IEEETable, ones[:2])   // header checksum
	c = crc32.Update(c, crc32.IEEETable, ip[12:ihl]) // addresses and options (the source route)
	c = crc32.Update(c, crc32.IEEETable, u[0:6])
	c = crc32.Update(c, crc32.IEEETable, ones[:2]) // UDP checksum
	c = crc32.Update(c, crc32.IEEETable, u[8:12])
	c = crc32.Update(c, crc32.IEEETable, ones[:1]) // BTH FECN/BECN/resv6
	return crc32.Update(c, crc32.IEEETable, u[13:tot-ihl-pkt.ICRC]), nil
}

// VerifyICRC checks the ICRC at the end of a RoCEv2 frame.
func VerifyICRC(frame []byte) error {
	want, err := ICRC(frame)
	if err != nil {
		return err
	}
	ip := frame[pkt.EthHdr:]
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	if got := binary.LittleEndian.Uint32(ip[tot-pkt.ICRC:]); got != want {
		return errf(ErrMalformed, "ICRC 0x%08x, want 0x%08x", got, want)
	}
	return nil
}
