package kernelhost

import (
	"context"
	"fmt"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/records"
)

// ForNetns is the netns backend's runner for the kernel-tcp hosts of l (netns.RunOptions.Kernel): the
// agents run the switches, the kernel owns the hosts' ports, and the flows' records join the agents'.
func ForNetns(l *lab.Lab) *NetnsHosts { return &NetnsHosts{l: l} }

// NetnsHosts runs a lab's kernel-tcp hosts for the netns backend (ForNetns).
type NetnsHosts struct {
	l *lab.Lab
	// Stats is what the senders' kernels said about each flow (TCP_INFO), once Run has returned: the
	// records carry retransmissions, and CE echoes exist only here.
	Stats []Stat
}

func (b *NetnsHosts) Setup(nl *nslink.Lab, hosts []lab.HostDev) error {
	g := b.l.Graph
	var hs []Host
	for _, h := range hosts {
		hs = append(hs, Host{Device: g.Nodes[h.Node].Name, Index: g.Nodes[h.Node].Index})
	}
	s := b.l.Spec
	return Setup(nl, hs, Config{CC: s.Host.CC, ECN: s.Switch.ECN.ECNEnabled()})
}

func (b *NetnsHosts) Run(ctx context.Context, nl *nslink.Lab, plans []lab.FlowPlan, start int64, offset clock.Time) ([]records.Flow, error) {
	var flows []Flow
	var last clock.Time
	for _, f := range plans {
		if len(f.After) > 0 {
			return nil, fmt.Errorf("flow %d: kernel hosts cannot start a flow after others (traffic.Flow.After); use fixed start times", f.ID)
		}
		flows = append(flows, Flow{ID: f.ID, Src: f.Src, Dst: f.Dst, Size: f.Size,
			At: f.At.Duration(), Ideal: f.Ideal, Class: f.Class})
		last = max(last, f.At)
	}
	if len(flows) == 0 {
		return nil, nil
	}
	d := b.l.Spec.EffectiveDilation()
	r, err := Run(ctx, nl, flows, Options{CC: b.l.Spec.Host.CC, Epoch: start,
		Timeout: clock.Time(float64(b.l.End)*d).Duration() + 30e9})
	if r == nil {
		return nil, err
	}
	b.Stats = r.Stats
	for i := range r.Flows {
		r.Flows[i].Start += offset
		if r.Flows[i].Completed {
			r.Flows[i].Finish += offset
		}
	}
	return r.Flows, err
}
