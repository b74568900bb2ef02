package wire_test

import (
	"bytes"
	"github.com/fabriclab/fabriclab/wire"
	"github.com/fabriclab/fabriclab/wire/dissect"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

func TestPcapRoundTrip(t *testing.T) {
	var file bytes.Buffer
	w, err := wire.NewPcapWriter(&file, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Base = time.Unix(1_700_000_000, 0)
	s := wire.Samples()
	var want []pkt.Packet
	for i := 0; i < 8; i++ {
		p := s["pfc"]
		p.PauseMask = 1 << i
		p.PauseQuanta = [8]uint16{}
		p.PauseQuanta[i] = uint16(100 * (i + 1))
		want = append(want, p)
	}
	want = append(want, s["portfc-pause"], s["data/r5"], s["nack"])
	for i := range want {
		// 1.234567891 us apart: exercises sub-microsecond (nanosecond) timestamps.
		if err := w.WritePacket(clock.Time(i)*1234567891*clock.Picosecond, &want[i]); err != nil {
			t.Fatal(err)
		}
	}
	raw := wire.TCPFrame(1, 2, 0)
	if err := w.WriteFrame(w.Base.Add(time.Hour), raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// Nanosecond pcap magic, little endian. (pcapgo v1.1.19's Reader.Resolution reports it backwards, so
	// check the bytes; the timestamps below check the scaling.)
	if m := file.Bytes()[:4]; !bytes.Equal(m, []byte{0x4d, 0x3c, 0xb2, 0xa1}) {
		t.Fatalf("pcap magic % x, want the nanosecond one", m)
	}
	r, err := pcapgo.NewReader(&file)
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType() != layers.LinkTypeEthernet {
		t.Fatalf("link type %v", r.LinkType())
	}
	for i := 0; ; i++ {
		data, ci, err := r.ReadPacketData()
		if i == len(want)+1 {
			if err == nil {
				t.Fatal("extra record")
			}
			break
		}
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if i == len(want) {
			if !bytes.Equal(data, raw) || !ci.Timestamp.Equal(w.Base.Add(time.Hour)) {
				t.Error("raw frame record")
			}
			continue
		}
		wantTS := w.Base.Add(time.Duration(int64(i) * 1234567891 / 1000)) // ps -> ns, truncated
		if !ci.Timestamp.Equal(wantTS) || ci.Length != int(want[i].Size) || ci.CaptureLength != len(data) {
			t.Errorf("record %d: ts %v want %v, len %d/%d", i, ci.Timestamp, wantTS, ci.CaptureLength, ci.Length)
		}
		var p pkt.Packet
		if err := wire.Decode(data, &p); err != nil {
			t.Fatal(err)
		}
		if p.Kind != want[i].Kind || p.PauseQuanta != want[i].PauseQuanta || p.PauseMask != want[i].PauseMask || p.PSN != want[i].PSN {
			t.Errorf("record %d decodes to %+v", i, p)
		}
		if p.Kind == pkt.PFC {
			pk := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
			pf, ok := pk.Layer(dissect.LayerTypePFC).(*dissect.PFC)
			if !ok || pf.ClassEnable != 1<<i || pf.Quanta[i] != uint16(100*(i+1)) {
				t.Errorf("record %d: gopacket PFC %+v", i, pf)
			}
		}
	}
}

func TestPcapSnaplen(t *testing.T) {
	var file bytes.Buffer
	w, err := wire.NewPcapWriter(&file, 64)
	if err != nil {
		t.Fatal(err)
	}
	p := wire.Samples()["data"]
	if err := w.WritePacket(0, &p); err != nil {
		t.Fatal(err)
	}
	bad := p
	bad.Size++
	if err := w.WritePacket(0, &bad); err == nil {
		t.Error("WritePacket accepted an unencodable packet")
	}
	w.Flush()
	r, _ := pcapgo.NewReader(&file)
	data, ci, err := r.ReadPacketData()
	if err != nil || len(data) != 64 || ci.Length != int(p.Size) {
		t.Fatalf("snaplen: %v %d %d", err, len(data), ci.Length)
	}
}
