package nodes

import (
	"fmt"
	"math/rand/v2"

	"github.com/fabriclab/fabriclab/clock"
)

// ATE is PortFC's Asymmetric Traffic Engineering (Algorithm 5, §III-E, and its analysis, Eq. 3), the
// first-hop choice of a Rail-only NDC node between its high-bandwidth domain (HBD) and the network
// domain (ND). A flow with several candidate routes (Flow.Paths: Paths[0] leaves by the HBD port, the
// others by ND ports) is put on Paths[0] with probability w^H and on an ND-first candidate otherwise,
// once, when it starts; it keeps that route.
//
// w^H follows Eq. 3, w^H(t+1) = w^H(t) · p·B_H / T^H(t), clamped to [0,1], with w^N = 1 - w^H. The
// paper's Algorithm 5 line 6 adds a weight to a traffic volume and contradicts w^N = 1 - w^H, and its
// line 5 is absolute where Eq. 3 is multiplicative; the paper's own analysis (§III-F) is Eq. 3, so that
// is what runs, and line 6 is read as an erratum (PortFC paper §III-E, Algorithm 5). When T^H = 0 the update is skipped
// (the paper's rule for sparse MoE traffic).
//
// Units. The paper calls T^H "inflight traffic" from node i into its first-hop HBD and B_H the HBD's
// "capacity", without units. Here T^H is bytes in flight: the bytes this NIC's own flows that leave by
// the HBD port have sent and not yet had acknowledged (2-hop HBD flows and HBD-first 4-hop flows alike;
// relayed traffic is not the node's demand). B_H is the same quantity for a full pipe: the HBD port
// rate x the base round trip of the longest HBD-first path (ATEConfig.CapacityBytes, computed by the
// lab). By Little's law an uncongested HBD carrying rate r holds r x RTT in flight, so T^H = p·B_H is
// the paper's "HBD at p of its capacity"; queueing anywhere on HBD-first paths (including the rail hop
// after the relay, under PFC or PortFC backpressure) also raises T^H, which is the "threshold of the
// queue" the paper says ATE plans by. The measurement is a snapshot of the NIC's own QP state, so it
// needs no window and no timer.
//
// That reading sees nothing at a barrier: when a burst of flows starts together (an MoE stage after
// its dependencies) nothing is in flight yet, every draw happens at w^H as it was, and ATE is static
// routing. Algorithm 5's loop reads differently: it assigns flows one at a time and T^H is "the
// cumulative traffic volume ... directed to" the HBD, so a flow counts once it is assigned. Measure
// "assigned" is that reading: T^H is every byte of the NIC's HBD-port flows not yet acknowledged, sent
// or not, against the same B_H, and every flow with a choice takes an Eq. 3 step. It fills the HBD up
// to about p·B_H of outstanding bytes and sends the rest ND-first.
//
// Measure "offered" is the paper's analysis in rates (D, p·B_H, ΔT = D - p·B_H): T^H is the bit rate
// of flow bytes the NIC put on its HBD port over the last window (Interval, default 10 base RTTs) and
// B_H the HBD port rate. T^H is then w^H x D with no lag, so Eq. 3 lands on w^H = p·B_H/D in one step
// (and coincides with Algorithm 5's absolute line 5), but it does not see congestion downstream.
//
// Limits measured (suites/routing/ate_test.go): Eq. 3 is an integrator. When T^H cannot follow w^H
// within a step, as when multi-MB flows already placed hold the HBD for milliseconds (bytes in flight
// and assigned bytes both), w^H is driven to about 0, and with no HBD-only flows at the node the
// T^H = 0 skip rule then keeps it there. The paper gives no floor or anti-windup; none is added.
//
// Time step. Eq. 3 is one step per feedback round: a change of w^H shows in T^H only once the flows it
// placed have sent for a round trip. Applying it at every flow start would compound the same reading
// over a burst of simultaneous starts (an all-to-all's flows all start at once), driving w^H to 0 or 1
// in one instant. So w^H is updated at a flow start only if Interval (default: the base RTT, B_H over
// the HBD rate) has passed since the last update; flows in between draw with the current weight.

// SelectATE is the ATE path-selection policy (Config.PathSelect).
const SelectATE = "ate"

// DefaultATEP is the paper's asymmetric threshold ("generally set to 0.9").
const DefaultATEP = 0.9

