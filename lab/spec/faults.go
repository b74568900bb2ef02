package spec

// Fault changes a cable at a time of the run, on both backends: state down (every frame on it is
// lost, both ways), up (repaired, impairments cleared) or set (Loss, a fraction of frames dropped where
// they are sent onto it, and Delay added to its propagation delay). Routing tables are recomputed
// without the cables that are down (lab.FaultPlan).
type Fault struct {
	At    Time     `yaml:"at"`
	Link  []string `yaml:"link"` // the two devices the cable joins, e.g. [s0, s1]
	State string   `yaml:"state"`
	Loss  float64  `yaml:"loss,omitempty"`
	Delay Time     `yaml:"delay,omitempty"`
}
