// Package dissect holds gopacket layers for fabriclab's frame formats. Importing it hooks them into
// gopacket's Ethernet and UDP dispatch, so gopacket.NewPacket(frame, layers.LayerTypeEthernet,
// gopacket.Default) decodes a whole fabriclab frame (Ethernet/IPv4/UDP/BTH/AETH/IRNSack, Ethernet/PFC,
// Ethernet/PortFC, Ethernet/IPv4/UDP/Probe). They are the readable, tool-facing view (pcaps, tests,
// debugging); the engines' hot path uses wire.Encode/wire.Decode, which write and read the same bytes.
//
// It is a package of its own, imported by tests and tools only, because gopacket/layers' initialisation
// costs every process that links it about 10 MB of memory and 4 ms (it fills 65536-entry protocol tables):
// the lab binary does not link it. The tests of this package are wire's gopacket tests (wire_test), which
// check these layers against wire's own sample frames.
package dissect

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/fabriclab/fabriclab/wire"
)

// Layer type numbers 1791-1797 are in gopacket's application range (1000-1999, array-indexed and fast);
// 17xx echoes UDP port 4791.
var (
	LayerTypeBTH     = gopacket.RegisterLayerType(1791, gopacket.LayerTypeMetadata{Name: "BTH", Decoder: gopacket.DecodeFunc(decodeBTH)})
	LayerTypeAETH    = gopacket.RegisterLayerType(1792, gopacket.LayerTypeMetadata{Name: "AETH", Decoder: gopacket.DecodeFunc(decodeAETH)})
	LayerTypeIRNSack = gopacket.RegisterLayerType(1793, gopacket.LayerTypeMetadata{Name: "IRNSack", Decoder: gopacket.DecodeFunc(decodeIRNSack)})
	LayerTypeCNP     = gopacket.RegisterLayerType(1794, gopacket.LayerTypeMetadata{Name: "CNP", Decoder: gopacket.DecodeFunc(decodeCNP)})
	LayerTypePFC     = gopacket.RegisterLayerType(1795, gopacket.LayerTypeMetadata{Name: "PFC", Decoder: gopacket.DecodeFunc(decodePFCLayer)})
	LayerTypePortFC  = gopacket.RegisterLayerType(1796, gopacket.LayerTypeMetadata{Name: "PortFC", Decoder: gopacket.DecodeFunc(decodePortFCLayer)})
	LayerTypeProbe   = gopacket.RegisterLayerType(1797, gopacket.LayerTypeMetadata{Name: "Probe", Decoder: gopacket.DecodeFunc(decodeProbeLayer)})
)

func init() {
	layers.RegisterUDPPortLayerType(wire.RoCEv2Port, LayerTypeBTH)
	layers.RegisterUDPPortLayerType(wire.ProbePort, LayerTypeProbe)
	// gopacket has no MAC control decoder; 0x8808 frames are only PFC in fabriclab.
	layers.EthernetTypeMetadata[wire.EtherTypeMACCtrl] = layers.EnumMetadata{DecodeWith: LayerTypePFC, Name: "PFC", LayerType: LayerTypePFC}
	layers.EthernetTypeMetadata[wire.EtherTypePortFC] = layers.EnumMetadata{DecodeWith: LayerTypePortFC, Name: "PortFC", LayerType: LayerTypePortFC}
}

// decodeWith is the common gopacket decoder body: decode l from data, add it, continue with its next layer.
func decodeWith(l interface {
	gopacket.DecodingLayer
	gopacket.Layer
}, data []byte, p gopacket.PacketBuilder) error {
	if err := l.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(l)
	next := l.NextLayerType()
	if next == gopacket.LayerTypeZero {
		return nil
	}
	return p.NextDecoder(next)
}

// BTH is the InfiniBand Base Transport Header as RoCEv2 carries it after UDP port 4791, together with the
// 4-byte ICRC that ends the packet (the layer's payload is what lies between them).
type BTH struct {
	layers.BaseLayer
	Opcode         uint8
	SolicitedEvent bool
	MigReq         bool
	PadCount       uint8 // 0..3
	TVer           uint8 // 0..15
	PKey           uint16
	FECN, BECN     bool
	DestQP         uint32 // 24 bits; fabriclab's flow id + QPBase
	AckReq         bool
	PSN            uint32 // 24 bits
	ICRC           uint32 // as stored: little-endian CRC-32 value (see ICRC)
}

func (b *BTH) LayerType() gopacket.LayerType     { return LayerTypeBTH }
func (b *BTH) CanDecode() gopacket.LayerClass    { return LayerTypeBTH }
func (b *BTH) NextLayerType() gopacket.LayerType { return bthNext(b.Opcode) }

