package wire_test

import (
	"bytes"
	"github.com/fabriclab/fabriclab/wire"
	"github.com/fabriclab/fabriclab/wire/dissect"
	"reflect"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/fabriclab/fabriclab/pkt"
)

// seedFrames adds every sample frame (and a few truncations) to a fuzz corpus; body picks the part of
// the frame a layer fuzzer wants.
func seedFrames(f *testing.F, kinds []pkt.Kind, body func(frame []byte) []byte) {
	for _, p := range wire.Samples() {
		if kinds != nil && !contains(kinds, p.Kind) {
			continue
		}
		b, err := wire.Encode(&p, nil)
		if err != nil {
			f.Fatal(err)
		}
		b = body(b)
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte{})
}

func contains(ks []pkt.Kind, k pkt.Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// udpPayload is the bytes after the UDP header of an IPv4 frame.
func udpPayload(b []byte) []byte {
	ihl := int(b[14]&15) * 4
	return b[14+ihl+8:]
}

// FuzzDecode: Decode never panics, and whatever it accepts is a fixed point of the codec: re-encoding
// succeeds with exactly Size bytes and decodes to the same descriptor (so Decode is never more lenient
// than Encode, and nothing a switch accepts becomes an error when it forwards it). gopacket must not
// panic on the same bytes either.
func FuzzDecode(f *testing.F) {
	seedFrames(f, nil, func(b []byte) []byte { return b })
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
		var p pkt.Packet
		if err := wire.Decode(b, &p); err != nil {
			if _, ok := err.(*wire.Error); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		out, err := wire.Encode(&p, nil)
		if err != nil {
			t.Fatalf("decoded %+v does not re-encode: %v", p, err)
		}
		if len(out) != int(p.Size) {
			t.Fatalf("re-encoded %d bytes, Size %d", len(out), p.Size)
		}
		if p.Kind == pkt.IP {
			if !bytes.Equal(out, b) {
				t.Fatal("IP frame changed by Decode+Encode")
			}
			return
		}
		var q pkt.Packet
		if err := wire.Decode(out, &q); err != nil {
			t.Fatalf("re-encoded frame does not decode: %v", err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("not a fixed point:\n%+v\n%+v", p, q)
		}
		if p.Kind <= pkt.CNP {
			if err := wire.VerifyICRC(out); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func fuzzLayer(f *testing.F, kinds []pkt.Kind, body func([]byte) []byte, mk func() gopacket.DecodingLayer) {
	seedFrames(f, kinds, body)
	f.Fuzz(func(t *testing.T, b []byte) {
		l := mk()
		if err := l.DecodeFromBytes(b, gopacket.NilDecodeFeedback); err != nil {
			return
		}
		_ = l.NextLayerType()
		if s, ok := l.(gopacket.SerializableLayer); ok {
			buf := gopacket.NewSerializeBuffer()
			if err := s.SerializeTo(buf, gopacket.SerializeOptions{}); err != nil {
				t.Fatal(err)
			}
			// Serializing what was decoded and decoding again gives the same struct.
			l2 := mk()
			data := buf.Bytes()
			if err := l2.DecodeFromBytes(data, gopacket.NilDecodeFeedback); err != nil {
				t.Fatalf("re-decode: %v", err)
			}
			a, c := reflect.ValueOf(l).Elem(), reflect.ValueOf(l2).Elem()
			for i := 0; i < a.NumField(); i++ {
				switch a.Type().Field(i).Name {
				case "BaseLayer", "Padding":
					continue
				}
				if !reflect.DeepEqual(a.Field(i).Interface(), c.Field(i).Interface()) {
					t.Fatalf("%T field %s: %v vs %v", l, a.Type().Field(i).Name, a.Field(i), c.Field(i))
				}
			}
		}
	})
}

var roce = []pkt.Kind{pkt.Data, pkt.Ack, pkt.Nack, pkt.CNP}

func FuzzBTH(f *testing.F) {
	fuzzLayer(f, roce, udpPayload, func() gopacket.DecodingLayer { return &dissect.BTH{} })
}

func FuzzAETH(f *testing.F) {
	fuzzLayer(f, []pkt.Kind{pkt.Ack, pkt.Nack}, func(b []byte) []byte { return udpPayload(b)[12:] },
		func() gopacket.DecodingLayer { return &dissect.AETH{} })
}

func FuzzIRNSack(f *testing.F) {
	fuzzLayer(f, []pkt.Kind{pkt.Nack}, func(b []byte) []byte { return udpPayload(b)[16:] },
		func() gopacket.DecodingLayer { return &dissect.IRNSack{} })
}

func FuzzCNP(f *testing.F) {
	fuzzLayer(f, []pkt.Kind{pkt.CNP}, func(b []byte) []byte { return udpPayload(b)[12:] },
		func() gopacket.DecodingLayer { return &dissect.CNP{} })
}

func FuzzPFC(f *testing.F) {
	fuzzLayer(f, []pkt.Kind{pkt.PFC}, func(b []byte) []byte { return b[14:] },
		func() gopacket.DecodingLayer { return &dissect.PFC{} })
}

func FuzzPortFC(f *testing.F) {
	fuzzLayer(f, []pkt.Kind{pkt.PortFC}, func(b []byte) []byte { return b[14:] },
		func() gopacket.DecodingLayer { return &dissect.PortFC{} })
}

func FuzzProbe(f *testing.F) {
	fuzzLayer(f, []pkt.Kind{pkt.Probe}, udpPayload, func() gopacket.DecodingLayer { return &dissect.Probe{} })
}

// FuzzPatch: the in-place patches never panic, touch only the ToS / hop bytes and the checksum, and keep
// a correct IPv4 header checksum correct.
func FuzzPatch(f *testing.F) {
	seedFrames(f, []pkt.Kind{pkt.Data, pkt.IP, pkt.Probe}, func(b []byte) []byte { return b })
	f.Fuzz(func(t *testing.T, b []byte) {
		var p pkt.Packet
		valid := wire.Decode(b, &p) == nil && p.Kind != pkt.PFC && p.Kind != pkt.PortFC
		orig := bytes.Clone(b)
		_ = wire.MarkCE(b)
		_ = wire.SetDSCP(b, 5)
		_ = wire.SetHop(b, 1)
		if len(b) != len(orig) {
			t.Fatal("length changed")
		}
		// SetHop rewrites the ICRC (the last 4 bytes of the IPv4 packet) of a RoCEv2 frame.
		icrcAt := -1
		if len(b) >= 18 {
			icrcAt = 14 + (int(b[16])<<8 | int(b[17])) - 4
		}
		for i := range b {
			if b[i] != orig[i] && i != 15 && i != 24 && i != 25 && i != 36 && (i < icrcAt || i >= icrcAt+4) {
				t.Fatalf("byte %d changed", i)
			}
		}
		if valid {
			var q pkt.Packet
			if err := wire.Decode(b, &q); err != nil {
				t.Fatalf("patched valid frame no longer decodes: %v", err)
			}
		}
	})
}
