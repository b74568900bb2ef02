package nodes

import (
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/pkt"
)

// rxQP is a receiving queue pair: one flow's receive state. It is kept after the last packet so a
// retransmission caused by a lost ACK is answered.
type rxQP struct {
	src      int32
	sport    uint16
	expected uint32 // next in-order PSN
	lastPSN  int64  // PSN of the packet marked Last, once seen; -1 before
	sinceAck int    // in-order packets since the last ACK (coalescing)
	dupSince int    // duplicates since the last ACK they triggered

	ooo map[uint32]struct{} // IRN: PSNs received above expected; the reorder buffer's too
	// heldDelay: the reorder buffer's packets' queueing delays, so the ACK that releases them reflects
	// the last one's: the sender (ugal-pb) credits an ACK's delay to the path of the PSN below it.
	heldDelay map[uint32]clock.Time

	nackFor  uint32 // go-back-N NACK rate limit: the expected PSN last NACKed and when
	nackAt   clock.Time
	nacked   bool
	cnpAt    clock.Time // NP pacing: last CNP
	cnpSent  bool
	gapNoted bool

	// Reordering: maxSent is the latest send time among arrivals; a packet sent before it arrives late.
	maxSent   clock.Time
	reordered bool // a line was logged for this flow
	// A lossless hole: PSN gapPSN was expected when a packet sent at gapSent arrived above it. The packet
	// that fills the hole tells loss (sent after gapSent: a retransmission) from reordering.
	gapOpen bool
	gapPSN  uint32
	gapSent clock.Time
}

func (n *NIC) onData(port int, p *pkt.Packet) {
	n.stats.RxData++
	now := n.clk.Now()
	rx := n.lastRx
	if rx == nil || n.lastRxID != p.Flow {
		rx = n.rx[p.Flow]
		if rx == nil {
			rx = &rxQP{src: p.Src, sport: p.SPort, lastPSN: -1}
			n.rx[p.Flow] = rx
		}
		n.lastRx, n.lastRxID = rx, p.Flow
	}
	if p.ECN == pkt.CE {
		n.stats.ECNMarked++
		// Notification point: one CNP per marked packet, or at most one per flow per CNPInterval
		// (DCQCN's N).
		if n.cfg.CC == CCDCQCN && (n.cfg.CNP == CNPPerPacket || !rx.cnpSent || now-rx.cnpAt >= n.cfg.CNPInterval) {
			rx.cnpSent, rx.cnpAt = true, now
			n.stats.TxCNP++
			n.sendCtl(pkt.CNP, p, rx, 0, pkt.CNPSize)
		}
	}
	if p.Last {
		rx.lastPSN = int64(p.PSN)
	}
	n.noteOrder(p, rx)
	switch {
	case p.PSN == rx.expected:
		if rx.gapOpen && p.PSN == rx.gapPSN {
			rx.gapOpen = false
			if p.SentAt > rx.gapSent { // resent after the later packet arrived: the original was lost
				n.lossGap(p, rx)
			}
		}
		rx.expected++
		jumped := false
		ackFor := p
		for len(rx.ooo) > 0 {
			if _, ok := rx.ooo[rx.expected]; !ok {
				break
			}
			if d, ok := rx.heldDelay[rx.expected]; ok {
				delete(rx.heldDelay, rx.expected)
				c := *p
				c.ProbeDelay = d
				ackFor = &c
			}
			delete(rx.ooo, rx.expected)
			rx.expected++
			jumped = true
		}
		rx.sinceAck++
		// ACK every AckEvery packets, at the end of the message, and at once when a hole was filled
		// (the sender is in recovery and waits for exactly this).
		if rx.sinceAck >= n.cfg.AckEvery || jumped || (rx.lastPSN >= 0 && int64(rx.expected) > rx.lastPSN) {
			rx.sinceAck = 0
			n.stats.TxAck++
			n.sendCtl(pkt.Ack, ackFor, rx, 0, pkt.AckSize)
		}
	case p.PSN > rx.expected:
		n.stats.OutOfOrder++
		if n.cfg.Transport == Lossless && !rx.gapOpen {
			// A hole: a loss or a reordering; the packet that fills it will say which (lossGap).
			rx.gapOpen, rx.gapPSN, rx.gapSent = true, rx.expected, p.SentAt
		}
		if n.cfg.ReorderBuffer && n.cfg.Transport != IRN {
			// The Benchmark's reorder buffer: hold it until the hole fills, no NACK (under PFC a hole is
			// a reordering; a real loss is left to the sender's timeout).
			if rx.ooo == nil {
				rx.ooo = map[uint32]struct{}{}
			}
			rx.ooo[p.PSN] = struct{}{}
			if rx.heldDelay == nil {
				rx.heldDelay = map[uint32]clock.Time{}
			}
			rx.heldDelay[p.PSN] = p.ProbeDelay
			n.stats.ReorderHeld++
			n.stats.ReorderPeak = max(n.stats.ReorderPeak, uint64(len(rx.ooo)))
			return
		}
		if n.cfg.Transport == IRN {
			// Keep it and NACK with the cumulative ACK plus the SACKed PSN, on every out-of-order arrival.
			if rx.ooo == nil {
				rx.ooo = map[uint32]struct{}{}
			}
			rx.ooo[p.PSN] = struct{}{}
			n.stats.TxNack++
			n.sendCtl(pkt.Nack, p, rx, p.PSN, pkt.NackSize)
			return
		}
		// Go-back-N: drop it; NACK the expected PSN once, again only after NackInterval.
		if !rx.nacked || rx.nackFor != rx.expected || now-rx.nackAt >= n.cfg.NackInterval {
			rx.nacked, rx.nackFor, rx.nackAt = true, rx.expected, now
			n.stats.TxNack++
			n.sendCtl(pkt.Nack, p, rx, 0, pkt.NackSize) // the wire NAK always has the SACK field; go-back-N leaves it 0
		}
	default:
		// A duplicate: the sender timed out or went back. Answer (coalesced) so a lost ACK cannot stall
		// the flow forever.
		n.stats.Duplicates++
		rx.dupSince++
		if rx.dupSince >= n.cfg.AckEvery || p.Last {
			rx.dupSince = 0
			n.stats.TxAck++
			n.sendCtl(pkt.Ack, p, rx, 0, pkt.AckSize)
		}
	}
}

