package spec

import "github.com/fabriclab/fabriclab/clock"

// Profile is one reference simulator's set of transport and congestion-control constants: every value
// the ns-3 simulators the papers ran on set differently from each other. host.profile selects one; it
// fills only fields the spec leaves zero, so a spec that names a value (the PortFC specs name the
// paper's K_min/K_max) keeps it. docs/profiles.md cites the file each value comes from.
type Profile struct {
	CNP          string // notification point: CNPModes
	CNPInterval  Time   // CNP "interval": at most one CNP per flow per this
	NACKInterval Time
	RTOLow       Time
	RTOHigh      Time
	// DCQCN (Mellanox mode); the increase steps are per 25 Gb/s of host link, as both run scripts scale
	// them by bw/25.
	G             float64
	AlphaResume   Time
	RateDecrease  Time
	RPTimer       Time
	FastRecovery  int
	RateAIPer25G  float64
	RateHAIPer25G float64
	MinRate       Rate
	// ECN thresholds per 25 Gb/s of host link (HPCC's run.py scales K with bw); ECNScaled false keeps
	// KMin/KMax as they are.
	KMin, KMax Size
	ECNScaled  bool
	PMax       float64
}

// CNP generation modes (host.cnp).
var CNPModes = []string{"interval", "per-packet"}

// Profiles by name; DefaultProfile when host.profile is empty.
var (
	Profiles = map[string]Profile{
		// fabriclab: the lab's historical defaults. DCQCN as HPCC's run.py, but the notification point
		// paces CNPs at DCQCN's N = 50 us (Zhu et al., SIGCOMM'15), as Mellanox NICs do, where both ns-3
		// simulators answer every marked packet. ECN K and the IRN RTOs are the PortFC paper's (§V-A).
		"fabriclab": {CNP: "interval", CNPInterval: Time(50 * clock.Microsecond), NACKInterval: Time(500 * clock.Microsecond),
			RTOLow: Time(100 * clock.Microsecond), RTOHigh: Time(320 * clock.Microsecond),
			G: 1.0 / 256, AlphaResume: Time(clock.Microsecond), RateDecrease: Time(4 * clock.Microsecond),
			RPTimer: Time(300 * clock.Microsecond), FastRecovery: 1, RateAIPer25G: 5e6, RateHAIPer25G: 50e6, MinRate: Rate(1e9),
			KMin: Bytes(100_000), KMax: Bytes(400_000), PMax: 0.2},
		// hpcc: alibaba-edu/High-Precision-Congestion-Control @9f4be2a, simulation/run.py (cc dcqcn:
		// t_alpha=1, t_dec=4, t_inc=300, g=0.00390625, ai=5*bw/25, hai=50*bw/25, MIN_RATE 1000Mb/s,
		// KMIN_MAP/KMAX_MAP 100/400 KB per 25G of bw, PMAX 0.2), src/point-to-point/model/rdma-hw.cc
		// (ReceiveUdp sets the CNP flag on the ACK of every CE-marked packet, L2_ACK_INTERVAL 1 acks every
		// packet; "NACK Generation Interval" 500 us). HPCC has no IRN: RTOs stay the PortFC paper's.
		"hpcc": {CNP: "per-packet", CNPInterval: Time(50 * clock.Microsecond), NACKInterval: Time(500 * clock.Microsecond),
			RTOLow: Time(100 * clock.Microsecond), RTOHigh: Time(320 * clock.Microsecond),
			G: 0.00390625, AlphaResume: Time(clock.Microsecond), RateDecrease: Time(4 * clock.Microsecond),
			RPTimer: Time(300 * clock.Microsecond), FastRecovery: 1, RateAIPer25G: 5e6, RateHAIPer25G: 50e6, MinRate: Rate(1e9),
			KMin: Bytes(100_000), KMax: Bytes(400_000), ECNScaled: true, PMax: 0.2},
		// conweave: conweave-project/conweave-ns3 @236a801, run.py (ALPHA_RESUME_INTERVAL 1,
		// RATE_DECREASE_INTERVAL 4, RP_TIMER 300, FAST_RECOVERY_TIMES 1, EWMA_GAIN 0.00390625,
		// ai=10*bw/25, hai=25*bw/25, MIN_RATE 100Mb/s, KMIN/KMAX 100/400 KB at every rate, PMAX 0.2),
		// src/point-to-point/model/rdma-hw.cc (CNP flag on the ACK/NACK of every CE-marked packet;
		// NACKGenerationInterval 4 us), scratch/network-load-balance.cc (IrnRtoLow 100 us, IrnRtoHigh
		// 320 us, as the PortFC paper).
		"conweave": {CNP: "per-packet", CNPInterval: Time(50 * clock.Microsecond), NACKInterval: Time(4 * clock.Microsecond),
			RTOLow: Time(100 * clock.Microsecond), RTOHigh: Time(320 * clock.Microsecond),
			G: 0.00390625, AlphaResume: Time(clock.Microsecond), RateDecrease: Time(4 * clock.Microsecond),
			RPTimer: Time(300 * clock.Microsecond), FastRecovery: 1, RateAIPer25G: 10e6, RateHAIPer25G: 25e6, MinRate: Rate(100e6),
			KMin: Bytes(100_000), KMax: Bytes(400_000), PMax: 0.2},
	}
	DefaultProfile = "fabriclab"
	// ProfileNames in the order error messages list them.
	ProfileNames = []string{"fabriclab", "hpcc", "conweave"}
)