func bthNext(op uint8) gopacket.LayerType {
	switch op {
	case wire.OpAck, 0x12: // ACKNOWLEDGE, ATOMIC ACKNOWLEDGE (AETH first)
		return LayerTypeAETH
	case wire.OpCNP:
		return LayerTypeCNP
	}
	return gopacket.LayerTypePayload
}

func (b *BTH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < 16 {
		df.SetTruncated()
		return fmt.Errorf("wire: BTH truncated: %d bytes, want at least 16 with the ICRC", len(data))
	}
	b.Opcode = data[0]
	b.SolicitedEvent = data[1]&0x80 != 0
	b.MigReq = data[1]&0x40 != 0
	b.PadCount = data[1] >> 4 & 3
	b.TVer = data[1] & 15
	b.PKey = binary.BigEndian.Uint16(data[2:])
	b.FECN = data[4]&0x80 != 0
	b.BECN = data[4]&0x40 != 0
	b.DestQP = binary.BigEndian.Uint32(data[4:]) & wire.MaxPSN
	b.AckReq = data[8]&0x80 != 0
	b.PSN = binary.BigEndian.Uint32(data[8:]) & wire.MaxPSN
	b.ICRC = binary.LittleEndian.Uint32(data[len(data)-4:])
	b.BaseLayer = layers.BaseLayer{Contents: data[:12], Payload: data[12 : len(data)-4]}
	return nil
}

// SerializeTo prepends the BTH and appends ICRC as stored in the struct (a layer cannot see the IP header
// the real ICRC covers; compute it afterwards with ICRC on the whole frame).
func (b *BTH) SerializeTo(buf gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := buf.PrependBytes(12)
	if err != nil {
		return err
	}
	h[0] = b.Opcode
	h[1] = b.PadCount&3<<4 | b.TVer&15
	if b.SolicitedEvent {
		h[1] |= 0x80
	}
	if b.MigReq {
		h[1] |= 0x40
	}
	binary.BigEndian.PutUint16(h[2:], b.PKey)
	binary.BigEndian.PutUint32(h[4:], b.DestQP&wire.MaxPSN)
	if b.FECN {
		h[4] |= 0x80
	}
	if b.BECN {
		h[4] |= 0x40
	}
	binary.BigEndian.PutUint32(h[8:], b.PSN&wire.MaxPSN)
	if b.AckReq {
		h[8] |= 0x80
	}
	t, err := buf.AppendBytes(4)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(t, b.ICRC)
	return nil
}

func decodeBTH(data []byte, p gopacket.PacketBuilder) error { return decodeWith(&BTH{}, data, p) }

// AETH is the ACK Extended Transport Header: an 8-bit syndrome (ACK 000xxxxx with a credit count,
// RNR NAK 001xxxxx, NAK 011xxxxx with a NAK code) and a 24-bit message sequence number.
type AETH struct {
	layers.BaseLayer
	Syndrome uint8
	MSN      uint32
}

// IsNAK reports whether the syndrome is a NAK (not RNR).
func (a *AETH) IsNAK() bool { return a.Syndrome>>5 == 3 }

func (a *AETH) LayerType() gopacket.LayerType  { return LayerTypeAETH }
func (a *AETH) CanDecode() gopacket.LayerClass { return LayerTypeAETH }
func (a *AETH) NextLayerType() gopacket.LayerType {
	if a.IsNAK() && len(a.Payload) >= 4 {
		return LayerTypeIRNSack
	}
	return gopacket.LayerTypePayload
}

func (a *AETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < 4 {
		df.SetTruncated()
		return fmt.Errorf("wire: AETH truncated: %d bytes", len(data))
	}
	a.Syndrome = data[0]
	a.MSN = binary.BigEndian.Uint32(data) & wire.MaxPSN
	a.BaseLayer = layers.BaseLayer{Contents: data[:4], Payload: data[4:]}
	return nil
}

func (a *AETH) SerializeTo(buf gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := buf.PrependBytes(4)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(h, uint32(a.Syndrome)<<24|a.MSN&wire.MaxPSN)
	return nil
}

func decodeAETH(data []byte, p gopacket.PacketBuilder) error { return decodeWith(&AETH{}, data, p) }

// IRNSack is fabriclab's 4-byte extension after a NAK's AETH: the PSN of the out-of-order packet that
// triggered the NAK, which IRN's selective retransmission needs. It is not part of the IBA/RoCEv2 specs
// (IRN's paper leaves the encoding open); Wireshark shows it as opaque bytes before the ICRC.
type IRNSack struct {
	layers.BaseLayer
	SackPSN uint32
}

func (s *IRNSack) LayerType() gopacket.LayerType     { return LayerTypeIRNSack }
func (s *IRNSack) CanDecode() gopacket.LayerClass    { return LayerTypeIRNSack }
func (s *IRNSack) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }

