package nodes

import (
	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

// IdealFCT is the standalone FCT of a flow of size bytes on an idle path, measured as the engine measures
// it (start of sending to the last byte's cumulative ACK at the sender): the first packet's
// store-and-forward through every hop, the remaining wire bytes at the bottleneck rate, the propagation
// delay both ways, and the ACK's serialization at every hop on the way back (the ACK has no source
// route). pathRates/pathDelays list the links from the sender (the sender's own port first); the return
// path is assumed to be the same links. routeHops is the length of the flow's source route (0 when it is
// forwarded by table), which sizes the data packets; mtu is the payload per packet (0 = DefaultMTU).
//
// It refines HPCC's standalone FCT (base RTT + total wire bytes * 8 / bottleneck rate) by counting the
// first packet's serialization per hop instead of a fixed base RTT. It is exact for a back-to-back pair
// and within a packet time of the engine on longer idle paths.
func IdealFCT(size int64, mtu int, routeHops int, pathRates []float64, pathDelays []clock.Time) clock.Time {
	if len(pathRates) == 0 {
		return 0
	}
	if mtu <= 0 {
		mtu = DefaultMTU
	}
	m := int64(mtu)
	npk := (size + m - 1) / m
	if npk == 0 {
		npk = 1
	}
	full := int64(pkt.DataSize(mtu, routeHops))
	last := int64(pkt.DataSize(int(size-(npk-1)*m), routeHops))
	first := full
	if npk == 1 {
		first = last
	}
	total := (npk-1)*full + last
	var t clock.Time
	bottleneck := pathRates[0]
	for i, r := range pathRates {
		if r < bottleneck {
			bottleneck = r
		}
		var d clock.Time
		if i < len(pathDelays) {
			d = pathDelays[i]
		}
		t += clock.TxTime(int(first), r) + clock.TxTime(pkt.AckSize, r) + 2*d
	}
	return t + clock.FromSeconds(float64(total-first)*8/bottleneck)
}