// ATEConfig holds ATE's parameters; the lab fills them from the topology.
type ATEConfig struct {
	P float64 `json:"p,omitempty"` // asymmetric threshold p in (0,1); 0: DefaultATEP
	// HBDPort is the NIC port into the high-bandwidth domain (layer 0 in a Rail-only NDC).
	HBDPort int `json:"hbd_port"`
	// CapacityBytes is B_H as bytes in flight: HBD port rate x base RTT of the longest HBD-first path.
	CapacityBytes int64 `json:"capacity_bytes"`
	// Interval is the least time between two Eq. 3 updates measuring ATEInFlight, and the window
	// measuring ATEOffered; 0: CapacityBytes at the HBD port rate (the base RTT), times
	// DefaultATEOfferedWindows for ATEOffered. Measuring ATEAssigned, every flow with a choice takes a
	// step.
	Interval clock.Time `json:"interval_ps,omitempty"`
	// W0 is w^H before the first update; 0: 1 (every flow HBD-first, as static BCube routing, until
	// the HBD is measured full). Eq. 3 is multiplicative, so it must start above 0.
	W0 float64 `json:"w0,omitempty"`
	// Measure is what T^H counts: ATEInFlight ("" too) the bytes sent and not acknowledged, or
	// ATEAssigned every byte of the HBD flows not yet acknowledged, sent or not: Algorithm 5's loop
	// counts a flow once it is assigned, which is what lets ATE act inside a burst of flows that start
	// together (an MoE stage), when nothing has been sent yet.
	Measure string `json:"measure,omitempty"`
}

// DefaultATEOfferedWindows is the ATEOffered window in base RTTs (CapacityBytes at the HBD rate): long
// enough to hold several flow arrivals at a node, so one large flow does not read as the whole demand.
const DefaultATEOfferedWindows = 10

// What T^H counts (ATEConfig.Measure).
const (
	ATEInFlight = "inflight"
	ATEAssigned = "assigned"
	ATEOffered  = "offered"
)

func (c *Config) checkATE() error {
	a := &c.ATE
	if c.PathSelect != SelectATE {
		return nil
	}
	if a.P == 0 {
		a.P = DefaultATEP
	}
	if a.W0 == 0 {
		a.W0 = 1
	}
	if a.Measure == "" {
		a.Measure = ATEInFlight
	}
	switch {
	case a.Measure != ATEInFlight && a.Measure != ATEAssigned && a.Measure != ATEOffered:
		return fmt.Errorf("nodes: config.ate.measure %q: want %s, %s or %s", a.Measure, ATEInFlight, ATEAssigned, ATEOffered)
	case !(a.P > 0 && a.P < 1):
		return fmt.Errorf("nodes: config.ate.p %g: want 0 < p < 1", a.P)
	case a.HBDPort < 0 || a.HBDPort >= len(c.Ports):
		return fmt.Errorf("nodes: config.ate.hbd_port %d: the NIC has %d ports", a.HBDPort, len(c.Ports))
	case a.CapacityBytes <= 0:
		return fmt.Errorf("nodes: config.ate.capacity_bytes %d: want B_H > 0 bytes", a.CapacityBytes)
	case a.Interval < 0:
		return fmt.Errorf("nodes: config.ate.interval %v must not be negative", a.Interval)
	case !(a.W0 > 0 && a.W0 <= 1):
		return fmt.Errorf("nodes: config.ate.w0 %g: want 0 < w0 <= 1", a.W0)
	}
	if a.Interval == 0 {
		a.Interval = clock.TxTime(int(a.CapacityBytes), c.Ports[a.HBDPort].RateBps)
		if a.Measure == ATEOffered {
			a.Interval *= DefaultATEOfferedWindows
		}
	}
	return nil
}

// ATEController is Eq. 3 alone: the HBD weight of one node, fed measured T^H. It is unit-agnostic (T
// and B in the same unit), which is what lets it be tested against a model of the HBD.
type ATEController struct {
	P float64 // asymmetric threshold
	B float64 // B_H
	W float64 // w^H; w^N = 1 - W

	Updates, Skips int
}

// Update applies one step of Eq. 3 for the measured t = T^H(t) and returns the new w^H. t <= 0 skips
// the step (the paper's T^H = 0 rule): the weight is kept.
func (c *ATEController) Update(t float64) float64 {
	if !(t > 0) {
		c.Skips++
		return c.W
	}
	c.Updates++
	c.W = min(max(c.W*c.P*c.B/t, 0), 1)
	return c.W
}

// ATEStats is a NIC's ATE state, for reports and tests.
type ATEStats struct {
	W                 float64 // current w^H
	Updates, Skips    int
	HBDFirst, NDFirst int // flows with a choice, by the first hop they got
	// MeanT is the average T^H over the updates, in bytes (bit/s measuring ATEOffered); LastT the last
	// reading.
	MeanT, LastT float64
	// Trace is w^H after each update, with the time of the update.
	Trace []ATEPoint
}

