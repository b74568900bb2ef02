package wire

import (
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

// An ACK carries the reflected queueing delay (telemetry routing) to AckDelayUnit, saturating.
func TestAckCarriesReflectedDelay(t *testing.T) {
	for _, tc := range []struct{ in, want clock.Time }{
		{0, 0},
		{-5, 0},
		{10*clock.Microsecond + 7, 10*clock.Microsecond + 7 - (10*clock.Microsecond+7)%AckDelayUnit},
		{AckDelayUnit - 1, 0},
		{clock.Second, MaxPSN * AckDelayUnit},
	} {
		a := sized(pkt.Packet{Kind: pkt.Ack, Src: 1, Dst: 2, SPort: 0xc000, DPort: RoCEv2Port, Proto: 17, Flow: 5, PSN: 9,
			ProbeDelay: tc.in})
		b, err := Encode(&a, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got pkt.Packet
		if err := Decode(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.ProbeDelay != tc.want || got.PSN != 9 || got.Kind != pkt.Ack {
			t.Errorf("delay %v: decoded %v (PSN %d, %v), want %v", tc.in, got.ProbeDelay, got.PSN, got.Kind, tc.want)
		}
	}
}