// noteOrder counts p as reordered when a packet of its flow sent after it has already arrived, and
// logs the flow's first reordering as a line of its own. Packets without a send time (payloads too
// short to carry it on the wire) are not judged.
func (n *NIC) noteOrder(p *pkt.Packet, rx *rxQP) {
	if p.SentAt == 0 {
		return
	}
	if p.SentAt >= rx.maxSent {
		rx.maxSent = p.SentAt
		return
	}
	n.stats.Reordered++
	if !rx.reordered {
		rx.reordered = true
		n.log.Reorders = append(n.log.Reorders, fmt.Sprintf(
			"h%d: %s flow %d from h%d: PSN %d sent %v before a packet that arrived first (reordered, not lost)",
			n.cfg.Host, n.cfg.Transport, p.Flow, p.Src, p.PSN, rx.maxSent-p.SentAt))
	}
}

// lossGap reports a lossless hole that only a retransmission filled: a packet was lost.
func (n *NIC) lossGap(p *pkt.Packet, rx *rxQP) {
	n.stats.LosslessGaps++
	if !rx.gapNoted {
		rx.gapNoted = true
		n.log.Violations = append(n.log.Violations, fmt.Sprintf(
			"h%d: lossless flow %d from h%d: PSN %d was resent to fill a hole (a packet was lost)",
			n.cfg.Host, p.Flow, p.Src, p.PSN))
	}
}

// sendCtl sends an ACK, NACK or CNP for data packet p back to its sender, in the strict control queue.
func (n *NIC) sendCtl(kind pkt.Kind, p *pkt.Packet, rx *rxQP, sack uint32, size int) {
	c := n.pool.New(pkt.Packet{Kind: kind, Src: n.cfg.Host, Dst: p.Src, Flow: p.Flow, SPort: p.SPort,
		DPort: RoCEv2Port, Proto: ProtoUDP, Prio: n.cfg.ControlPrio, PSN: rx.expected, SackPSN: sack,
		SentAt: n.clk.Now(), InPort: -1,
		// The data frame's accumulated queueing delay, reflected for telemetry path selection (on the
		// wire: the ACK's MSN, to 16 ns).
		ProbeDelay: p.ProbeDelay})
	if n.cfg.CC == CCDCTCP && kind != pkt.CNP && p.ECN == pkt.CE {
		c.ECN = pkt.CE // DCTCP's ECN-echo, per data packet (dctcp.go)
	}
	n.sendBack(c, size)
}

// sendBack sends control frame c (ACK, NACK, CNP, probe reply) to the sender of flow c.Flow, host c.Dst,
// in the strict control queue: by the reverse of the flow's source route when it came with one, else by
// the table. size is c's size without a route.
func (n *NIC) sendBack(c *pkt.Packet, size int) {
	port := -1
	if r := n.ackRoute(c.Flow); len(r) > 0 {
		port = int(r[0])
		c.Route, c.Hop = r, 1
		size += pkt.RouteOptionBytes(len(r))
	} else {
		port = n.fibPort(c.Dst, mix32(uint64(c.Flow)^n.cfg.Seed<<32^0x5bd1e995))
	}
	c.Size = int32(size)
	if port < 0 || port >= len(n.ports) {
		n.drop(c, "no-route")
		return
	}
	n.enqueue(port, n.control[port], c)
}
