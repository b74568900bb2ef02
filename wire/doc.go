// Package wire turns pkt.Packet descriptors into real Ethernet frames and back, for the netns backend,
// and describes those frames as gopacket layers for tools, tests and pcaps.
//
// Frames (all untagged Ethernet II, FCS excluded; sizes are exactly the pkt constants):
//
//	Data   Eth | IPv4 [+ source route option] | UDP dst 4791 | BTH (SEND_FIRST/MIDDLE/LAST, SEND_ONLY) | payload | ICRC
//	Ack    Eth | IPv4 [+ route] | UDP 4791 | BTH (ACKNOWLEDGE 0x11) | AETH (ACK)                | ICRC
//	Nack   Eth | IPv4 [+ route] | UDP 4791 | BTH (0x11) | AETH (NAK seq. error) | IRN SACK (4) | ICRC
//	CNP    Eth | IPv4 [+ route] | UDP 4791 | BTH (CNP 0x81, BECN) | 16 reserved bytes           | ICRC
//	Probe  Eth | IPv4 [+ route] | UDP dst 4792 | probe (28 bytes, see Probe)
//	PFC    Eth (dst 01:80:C2:00:00:01, 0x8808) | opcode 0x0101 | class-enable | 8 x quanta | pad to 60
//	PortFC Eth (dst 03:66:6C:00:00:01, 0x88B5) | PortFC (8 bytes, see PortFC)           | pad to 60
//	IP     any other IPv4 frame between lab hosts (kernel TCP), carried as Raw bytes
//
// IPv4 on engine frames: DSCP = Prio<<3, ECN = the descriptor's ECN, DF set, ID 0, TTL 64, correct
// header checksum, UDP checksum 0 (allowed for IPv4, and what RoCEv2 NICs send), UDP source port =
// SPort (ECMP entropy). Addresses and MACs follow the conventions in addr.go (HostIP, HostMAC).
//
// RoCEv2 as a standard stack reads it: the destination QP is the flow id + QPBase (QPs 0 and 1 are
// InfiniBand's management QPs); a flow is one SEND message (SEND_FIRST at PSN 0, SEND_LAST on the last
// packet, SEND_ONLY when one packet is both); the ICRC is the standard one (icrc.go).
//
// Source route: IPv4 option 0x9E (RFC 4727 experimental option 30, copy bit set): type, length (3+n),
// hop index, then one egress port byte per hop, EOL-padded to a multiple of 4 -- exactly
// pkt.RouteOptionBytes(n) bytes. At most 37 hops fit.
//
// Encode and Decode are hand-written (no gopacket on the hot path) and allocation-free in steady state;
// the gopacket layers in layers.go decode the same bytes and the tests hold the two together.
package wire
