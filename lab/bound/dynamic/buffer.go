package dynamic

import (
	"fmt"
	"time"
)

// Rounds are thesis Appendix A's inputs: a dynamic topology of N switches, each with K servers and R
// dynamic network ports of Link bits/s, re-coupled round-robin; a round is Change (re-aiming a link)
// then Transmit (sending).
type Rounds struct {
	Change, Transmit time.Duration
	N, K, R          int
	Link             float64 // bits/s
}

// Buffering is one Appendix A strategy's all-to-all result, per server: its sending rate, each of its
// (N-1)·K destination queues' build-up (equal to what a visit drains: the thesis' equilibrium), and the
// sum over its queues just before a transmit period (max) and just after one (min).
type Buffering struct {
	Strategy    string
	RatioActive float64 // share of time a server can send
	AlphaBase   float64 // R·Link/K, bits/s per server while coupled
	AlphaReal   float64 // RatioActive·AlphaBase
	AlphaQueue  float64 // AlphaReal / ((N-1)·K), bits/s into one destination queue
	BuildUp     float64 // bytes one queue holds when its turn comes
	Consumed    float64 // bytes one queue's turn can drain
	TotalMax    float64 // bytes over all of a server's queues, just before a transmit period
	TotalMin    float64 // the same just after one
}

func (r Rounds) check() error {
	if r.Change < 0 || r.Transmit <= 0 || r.N < 2 || r.K < 1 || r.R < 1 || r.Link <= 0 {
		return fmt.Errorf("dynamic: rounds need change >= 0, transmit > 0, switches >= 2, servers >= 1, ports >= 1, link > 0 (got %v, %v, %d, %d, %d, %g)",
			r.Change, r.Transmit, r.N, r.K, r.R, r.Link)
	}
	return nil
}

// base fills the rates common to the three strategies for a given RatioActive.
func (r Rounds) base(name string, ratio float64) Buffering {
	b := Buffering{Strategy: name, RatioActive: ratio, AlphaBase: float64(r.R) * r.Link / float64(r.K)}
	b.AlphaReal = ratio * b.AlphaBase
	b.AlphaQueue = b.AlphaReal / float64((r.N-1)*r.K)
	return b
}

// queueSum is Σ_{i=1}^{m} width·((i-1)·round + change)·rate in bytes (change 0: the min form).
func queueSum(m, width int, round, change, rate float64) float64 {
	tri := float64(m) * float64(m-1) / 2 // Σ (i-1)
	return float64(width) * (tri*round + float64(m)*change) * rate / 8
}

func (r Rounds) times() (change, transmit, round float64) {
	change, transmit = r.Change.Seconds(), r.Transmit.Seconds()
	return change, transmit, change + transmit
}

// FullCoupling is §A.1: every round a switch aims all R ports at one other switch, so only K of a
// server's queues drain at a time and nothing is sent while links change.
func (r Rounds) FullCoupling() (Buffering, error) {
	if err := r.check(); err != nil {
		return Buffering{}, err
	}
	c, t, round := r.times()
	b := r.base("full coupling", t/round)
	revisited := (float64(r.N-2)*round + c) * b.AlphaQueue
	b.BuildUp = (revisited + t*b.AlphaQueue) / 8
	b.Consumed = b.AlphaBase / float64(r.K) * t / 8
	b.TotalMax = queueSum(r.N-1, r.K, round, c, b.AlphaQueue)
	b.TotalMin = queueSum(r.N-1, r.K, round, 0, b.AlphaQueue)
	return b, nil
}

// OneByOne is §A.2: one port moves per round while the other R-1 keep sending, so a queue is visited
// for R rounds and K·(R-1) queues are part-drained at any moment.
func (r Rounds) OneByOne() (Buffering, error) {
	if err := r.check(); err != nil {
		return Buffering{}, err
	}
	c, t, round := r.times()
	R := float64(r.R)
	b := r.base("one-by-one", ((R-1)*round+t)/(R*round))
	b.BuildUp = float64(r.N-1) * round * b.AlphaQueue / 8
	b.Consumed = b.AlphaBase / (float64(r.K) * R) * (round*(R-1) + t) / 8
	// Σ_{i=1}^{R-1} K·i·Consumed/R = K·Consumed·(R-1)/2: the queues whose visit is under way have
	// already sent part of their share.
	partial := float64(r.K) * b.Consumed * (R - 1) / 2
	b.TotalMax = queueSum(r.N-1, r.K, round, c, b.AlphaQueue) - partial
	b.TotalMin = queueSum(r.N-1, r.K, round, 0, b.AlphaQueue) - partial
	return b, nil
}

// FanOut is §A.3: all R ports move every round, each to a different switch, so K·R queues drain at
// once and a round-trip takes (N-1)/R rounds. The thesis assumes (N-1) mod R = 0; so does this.
func (r Rounds) FanOut() (Buffering, error) {
	if err := r.check(); err != nil {
		return Buffering{}, err
	}
	if (r.N-1)%r.R != 0 {
		return Buffering{}, fmt.Errorf("dynamic: fan-out needs (switches-1) divisible by ports, as the thesis assumes (%d-1 mod %d = %d)", r.N, r.R, (r.N-1)%r.R)
	}
	c, t, round := r.times()
	b := r.base("fan-out", t/round)
	m := (r.N - 1) / r.R
	b.BuildUp = float64(m) * round * b.AlphaQueue / 8
	b.Consumed = b.AlphaBase / float64(r.K*r.R) * t / 8
	b.TotalMax = queueSum(m, r.K*r.R, round, c, b.AlphaQueue)
	b.TotalMin = queueSum(m, r.K*r.R, round, 0, b.AlphaQueue)
	return b, nil
}