func (s *IRNSack) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < 4 {
		df.SetTruncated()
		return fmt.Errorf("wire: IRN SACK extension truncated: %d bytes", len(data))
	}
	s.SackPSN = binary.BigEndian.Uint32(data)
	s.BaseLayer = layers.BaseLayer{Contents: data[:4], Payload: data[4:]}
	return nil
}

func (s *IRNSack) SerializeTo(buf gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := buf.PrependBytes(4)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(h, s.SackPSN)
	return nil
}

func decodeIRNSack(data []byte, p gopacket.PacketBuilder) error {
	return decodeWith(&IRNSack{}, data, p)
}

// CNP is the body of a RoCEv2 congestion notification packet (BTH opcode 0x81): 16 reserved bytes.
type CNP struct {
	layers.BaseLayer
	Reserved [16]byte
}

func (c *CNP) LayerType() gopacket.LayerType     { return LayerTypeCNP }
func (c *CNP) CanDecode() gopacket.LayerClass    { return LayerTypeCNP }
func (c *CNP) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }

func (c *CNP) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < 16 {
		df.SetTruncated()
		return fmt.Errorf("wire: CNP truncated: %d bytes, want 16", len(data))
	}
	copy(c.Reserved[:], data)
	c.BaseLayer = layers.BaseLayer{Contents: data[:16], Payload: data[16:]}
	return nil
}

func (c *CNP) SerializeTo(buf gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := buf.PrependBytes(16)
	if err != nil {
		return err
	}
	copy(h, c.Reserved[:])
	return nil
}

func decodeCNP(data []byte, p gopacket.PacketBuilder) error { return decodeWith(&CNP{}, data, p) }

// PFC is an IEEE 802.1Qbb priority flow control frame (MAC control EtherType 0x8808, opcode 0x0101):
// a class-enable vector and eight pause times in quanta of 512 bit times. Padding is the rest of the
// minimum-size frame.
type PFC struct {
	layers.BaseLayer
	Opcode      uint16
	ClassEnable uint16 // low 8 bits: one per priority; high 8 bits reserved
	Quanta      [8]uint16
	Padding     []byte
}

func (f *PFC) LayerType() gopacket.LayerType     { return LayerTypePFC }
func (f *PFC) CanDecode() gopacket.LayerClass    { return LayerTypePFC }
func (f *PFC) NextLayerType() gopacket.LayerType { return gopacket.LayerTypeZero }

func (f *PFC) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < 20 {
		df.SetTruncated()
		return fmt.Errorf("wire: PFC truncated: %d bytes, want at least 20", len(data))
	}
	f.Opcode = binary.BigEndian.Uint16(data)
	if f.Opcode != wire.PFCOpcode {
		return fmt.Errorf("wire: MAC control opcode 0x%04x is not PFC (0x0101)", f.Opcode)
	}
	f.ClassEnable = binary.BigEndian.Uint16(data[2:])
	for i := range f.Quanta {
		f.Quanta[i] = binary.BigEndian.Uint16(data[4+2*i:])
	}
	f.Padding = data[20:]
	f.BaseLayer = layers.BaseLayer{Contents: data[:20]}
	return nil
}

// SerializeTo writes the PFC body; gopacket's Ethernet layer pads the frame to 60 bytes.
func (f *PFC) SerializeTo(buf gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := buf.PrependBytes(20)
	if err != nil {
		return err
	}
	op := f.Opcode
	if op == 0 {
		op = wire.PFCOpcode
	}
	binary.BigEndian.PutUint16(h, op)
	binary.BigEndian.PutUint16(h[2:], f.ClassEnable)
	for i, q := range f.Quanta {
		binary.BigEndian.PutUint16(h[4+2*i:], q)
	}
	return nil
}

func decodePFCLayer(data []byte, p gopacket.PacketBuilder) error { return decodeWith(&PFC{}, data, p) }

// PortFC is a fabriclab PortFC pause/resume frame (EtherType 0x88B5, IEEE local experimental), carrying
// the {type, qIdx, portIdx} of the PortFC paper (PortFC paper §III-C) with explicit 16-bit indices:
//
//	byte 0    version (high nibble, 1) | type (low nibble: 1 pause, 2 resume)
//	byte 1    reserved (0; room for a hop count)
//	bytes 2-3 queue index at the generating device (signed 16-bit, big endian)
//	bytes 4-5 port index at the receiving device (signed 16-bit, big endian)
//	bytes 6-7 via: the relaying node's ingress port + 1, 0 when no node relayed it (NDC k > 1 needs it)
//
// followed by zero padding to the 60-byte minimum frame.
type PortFC struct {
	layers.BaseLayer
	Version uint8
	Pause   bool // type 1 (pause) vs 2 (resume)
	Type    uint8
	Queue   int16
	Port    int16
	Via     uint16
	Padding []byte
}

