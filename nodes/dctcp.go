package nodes

import "math"

// DCTCP (Alizadeh et al., SIGCOMM 2010) as a window-based congestion control of the NIC's transports,
// the "DCTCP-like" control of the telemetry paper's LERP and the DCTCP of the expander thesis:
//
//   - switches mark CE at a queue threshold K (step marking: switch.ecn kmin = kmax = K, pmax 1); the
//     receiver echoes each data packet's CE in the ACK it triggers (the ACK's IP ECN field carries CE);
//   - the sender keeps alpha, the EWMA of the fraction F of acknowledged packets that were marked, updated
//     once per window of data (when the cumulative ACK passes the PSN sent last at the previous update):
//     alpha = (1-g) alpha + g F, g = 1/16 (the paper's and Linux's dctcp_shift_g = 4);
//   - on a marked ACK, at most once per window: cwnd = cwnd (1 - alpha/2), ssthresh = cwnd;
//   - otherwise per acknowledged packet: slow start (cwnd += 1) below ssthresh, else cwnd += 1/cwnd;
//   - a loss (NACK) halves cwnd once per window, a timeout restarts from MinWindow, as TCP does.
//
// The window is in packets; the QP sends new data while sndNxt - sndUna < cwnd (and below any BDP cap).
// A flow starts at InitWindow packets, 0 meaning its path's BDP (RDMA NICs start at line rate; the
// thesis' NetBench uses 3): the window derived from the path the flow is on, not the fabric's diameter.

// DCTCP holds the DCTCP parameters; zero fields take the defaults.
type DCTCP struct {
	G          float64 `json:"g,omitempty"`           // alpha gain (1/16)
	InitWindow int     `json:"init_window,omitempty"` // packets at start and after a reroute; 0: path BDP
	MinWindow  float64 `json:"min_window,omitempty"`  // floor of cwnd in packets (1)
}

// DCTCP defaults (DCTCP paper §3.1 and Linux tcp_dctcp.c: g = 1/16, initial alpha 1).
const (
	DefaultDCTCPG         = 1.0 / 16
	DefaultDCTCPMinWindow = 1
)

type dctcp struct {
	q        *qp
	cwnd     float64
	ssthresh float64
	alpha    float64
	acked    uint32 // packets acknowledged in the current observation window
	marked   uint32 // of which with CE echoed
	winEnd   uint32 // alpha updates when sndUna passes it
	cutEnd   uint32 // no further cut until sndUna passes it
	cut      bool
}

func newDCTCP(q *qp) *dctcp {
	d := &dctcp{q: q, alpha: 1}
	d.restart()
	return d
}

// restart starts the window over, as for a new connection (flow start, reroute): the initial window
// (from the path the QP is now on) and slow start.
func (d *dctcp) restart() {
	c := &d.q.n.cfg.DCTCP
	w := float64(c.InitWindow)
	if w == 0 {
		w = float64(d.q.pathBDPPkts())
	}
	d.cwnd, d.ssthresh = math.Max(w, c.MinWindow), math.Inf(1)
	d.cut = false
	d.winEnd = d.q.sndNxt
	d.acked, d.marked = 0, 0
}

// window is the number of packets the QP may have outstanding.
func (d *dctcp) window() uint32 { return uint32(math.Max(d.cwnd, 1)) }

// onAck takes an ACK that advanced the cumulative ACK by n packets, with CE echoed or not.
func (d *dctcp) onAck(n uint32, ece bool) {
	q, c := d.q, &d.q.n.cfg.DCTCP
	d.acked += n
	if ece {
		d.marked += n
	}
	if q.sndUna > d.winEnd || q.sndUna >= q.sndNxt {
		if d.acked > 0 {
			d.alpha = (1-c.G)*d.alpha + c.G*float64(d.marked)/float64(d.acked)
		}
		d.acked, d.marked = 0, 0
		d.winEnd = q.sndNxt
	}
	if d.cut && q.sndUna > d.cutEnd {
		d.cut = false
	}
	if ece {
		if !d.cut {
			d.cwnd = math.Max(d.cwnd*(1-d.alpha/2), c.MinWindow)
			d.ssthresh = d.cwnd
			d.cut, d.cutEnd = true, q.sndNxt
		}
		return
	}
	if d.cwnd < d.ssthresh {
		d.cwnd += float64(n)
	} else {
		d.cwnd += float64(n) / d.cwnd
	}
}

// onLoss halves the window once per window of data (a NACK: selective repeat's or go-back-N's).
func (d *dctcp) onLoss() {
	if d.cut && d.q.sndUna <= d.cutEnd {
		return
	}
	c := &d.q.n.cfg.DCTCP
	d.cwnd = math.Max(d.cwnd/2, c.MinWindow)
	d.ssthresh = d.cwnd
	d.cut, d.cutEnd = true, d.q.sndNxt
}

// onTimeout restarts from the minimum window.
func (d *dctcp) onTimeout() {
	c := &d.q.n.cfg.DCTCP
	d.ssthresh = math.Max(d.cwnd/2, 2)
	d.cwnd = c.MinWindow
	d.cut, d.cutEnd = true, d.q.sndNxt
}
