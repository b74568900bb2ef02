package wire_test

import (
	"bytes"
	"encoding/binary"
	"github.com/fabriclab/fabriclab/wire"
	"github.com/fabriclab/fabriclab/wire/dissect"
	"net"
	"reflect"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/fabriclab/fabriclab/pkt"
)

func gopacketDecode(t *testing.T, f []byte) gopacket.Packet {
	t.Helper()
	pk := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
	if el := pk.ErrorLayer(); el != nil {
		t.Fatalf("gopacket: %v\n%s", el.Error(), pk.Dump())
	}
	return pk
}

func layerTypes(pk gopacket.Packet) string {
	var s []string
	for _, l := range pk.Layers() {
		s = append(s, l.LayerType().String())
	}
	return strings.Join(s, "/")
}

// TestGopacketDecodesEncode holds the hand-written codec and the gopacket layers to the same bytes.
func TestGopacketDecodesEncode(t *testing.T) {
	want := map[pkt.Kind]string{
		pkt.Data:   "Ethernet/IPv4/UDP/BTH/Payload",
		pkt.Ack:    "Ethernet/IPv4/UDP/BTH/AETH",
		pkt.Nack:   "Ethernet/IPv4/UDP/BTH/AETH/IRNSack",
		pkt.CNP:    "Ethernet/IPv4/UDP/BTH/CNP",
		pkt.Probe:  "Ethernet/IPv4/UDP/Probe",
		pkt.PFC:    "Ethernet/PFC",
		pkt.PortFC: "Ethernet/PortFC",
		pkt.IP:     "Ethernet/IPv4/TCP/Payload",
	}
	for name, p := range wire.Samples() {
		t.Run(name, func(t *testing.T) {
			f, err := wire.Encode(&p, nil)
			if err != nil {
				t.Fatal(err)
			}
			pk := gopacketDecode(t, f)
			w := want[p.Kind]
			if p.Kind == pkt.Data && p.Payload == 0 {
				w = strings.TrimSuffix(w, "/Payload")
			}
			if got := layerTypes(pk); got != w {
				t.Fatalf("layers %s, want %s", got, w)
			}
			if eth := pk.Layer(layers.LayerTypeEthernet).(*layers.Ethernet); p.Src >= 0 && p.Kind != pkt.IP {
				if !bytes.Equal(eth.SrcMAC, wire.HostMAC(int(p.Src))) || !bytes.Equal(eth.DstMAC, wire.HostMAC(int(p.Dst))) {
					t.Errorf("MACs %v -> %v", eth.SrcMAC, eth.DstMAC)
				}
			}
			if ipl := pk.Layer(layers.LayerTypeIPv4); ipl != nil {
				ip := ipl.(*layers.IPv4)
				if wire.HostIP(int(p.Src)).String() != ip.SrcIP.String() || wire.HostIP(int(p.Dst)).String() != ip.DstIP.String() {
					t.Errorf("IPs %v -> %v", ip.SrcIP, ip.DstIP)
				}
				if ip.TOS>>5 != p.Prio || ip.TOS&3 != p.ECN {
					t.Errorf("TOS 0x%02x for prio %d ecn %d", ip.TOS, p.Prio, p.ECN)
				}
				r, hop, ok := dissect.SourceRoute(ip)
				if ok != (len(p.Route) > 0) || !bytes.Equal(r, p.Route) || hop != p.Hop {
					t.Errorf("source route %v hop %d ok %v", r, hop, ok)
				}
				if p.Kind != pkt.IP {
					u := pk.Layer(layers.LayerTypeUDP).(*layers.UDP)
					if uint16(u.SrcPort) != p.SPort || uint16(u.DstPort) != p.DPort || u.Checksum != 0 {
						t.Errorf("UDP %v", u)
					}
				}
			}
			if l := pk.Layer(dissect.LayerTypeBTH); l != nil {
				b := l.(*dissect.BTH)
				psn := p.PSN
				if p.Kind == pkt.Ack {
					psn = (psn - 1) & wire.MaxPSN
				}
				if b.DestQP != p.Flow+wire.QPBase || b.PSN != psn || b.PKey != 0xffff || b.TVer != 0 || b.BECN != (p.Kind == pkt.CNP) {
					t.Errorf("BTH %+v", b)
				}
				if p.Kind == pkt.Data {
					if b.AckReq != p.Last || len(b.Payload) != int(p.Payload) {
						t.Errorf("BTH %+v payload %d", b, len(b.Payload))
					}
					if app := pk.ApplicationLayer(); p.Payload > 0 && len(app.Payload()) != int(p.Payload) {
						t.Errorf("payload layer %d bytes", len(app.Payload()))
					}
				}
				if got := binary.LittleEndian.Uint32(f[len(f)-4:]); got != b.ICRC {
					t.Errorf("ICRC field 0x%08x, frame 0x%08x", b.ICRC, got)
				}
			}
			if l := pk.Layer(dissect.LayerTypeAETH); l != nil {
				a := l.(*dissect.AETH)
				if a.IsNAK() != (p.Kind == pkt.Nack) {
					t.Errorf("AETH syndrome 0x%02x for %v", a.Syndrome, p.Kind)
				}
			}
			if l := pk.Layer(dissect.LayerTypeIRNSack); l != nil && l.(*dissect.IRNSack).SackPSN != p.SackPSN {
				t.Errorf("SACK %+v", l)
			}
			if l := pk.Layer(dissect.LayerTypePFC); l != nil {
				f := l.(*dissect.PFC)
				if f.Opcode != wire.PFCOpcode || f.ClassEnable != uint16(p.PauseMask) || f.Quanta != p.PauseQuanta || len(f.Padding) != 60-34 {
					t.Errorf("PFC %+v", f)
				}
				if eth := pk.Layer(layers.LayerTypeEthernet).(*layers.Ethernet); !bytes.Equal(eth.DstMAC, wire.PFCDstMAC) {
					t.Errorf("PFC dst %v", eth.DstMAC)
				}
			}
			if l := pk.Layer(dissect.LayerTypePortFC); l != nil {
				f := l.(*dissect.PortFC)
				if f.Version != 1 || f.Pause != p.FCPause || f.Queue != p.FCQueue || f.Port != p.FCPort {
					t.Errorf("PortFC %+v", f)
				}
			}
			if l := pk.Layer(dissect.LayerTypeProbe); l != nil {
				pr := l.(*dissect.Probe)
				if pr.Version != 1 || pr.Type != 1 || pr.Flow != p.Flow || pr.Seq != p.PSN || pr.SentAt != int64(p.SentAt) || pr.Delay != int64(p.ProbeDelay) || (pr.Flags&1 != 0) != p.Last {
					t.Errorf("probe %+v", pr)
				}
			}
		})
	}
}

