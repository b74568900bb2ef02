package records

import "github.com/fabriclab/fabriclab/clock"

// FaultEvent is a cable fault applied during a run: when (engine time), which cable (a-b), its new state
// (down, up, or the impairment), and how many switches got a recomputed table.
type FaultEvent struct {
	At       clock.Time `json:"at"`
	Link     string     `json:"link"`
	State    string     `json:"state"`
	Reroutes int        `json:"reroutes"`
}