// applyProfile fills the zero transport, congestion-control and ECN fields from the host's profile (an
// unknown profile fills the default's; Validate names it).
func (s *Spec) applyProfile() {
	h, sw := &s.Host, &s.Switch
	if h.Profile == "" {
		h.Profile = DefaultProfile
	}
	p, ok := Profiles[h.Profile]
	if !ok {
		p = Profiles[DefaultProfile] // Validate names the bad profile; nothing else should fail with it
	}
	if h.CNP == "" {
		h.CNP = p.CNP
	}
	if h.CNPInterval == 0 {
		h.CNPInterval = p.CNPInterval
	}
	if h.NACKInterval == 0 {
		h.NACKInterval = p.NACKInterval
	}
	if h.RTOHigh == 0 {
		h.RTOHigh = p.RTOHigh
	}
	if h.RTOLow == 0 {
		h.RTOLow = p.RTOLow
		if h.oneTimeout() {
			h.RTOLow = h.RTOHigh
		}
	}
	bw := float64(s.Topology.Link.Rate)
	d := &h.DCQCN
	if d.G == 0 {
		d.G = p.G
	}
	if d.AlphaResume == 0 {
		d.AlphaResume = p.AlphaResume
	}
	if d.RateDecrease == 0 {
		d.RateDecrease = p.RateDecrease
	}
	if d.RPTimer == 0 {
		d.RPTimer = p.RPTimer
	}
	if d.FastRecovery == 0 {
		d.FastRecovery = p.FastRecovery
	}
	if d.RateAI == 0 {
		d.RateAI = Rate(p.RateAIPer25G * bw / 25e9)
	}
	if d.RateHAI == 0 {
		d.RateHAI = Rate(p.RateHAIPer25G * bw / 25e9)
	}
	if d.MinRate == 0 {
		d.MinRate = p.MinRate
	}
	scale := 1.0
	if p.ECNScaled {
		scale = bw / 25e9
	}
	if sw.ECN.KMin.IsZero() {
		sw.ECN.KMin = Bytes(int64(float64(p.KMin.Bytes) * scale))
	}
	if sw.ECN.KMax.IsZero() {
		sw.ECN.KMax = Bytes(int64(float64(p.KMax.Bytes) * scale))
	}
	if sw.ECN.PMax == 0 {
		sw.ECN.PMax = p.PMax
	}
}