// TestSerializeLayersMatchesEncode builds frames with gopacket's serializer from the layer structs and
// checks they are byte-identical to Encode's (after the ICRC, which needs the whole frame, is filled in).
func TestSerializeLayersMatchesEncode(t *testing.T) {
	s := wire.Samples()
	for _, name := range []string{"ack", "nack/r5", "cnp/r1", "probe/r37", "data-small/r4end", "pfc", "portfc-pause", "portfc-resume"} {
		p := s[name]
		want, _ := wire.Encode(&p, nil)
		var ls []gopacket.SerializableLayer
		switch p.Kind {
		case pkt.PFC:
			ls = []gopacket.SerializableLayer{
				&layers.Ethernet{SrcMAC: wire.LinkSrcMAC, DstMAC: wire.PFCDstMAC, EthernetType: wire.EtherTypeMACCtrl},
				&dissect.PFC{ClassEnable: uint16(p.PauseMask), Quanta: p.PauseQuanta},
			}
		case pkt.PortFC:
			ls = []gopacket.SerializableLayer{
				&layers.Ethernet{SrcMAC: wire.LinkSrcMAC, DstMAC: wire.PortFCDstMAC, EthernetType: wire.EtherTypePortFC},
				&dissect.PortFC{Pause: p.FCPause, Queue: p.FCQueue, Port: p.FCPort, Via: uint16(p.Hop)},
			}
		default:
			ip := &layers.IPv4{Version: 4, TOS: p.Prio<<5 | p.ECN, Flags: layers.IPv4DontFragment, TTL: 64,
				Protocol: layers.IPProtocolUDP, SrcIP: net.IP(wire.HostIP(int(p.Src)).AsSlice()), DstIP: net.IP(wire.HostIP(int(p.Dst)).AsSlice())}
			if len(p.Route) > 0 {
				ip.Options = []layers.IPv4Option{{OptionType: wire.IPOptSourceRoute, OptionLength: uint8(3 + len(p.Route)), OptionData: append([]byte{p.Hop}, p.Route...)}}
			}
			ls = []gopacket.SerializableLayer{
				&layers.Ethernet{SrcMAC: wire.HostMAC(int(p.Src)), DstMAC: wire.HostMAC(int(p.Dst)), EthernetType: layers.EthernetTypeIPv4},
				ip,
				&layers.UDP{SrcPort: layers.UDPPort(p.SPort), DstPort: layers.UDPPort(p.DPort)},
			}
			switch p.Kind {
			case pkt.Probe:
				var fl uint8
				if p.Last {
					fl = 1
				}
				ls = append(ls, &dissect.Probe{Flags: fl, Flow: p.Flow, Seq: p.PSN, SentAt: int64(p.SentAt), Delay: int64(p.ProbeDelay)})
			case pkt.Ack:
				ls = append(ls, &dissect.BTH{Opcode: wire.OpAck, PKey: 0xffff, DestQP: p.Flow + wire.QPBase, PSN: (p.PSN - 1) & wire.MaxPSN}, &dissect.AETH{Syndrome: wire.AethAck})
			case pkt.Nack:
				ls = append(ls, &dissect.BTH{Opcode: wire.OpAck, PKey: 0xffff, DestQP: p.Flow + wire.QPBase, PSN: p.PSN}, &dissect.AETH{Syndrome: wire.AethNakSeq}, &dissect.IRNSack{SackPSN: p.SackPSN})
			case pkt.CNP:
				ls = append(ls, &dissect.BTH{Opcode: wire.OpCNP, PKey: 0xffff, BECN: true, DestQP: p.Flow + wire.QPBase, PSN: p.PSN}, &dissect.CNP{})
			case pkt.Data:
				op := uint8(wire.OpSendMiddle)
				switch {
				case p.PSN == 0 && p.Last:
					op = wire.OpSendOnly
				case p.PSN == 0:
					op = wire.OpSendFirst
				case p.Last:
					op = wire.OpSendLast
				}
				ls = append(ls, &dissect.BTH{Opcode: op, AckReq: p.Last, PKey: 0xffff, DestQP: p.Flow + wire.QPBase, PSN: p.PSN}, gopacket.Payload(make([]byte, p.Payload)))
			}
		}
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, ls...); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := buf.Bytes()
		if p.Kind != pkt.PFC && p.Kind != pkt.PortFC {
			wire.FinishIPv4(got)
			if p.Kind != pkt.Probe {
				c, err := wire.ICRC(got)
				if err != nil {
					t.Fatal(err)
				}
				binary.LittleEndian.PutUint32(got[len(got)-4:], c)
			}
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: gopacket serialization differs\n got %x\nwant %x", name, got, want)
		}
		// And the layer structs survive decode -> serialize.
		pk := gopacketDecode(t, got)
		for _, l := range ls[min(len(ls), 3):] {
			d := pk.Layer(l.LayerType())
			if d == nil {
				t.Errorf("%s: no %v layer", name, l.LayerType())
			}
		}
	}
}

