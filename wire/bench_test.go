package wire

import (
	"testing"

	"github.com/fabriclab/fabriclab/pkt"
)

func benchPacket(route []uint8) pkt.Packet {
	p := pkt.Packet{Kind: pkt.Data, Src: 1, Dst: 2, Flow: 77, SPort: 50000, DPort: RoCEv2Port, Proto: 17,
		Prio: 3, ECN: pkt.ECT0, PSN: 1234, Payload: 1000, Route: route, Hop: uint8(min(1, len(route)))}
	p.Size = int32(pkt.DataSize(int(p.Payload), len(route)))
	return p
}

func BenchmarkEncodeData1000(b *testing.B) {
	p := benchPacket(nil)
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	b.SetBytes(int64(p.Size))
	for b.Loop() {
		if _, err := Encode(&p, buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeData1000Route(b *testing.B) {
	p := benchPacket([]uint8{1, 2, 3, 4})
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	b.SetBytes(int64(p.Size))
	for b.Loop() {
		if _, err := Encode(&p, buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeData1000(b *testing.B) {
	p := benchPacket([]uint8{1, 2, 3, 4})
	f, _ := Encode(&p, nil)
	var q pkt.Packet
	b.ReportAllocs()
	b.SetBytes(int64(len(f)))
	for b.Loop() {
		if err := Decode(f, &q); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeAck(b *testing.B) {
	p := samples()["ack"]
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(&p, buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarkCE(b *testing.B) {
	f := tcpFrame(1, 2, pkt.ECT0)
	b.ReportAllocs()
	for b.Loop() {
		f[15] = pkt.ECT0
		_ = MarkCE(f)
	}
}

func BenchmarkVerifyICRC1000(b *testing.B) {
	p := benchPacket(nil)
	f, _ := Encode(&p, nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := VerifyICRC(f); err != nil {
			b.Fatal(err)
		}
	}
}
