package pkt

// Header sizes in bytes, shared by the engines (which size frames) and package wire (which must encode
// frames of exactly these sizes). FCS is excluded everywhere, as in Packet.Size.
const (
	EthHdr  = 14
	IPv4Hdr = 20
	UDPHdr  = 8
	BTHHdr  = 12
	AETHHdr = 4
	ICRC    = 4
	// RoCEv2Overhead is a data packet's bytes besides its payload.
	RoCEv2Overhead = EthHdr + IPv4Hdr + UDPHdr + BTHHdr + ICRC
	// AckSize is a RoCEv2 ACK/NAK: BTH + AETH, no payload. IRN NAKs carry the SACKed PSN in a 4-byte
	// extension after the AETH.
	AckSize  = RoCEv2Overhead + AETHHdr
	NackSize = AckSize + 4
	// CNPSize is a RoCEv2 CNP: BTH + 16 reserved bytes.
	CNPSize = RoCEv2Overhead + 16
	// MinFrame is the minimum Ethernet frame without FCS; PFC and PortFC frames are this long.
	MinFrame = 60
	// ProbeHdr is the telemetry probe's UDP payload (layout in package wire); ProbeSize is a probe frame
	// without a source route. Engines size probes with these so that wire.Encode reproduces Size exactly.
	ProbeHdr  = 28
	ProbeSize = EthHdr + IPv4Hdr + UDPHdr + ProbeHdr
)

// RouteOptionBytes is what a source route of n hops adds to the IPv4 header: an option (type, length,
// hop index, n port bytes) padded to a multiple of 4.
func RouteOptionBytes(n int) int {
	if n == 0 {
		return 0
	}
	return (3 + n + 3) &^ 3
}

// DataSize is the wire size of a RoCEv2 data packet with payload bytes and a source route of n hops.
func DataSize(payload, routeHops int) int {
	return RoCEv2Overhead + RouteOptionBytes(routeHops) + payload
}
