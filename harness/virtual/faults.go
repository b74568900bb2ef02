package virtual

import (
	"fmt"

	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
)

// scheduleFaults applies the lab's planned cable faults (lab.FaultPlan) at their times: switches
// impair their own egress (switchsw.SetFault), a NIC's port gets an egress.FaultLink in front of its
// link, and the switches whose tables the plan recomputed get them.
func (f *Fabric) scheduleFaults() {
	nicFaults := map[topo.End]*egress.FaultLink{}
	for _, p := range f.Lab.Faults {
		f.Clock.AfterFunc(p.At, func() {
			for i, e := range f.Lab.FaultEnds(p) {
				if sw := f.Switches[e.Node]; sw != nil {
					sw.SetFault(e.Port, p.Fault)
					continue
				}
				nic := f.NICs[e.Node]
				if nic == nil {
					continue
				}
				if p.Fault.None() {
					if nicFaults[e] != nil {
						nic.SetLink(e.Port, f.links[e])
						delete(nicFaults, e)
					}
					continue
				}
				if fl := nicFaults[e]; fl != nil {
					fl.Fault = p.Fault
					continue
				}
				dev := int32(e.Node)
				port := int16(e.Port)
				// The NIC's own clock and log: with parts, its part's (drops happen in its events).
				clk, log := f.clockOf(e.Node), f.logOf(e.Node)
				fl := egress.NewFaultLink(f.links[e], clk, p.Fault, uint64(p.Link)<<1|uint64(i), func(pk *pkt.Packet, reason string) {
					log.Drops = append(log.Drops, records.Drop{At: clk.Now(), Device: dev, Port: port, Queue: pk.Queue, Flow: pk.Flow, Reason: reason})
				})
				nicFaults[e] = fl
				nic.SetLink(e.Port, fl)
			}
			for node, table := range p.FIB {
				if sw := f.Switches[node]; sw != nil {
					// The lab computed the table for this switch's ports, so a refusal is a lab bug.
					if err := sw.SetFIB(table); err != nil {
						f.Log.Violations = append(f.Log.Violations, fmt.Sprintf("fault %s: %v", p.Name, err))
					}
				}
			}
			f.Log.Faults = append(f.Log.Faults, records.FaultEvent{At: f.Clock.Now(), Link: p.Name, State: p.Fault.String(), Reroutes: len(p.FIB)})
		})
	}
}
