package wire

import (
	"net"
	"net/netip"
)

// Addressing conventions. They are fixed (not configurable) so that every agent, the harness and a person
// reading a pcap agree on who h<i> is without exchanging tables.
//
//   - IPv4: host i is 198.18.0.0 + (i+1), i.e. h0 = 198.18.0.1, h254 = 198.18.0.255, h255 = 198.18.1.0,
//     up to h131069 = 198.19.255.254. The whole lab is one on-link 198.18.0.0/15 (RFC 2544 benchmarking
//     range, never routed outside the lab); .0 and .255 inside the /15 are ordinary host addresses.
//     The +1 keeps the network address 198.18.0.0 unused, the top of the range keeps the broadcast address
//     198.19.255.255 unused.
//   - MAC: host i is 02:66:00:ii:ii:ii (locally administered unicast, "f" = 0x66 for fabriclab, i in 24
//     bits). Kernel-stack hosts must have their interface MAC set to HostMAC(i) and permanent neighbour
//     entries HostIP(j) -> HostMAC(j), so their frames carry the final destination MAC and switches can
//     forward Raw bytes unmodified. Switch ports are 02:66:01:dd:dd:pp (PortMAC(device, port)).
//   - Link-local frames: PFC goes to the 802.1Qbb MAC control address 01:80:C2:00:00:01; PortFC goes to
//     03:66:6C:00:00:01 (a locally administered group address, so no real bridge would claim it). Encode
//     stamps link-local frames with source LinkSrcMAC because the descriptor does not know the sending
//     port; a port that cares may overwrite bytes 6..11 (Decode ignores MAC addresses).
//   - Priority: IPv4 DSCP = Prio<<3 (class selector CS0..CS7), so ToS = Prio<<5 | ECN. Decode takes
//     Prio = DSCP>>3, which maps any kernel DSCP onto its class (EF 46 -> 5). Frames are never VLAN-tagged.

// MaxHosts is how many host indices the 198.18.0.0/15 mapping can carry.
const MaxHosts = 1<<17 - 2

var (
	netBase = [4]byte{198, 18, 0, 0}
	// PFCDstMAC is the IEEE 802.1Qbb / 802.3x MAC control destination.
	PFCDstMAC = net.HardwareAddr{0x01, 0x80, 0xc2, 0x00, 0x00, 0x01}
	// PortFCDstMAC is the group address PortFC pause/resume frames are sent to.
	PortFCDstMAC = net.HardwareAddr{0x03, 0x66, 0x6c, 0x00, 0x00, 0x01}
	// LinkSrcMAC is the source address Encode puts on link-local frames (PFC, PortFC).
	LinkSrcMAC = net.HardwareAddr{0x02, 0x66, 0x01, 0xff, 0xff, 0xff}
)

// HostIP is host i's IPv4 address; the zero Addr if i is out of range.
func HostIP(i int) netip.Addr {
	if i < 0 || i >= MaxHosts {
		return netip.Addr{}
	}
	return netip.AddrFrom4(hostIP4(uint32(i)))
}

func hostIP4(i uint32) [4]byte {
	v := (uint32(netBase[0])<<24 | uint32(netBase[1])<<16) + i + 1
	return [4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
}

// HostOf is the host index behind ip, or false if ip is not a lab host address.
func HostOf(ip netip.Addr) (int, bool) {
	if !ip.Is4() && !ip.Is4In6() {
		return -1, false
	}
	a := ip.As4()
	return hostOf4(a[0], a[1], a[2], a[3])
}

func hostOf4(a, b, c, d byte) (int, bool) {
	if a != 198 || b&^1 != 18 {
		return -1, false
	}
	off := int(b&1)<<16 | int(c)<<8 | int(d)
	if off == 0 || off > MaxHosts {
		return -1, false
	}
	return off - 1, true
}

// HostMAC is host i's MAC address (02:66:00 followed by i in 24 bits).
func HostMAC(i int) net.HardwareAddr {
	m := make(net.HardwareAddr, 6)
	putHostMAC(m, i)
	return m
}

func putHostMAC(m []byte, i int) {
	m[0], m[1], m[2] = 0x02, 0x66, 0x00
	m[3], m[4], m[5] = byte(i>>16), byte(i>>8), byte(i)
}

// PortMAC is the MAC of a switch (or NIC) port: 02:66:01 followed by the device index in 16 bits and the
// port in 8 bits.
func PortMAC(device, port int) net.HardwareAddr {
	return net.HardwareAddr{0x02, 0x66, 0x01, byte(device >> 8), byte(device), byte(port)}
}

// PrioDSCP is the DSCP that carries traffic class prio (class selector prio<<3).
func PrioDSCP(prio uint8) uint8 { return (prio & 7) << 3 }

// DSCPPrio is the traffic class a DSCP maps to.
func DSCPPrio(dscp uint8) uint8 { return (dscp >> 3) & 7 }