func TestLayerTruncation(t *testing.T) {
	df := gopacket.NilDecodeFeedback
	for _, l := range []gopacket.DecodingLayer{&dissect.BTH{}, &dissect.AETH{}, &dissect.IRNSack{}, &dissect.CNP{}, &dissect.PFC{}, &dissect.PortFC{}, &dissect.Probe{}} {
		if err := l.DecodeFromBytes([]byte{1, 2, 3}, df); err == nil || !strings.HasPrefix(err.Error(), "wire: ") {
			t.Errorf("%T accepted 3 bytes: %v", l, err)
		}
	}
	var b dissect.BTH
	if err := b.DecodeFromBytes(make([]byte, 16), df); err != nil || len(b.Payload) != 0 {
		t.Errorf("minimal BTH: %v", err)
	}
	if !reflect.DeepEqual(b.LayerContents(), make([]byte, 12)) {
		t.Error("BTH contents")
	}
}

// TestGopacketConnectXCNP: gopacket sees in a CNP a ConnectX NIC sent the BTH fields the capture has.
func TestGopacketConnectXCNP(t *testing.T) {
	pk := gopacketDecode(t, wire.HexFrame(t, wire.ConnectXCNP))
	if b := pk.Layer(dissect.LayerTypeBTH).(*dissect.BTH); b.Opcode != wire.OpCNP || !b.BECN || b.DestQP != 0x118 || b.PKey != 0xffff {
		t.Errorf("BTH %+v", b)
	}
	if pk.Layer(dissect.LayerTypeCNP) == nil {
		t.Error("no CNP layer")
	}
}
