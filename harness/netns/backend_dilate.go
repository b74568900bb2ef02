package netns

import (
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/switchsw"
)

// Dilated is a lab's device configs and schedule in dilated units (DESIGN §4, time dilation): every
// rate divided by D, every delay, timer and start time multiplied by D, every byte quantity unchanged,
// so BDPs (rate x delay) and thresholds in BDPs stay what the paper had. The agents run these; records
// come back in dilated time and the report divides by D (report.Meta.Dilation).
type Dilated struct {
	D        float64
	Switches []lab.SwitchDev
	Hosts    []lab.HostDev // NIC-engine hosts, run by agents
	// Kernel are the kernel-tcp hosts (config not dilated: the kernel has its own timers); no agent
	// touches them, the kernel owns their ports.
	Kernel []lab.HostDev
	Flows  []lab.FlowPlan
	End    clock.Time
	// LinkDelay[link index] is the dilated propagation delay the sending agent applies.
	LinkDelay []clock.Time
}

// KernelTCP is the host transport whose hosts are real Linux TCP stacks rather than NIC engines.
const KernelTCP = "kernel-tcp"

// IsKernelHost says whether h runs the kernel's TCP (no agent hosts it).
func IsKernelHost(h lab.HostDev) bool { return h.Config.Transport == KernelTCP }

// Dilate converts l to dilation d (>= 1). Host configs are resolved first (nodes.Config.WithDefaults), so
// default timers and rates are dilated too rather than silently staying at paper values.
func Dilate(l *lab.Lab, d float64) (*Dilated, error) {
	if !(d >= 1) {
		return nil, fmt.Errorf("dilation: %v must be at least 1", d)
	}
	t := func(x clock.Time) clock.Time { return clock.Time(float64(x)*d + 0.5) }
	out := &Dilated{D: d, End: t(l.End)}
	for _, s := range l.Switches {
		c := s.Config
		c.Ports = append([]switchsw.PortConfig(nil), c.Ports...)
		for i := range c.Ports {
			c.Ports[i].RateBps /= d
			c.Ports[i].Delay = t(c.Ports[i].Delay)
		}
		c.FlowControl.Refresh = t(c.FlowControl.Refresh)
		c.FlowletGap = t(c.FlowletGap)
		c.SampleEvery = t(c.SampleEvery)
		out.Switches = append(out.Switches, lab.SwitchDev{Node: s.Node, Config: c})
	}
	for _, h := range l.Hosts {
		if IsKernelHost(h) {
			out.Kernel = append(out.Kernel, h)
			continue
		}
		c, err := h.Config.WithDefaults()
		if err != nil {
			return nil, fmt.Errorf("host %s: %w", l.Graph.Nodes[h.Node].Name, err)
		}
		c.Ports = append([]nodes.PortConfig(nil), c.Ports...)
		for i := range c.Ports {
			c.Ports[i].RateBps /= d
			c.Ports[i].Delay = t(c.Ports[i].Delay)
		}
		c.RTO, c.RTOLow, c.RTOHigh = t(c.RTO), t(c.RTOLow), t(c.RTOHigh)
		c.CNPInterval, c.NackInterval = t(c.CNPInterval), t(c.NackInterval)
		c.Telemetry.Threshold = t(c.Telemetry.Threshold)
		c.SpreadGap = t(c.SpreadGap)
		c.MeasureFrom = t(c.MeasureFrom)
		q := &c.DCQCN
		q.AlphaInterval, q.DecreaseInterval, q.RPTimer = t(q.AlphaInterval), t(q.DecreaseInterval), t(q.RPTimer)
		// Zero AI/HAI steps scale with the (already dilated) port rate; explicit ones are rates.
		q.RateAIBps /= d
		q.RateHAIBps /= d
		q.MinRateBps /= d
		out.Hosts = append(out.Hosts, lab.HostDev{Node: h.Node, Config: c})
	}
	for _, f := range l.Flows {
		f.At = t(f.At)
		f.Ideal = t(f.Ideal)
		// Path bases size per-path caps (bytes: rate/D x time*D, unchanged) and reroute waits.
		tb := func(b nodes.PathBase) nodes.PathBase {
			return nodes.PathBase{OneWay: t(b.OneWay), RTT: t(b.RTT), RateBps: b.RateBps / d}
		}
		f.Base, f.ThenBase = tb(f.Base), tb(f.ThenBase)
		if f.PathBases != nil {
			pb := make([]nodes.PathBase, len(f.PathBases))
			for i, b := range f.PathBases {
				pb[i] = tb(b)
			}
			f.PathBases = pb
		}
		out.Flows = append(out.Flows, f)
	}
	for _, lk := range l.Graph.Links {
		out.LinkDelay = append(out.LinkDelay, t(lk.Delay))
	}
	return out, nil
}