func (f *PortFC) LayerType() gopacket.LayerType     { return LayerTypePortFC }
func (f *PortFC) CanDecode() gopacket.LayerClass    { return LayerTypePortFC }
func (f *PortFC) NextLayerType() gopacket.LayerType { return gopacket.LayerTypeZero }

func (f *PortFC) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < wire.PortFCLen {
		df.SetTruncated()
		return fmt.Errorf("wire: PortFC truncated: %d bytes, want at least %d", len(data), wire.PortFCLen)
	}
	f.Version = data[0] >> 4
	f.Type = data[0] & 15
	if f.Version != wire.PortFCVersion || (f.Type != wire.PortFCPause && f.Type != wire.PortFCResume) {
		return fmt.Errorf("wire: PortFC version %d type %d", f.Version, f.Type)
	}
	f.Pause = f.Type == wire.PortFCPause
	f.Queue = int16(binary.BigEndian.Uint16(data[2:]))
	f.Port = int16(binary.BigEndian.Uint16(data[4:]))
	f.Via = binary.BigEndian.Uint16(data[6:])
	if f.Via > 255 {
		// As wire.Decode: via is a node port + 1, carried in 16 bits but below 256 (pkt.Packet.Hop).
		return fmt.Errorf("wire: PortFC via %d, want a node port + 1 below 256", f.Via)
	}
	f.Padding = data[wire.PortFCLen:]
	f.BaseLayer = layers.BaseLayer{Contents: data[:wire.PortFCLen]}
	return nil
}

// SerializeTo writes the PortFC body from Pause, Queue and Port; gopacket's Ethernet layer pads the frame.
func (f *PortFC) SerializeTo(buf gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := buf.PrependBytes(wire.PortFCLen)
	if err != nil {
		return err
	}
	wire.PutPortFC(h, f.Pause, f.Queue, f.Port, uint8(f.Via))
	return nil
}

func decodePortFCLayer(data []byte, p gopacket.PacketBuilder) error {
	return decodeWith(&PortFC{}, data, p)
}

// Probe is the fabriclab telemetry probe, the UDP payload on wire.ProbePort (28 bytes, big endian):
//
//	byte 0      version (high nibble, 1) | type (low nibble, 1 = path test message)
//	byte 1      flags: bit 0 = pkt.Packet.Last (engines may use it to mark a reply)
//	bytes 2-3   reserved (0)
//	bytes 4-7   flow id
//	bytes 8-11  probe sequence number (pkt.Packet.PSN)
//	bytes 12-19 sent time, picoseconds of the sender's clock (signed)
//	bytes 20-27 accumulated queueing delay, picoseconds (signed), added to by every transit device
type Probe struct {
	layers.BaseLayer
	Version uint8
	Type    uint8
	Flags   uint8
	Flow    uint32
	Seq     uint32
	SentAt  int64
	Delay   int64
}

func (pr *Probe) LayerType() gopacket.LayerType     { return LayerTypeProbe }
func (pr *Probe) CanDecode() gopacket.LayerClass    { return LayerTypeProbe }
func (pr *Probe) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }

func (pr *Probe) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < 28 {
		df.SetTruncated()
		return fmt.Errorf("wire: probe truncated: %d bytes, want 28", len(data))
	}
	pr.Version = data[0] >> 4
	pr.Type = data[0] & 15
	if pr.Version != wire.ProbeVersion || pr.Type != wire.ProbeTypePTM {
		return fmt.Errorf("wire: probe version %d type %d", pr.Version, pr.Type)
	}
	pr.Flags = data[1]
	pr.Flow = binary.BigEndian.Uint32(data[4:])
	pr.Seq = binary.BigEndian.Uint32(data[8:])
	pr.SentAt = int64(binary.BigEndian.Uint64(data[12:]))
	pr.Delay = int64(binary.BigEndian.Uint64(data[20:]))
	pr.BaseLayer = layers.BaseLayer{Contents: data[:28], Payload: data[28:]}
	return nil
}

func (pr *Probe) SerializeTo(buf gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := buf.PrependBytes(28)
	if err != nil {
		return err
	}
	// Version and Type are always written as the current ones (1, 1): there is only one probe format.
	wire.PutProbe(h, pr.Flow, pr.Seq, pr.Flags&1 != 0, pr.SentAt, pr.Delay)
	h[1] = pr.Flags
	return nil
}

func decodeProbeLayer(data []byte, p gopacket.PacketBuilder) error {
	return decodeWith(&Probe{}, data, p)
}

// SourceRoute extracts the fabriclab source route option from a decoded IPv4 layer.
func SourceRoute(ip *layers.IPv4) (route []uint8, hop uint8, ok bool) {
	for _, o := range ip.Options {
		if o.OptionType == wire.IPOptSourceRoute && len(o.OptionData) >= 1 {
			return o.OptionData[1:], o.OptionData[0], true
		}
	}
	return nil, 0, false
}
