package nodes

import (
	"math"

	"github.com/fabriclab/fabriclab/clock"
)

// dcqcn is a QP's DCQCN reaction point, following HPCC ns-3's Mellanox mode (rdma-hw.cc, *Mlx):
//
//   - first CNP: alpha = 1, rate *= RateOnFirstCNP, target = rate; start the alpha and decrease clocks.
//   - every AlphaInterval: alpha = (1-g)*alpha + g if a CNP arrived since the last update, else (1-g)*alpha.
//   - every DecreaseInterval (offset 1 ns after the alpha clock): if a CNP arrived since the last check,
//     target = rate (unless in stage 0 and not ClampTargetRate), rate = max(min, rate*(1-alpha/2)),
//     stage = 0, and the RP timer restarts.
//   - every RPTimer: stage < F: rate = (rate+target)/2 (fast recovery); stage == F: target += AI, then
//     average; stage > F: target += HAI, then average (target capped at line rate); stage++.
//
// The periodic clocks are folded into arithmetic so an idle QP costs no events: alpha is brought up to
// date from the tick count when it is read, and a decrease check is scheduled only when a CNP is waiting
// for one (a check with no CNP pending does nothing in the reference model).
type dcqcn struct {
	q *qp

	alpha     float64
	target    float64
	started   bool
	t0        clock.Time // first CNP: origin of the alpha and decrease clocks
	alphaTick int64      // alpha clock ticks already applied
	alphaCNP  bool       // a CNP arrived since the last applied alpha tick
	decCNP    bool       // a CNP arrived since the last decrease check
	decTimer  clock.Timer
	decFn     func()
	stage     int
	rpTimer   clock.Timer
	rpFn      func()
	ai, hai   float64
}

func newDCQCN(q *qp) *dcqcn {
	d := &dcqcn{q: q, target: q.lineRate}
	d.ai, d.hai = q.n.cfg.DCQCN.rateAI(q.lineRate)
	d.decFn = d.decreaseCheck
	d.rpFn = d.rpTick
	return d
}

func (d *dcqcn) params() *DCQCN { return &d.q.n.cfg.DCQCN }

// catchUp applies the alpha ticks that have happened by now. A tick at exactly now counts as having
// happened: in the reference model it was scheduled before anything else at that instant.
func (d *dcqcn) catchUp(now clock.Time) {
	if !d.started {
		return
	}
	p := d.params()
	k := int64((now - d.t0) / p.AlphaInterval)
	m := k - d.alphaTick
	if m <= 0 {
		return
	}
	if d.alphaCNP {
		d.alpha = (1-p.G)*d.alpha + p.G
		d.alphaCNP = false
		m--
	}
	if m > 0 {
		d.alpha *= math.Pow(1-p.G, float64(m))
	}
	d.alphaTick = k
}

func (d *dcqcn) onCNP(now clock.Time) {
	p := d.params()
	if !d.started {
		d.started = true
		d.t0 = now
		d.alpha = 1
		d.alphaTick = 0
		d.alphaCNP = false
		d.decCNP = true
		d.target = d.q.rate * p.RateOnFirstCNP
		d.setRate(d.target)
		d.decTimer = d.q.n.clk.AfterFunc(p.DecreaseInterval+clock.Nanosecond, d.decFn)
		return
	}
	d.catchUp(now)
	d.alphaCNP = true
	d.decCNP = true
	if d.decTimer == nil {
		// Next point of the decrease clock t0 + 1ns + j*DecreaseInterval strictly after now.
		base := d.t0 + clock.Nanosecond
		j := (now-base)/p.DecreaseInterval + 1
		if now < base {
			j = 0
		}
		d.decTimer = d.q.n.clk.AfterFunc(base+j*p.DecreaseInterval-now, d.decFn)
	}
}

func (d *dcqcn) decreaseCheck() {
	d.decTimer = nil
	if !d.decCNP {
		return
	}
	p := d.params()
	now := d.q.n.clk.Now()
	d.catchUp(now)
	if p.ClampTargetRate || d.stage != 0 {
		d.target = d.q.rate
	}
	d.setRate(math.Max(p.MinRateBps, d.q.rate*(1-d.alpha/2)))
	d.stage = 0
	d.decCNP = false
	if d.rpTimer != nil {
		d.rpTimer.Stop()
	}
	d.rpTimer = d.q.n.clk.AfterFunc(p.RPTimer, d.rpFn)
}

func (d *dcqcn) rpTick() {
	p := d.params()
	line := d.q.lineRate
	switch {
	case d.stage < p.FastRecoveryTimes:
	case d.stage == p.FastRecoveryTimes:
		d.target = math.Min(d.target+d.ai, line)
	default:
		d.target = math.Min(d.target+d.hai, line)
	}
	r := d.q.rate/2 + d.target/2
	d.stage++
	if d.target >= line && line-r < line*1e-9 {
		// Back at line rate for good: nothing would change any more, so stop the timer (the reference
		// model keeps ticking forever).
		d.setRate(line)
		d.rpTimer = nil
		return
	}
	d.setRate(r)
	d.rpTimer = d.q.n.clk.AfterFunc(p.RPTimer, d.rpFn)
}

// setRate changes the QP's pacing rate (readyAt follows it).
func (d *dcqcn) setRate(r float64) {
	q := d.q
	if r > q.lineRate {
		r = q.lineRate
	}
	if r == q.rate {
		return
	}
	faster := r > q.rate
	q.rate = r
	if faster && !q.done {
		q.lane.refill()
	}
}

func (d *dcqcn) stop() {
	if d.decTimer != nil {
		d.decTimer.Stop()
		d.decTimer = nil
	}
	if d.rpTimer != nil {
		d.rpTimer.Stop()
		d.rpTimer = nil
	}
}
