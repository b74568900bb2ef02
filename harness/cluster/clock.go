package cluster

import (
	"fmt"
	"time"
)

// Offset is a machine's clock against the coordinator's, from NTP's four-timestamp exchange over the
// control channel: of N probes, the one with the smallest round trip (the least queueing, so the least
// asymmetry) gives the offset, and half its round trip bounds the offset's error (the true offset lies
// within Offset ± Uncertainty whatever the path's asymmetry).
type Offset struct {
	Machine string `json:"machine"`
	// Offset is the machine's CLOCK_REALTIME minus the coordinator's, ns.
	Offset int64 `json:"offset_ns"`
	// RTT is the best probe's round trip without the server's own time between T2 and T3, ns.
	RTT int64 `json:"rtt_ns"`
	// Uncertainty is RTT/2, ns.
	Uncertainty int64 `json:"uncertainty_ns"`
	Probes      int   `json:"probes"`
}

// Error is how far the machine's clock may be from the coordinator's: |Offset| + Uncertainty. The
// agents start at a CLOCK_REALTIME epoch that each reads with its own clock, uncorrected: a measured
// offset is not subtracted, since an offset that large means the machines' time service (chrony, PTP)
// is not doing its job and the next reading may differ again.
func (o Offset) Error() time.Duration {
	a := o.Offset
	if a < 0 {
		a = -a
	}
	return time.Duration(a + o.Uncertainty)
}

func (o Offset) String() string {
	return fmt.Sprintf("%s: offset %v ± %v (best of %d probes, round trip %v)", o.Machine,
		time.Duration(o.Offset), time.Duration(o.Uncertainty), o.Probes, time.Duration(o.RTT))
}

// estimate picks the probe with the smallest round trip.
func estimate(machine string, probes []Stamps) Offset {
	best := Offset{Machine: machine, RTT: -1, Probes: len(probes)}
	for _, p := range probes {
		rtt := (p.T4 - p.T1) - (p.T3 - p.T2)
		if rtt < 0 {
			rtt = 0 // clocks stepped during the probe; the sample still bounds nothing better
		}
		if best.RTT < 0 || rtt < best.RTT {
			best.RTT = rtt
			best.Offset = ((p.T2 - p.T1) + (p.T3 - p.T4)) / 2
		}
	}
	best.Uncertainty = (best.RTT + 1) / 2
	return best
}

// realNow is CLOCK_REALTIME in ns.
func realNow() int64 { return time.Now().UnixNano() }