// ATEPoint is one Eq. 3 step.
type ATEPoint struct {
	At clock.Time
	T  float64 // T^H measured: bytes, or bit/s measuring ATEOffered
	W  float64 // w^H after the step
}

type ateState struct {
	c      ATEController
	rng    *rand.Rand
	last   clock.Time
	primed bool
	// ATEOffered: bytes of the flows this NIC put on its HBD port since last.
	offered int64
	sumT    float64
	stats   ATEStats
}

func (n *NIC) newATE() *ateState {
	a := n.cfg.ATE
	b := float64(a.CapacityBytes)
	if a.Measure == ATEOffered {
		b = n.cfg.Ports[a.HBDPort].RateBps // T^H in bit/s
	}
	return &ateState{c: ATEController{P: a.P, B: b, W: a.W0},
		rng: rand.New(rand.NewPCG(n.cfg.Seed^0xa7e, uint64(n.cfg.Host)))}
}

// ATE reports the NIC's ATE state; the zero value when the policy is not ATE.
func (n *NIC) ATE() ATEStats {
	if n.ate == nil {
		return ATEStats{}
	}
	s := n.ate.stats
	s.W, s.Updates, s.Skips = n.ate.c.W, n.ate.c.Updates, n.ate.c.Skips
	if s.Updates > 0 {
		s.MeanT = n.ate.sumT / float64(s.Updates)
	}
	s.Trace = append([]ATEPoint(nil), s.Trace...)
	return s
}

// hbdInFlight is T^H: bytes the NIC's own active flows on the HBD port sent (or, measuring
// ATEAssigned, were given) and have not had acknowledged.
func (n *NIC) hbdInFlight() float64 {
	var b int64
	port, assigned := n.cfg.ATE.HBDPort, n.cfg.ATE.Measure == ATEAssigned
	for _, q := range n.qps {
		if q.done || q.port != port {
			continue
		}
		upTo := q.sndHigh
		if assigned {
			upTo = q.npkts
		}
		if upTo <= q.sndUna {
			continue
		}
		sent := int64(upTo) * int64(q.mtu)
		if upTo == q.npkts { // the last packet may be short
			sent -= int64(q.mtu - q.lastPayload)
		}
		b += sent - int64(q.sndUna)*int64(q.mtu)
	}
	return float64(b)
}

// ateChoose fixes f's route among its candidates (Paths[0]: HBD first) before the flow is set up, so
// the flow's QP sits on the port of the route it got: ATE's candidates leave by different ports, which
// a run-time policy could not move a QP between. Flows without a choice pass through it too, so that
// measuring ATEOffered counts the HBD demand they bring.
func (n *NIC) ateChoose(f *Flow) {
	if n.ate == nil {
		n.ate = n.newATE()
	}
	a, now, cfg := n.ate, n.clk.Now(), &n.cfg.ATE
	if len(f.Paths) < 2 {
		if len(f.Route) > 0 && int(f.Route[0]) == cfg.HBDPort {
			a.offered += f.Size
		}
		return
	}
	var t float64
	step := false
	switch cfg.Measure {
	case ATEAssigned:
		// Assigned bytes move with every assignment, so Algorithm 5's loop (one step per flow)
		// cannot compound a stale reading the way a burst of starts on one in-flight snapshot would.
		t, step = n.hbdInFlight(), true
	case ATEOffered:
		// The rate of bytes put on the HBD over the window just closed: T^H responds to w^H within
		// one window, with no flow lifetimes in the loop.
		if now-a.last >= cfg.Interval {
			t, step = float64(a.offered)*8/(now-a.last).Seconds(), true
			a.offered, a.last = 0, now
		}
	default:
		if !a.primed || now-a.last >= cfg.Interval {
			t, step = n.hbdInFlight(), true
		}
	}
	if step {
		a.c.Update(t)
		a.stats.LastT = t
		if t > 0 {
			a.primed = true
			if cfg.Measure != ATEOffered {
				a.last = now
			}
			a.sumT += t
			a.stats.Trace = append(a.stats.Trace, ATEPoint{At: now, T: t, W: a.c.W})
		}
	}
	i := 0
	if a.rng.Float64() >= a.c.W {
		i = 1 + a.rng.IntN(len(f.Paths)-1)
		a.stats.NDFirst++
	} else {
		a.stats.HBDFirst++
		a.offered += f.Size
	}
	f.Route, f.Paths = f.Paths[i], nil
}
