package netns

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/switchsw"
)

// Preflight refuses, before any namespace is made, a lab the agents would refuse once it is up: it
// builds every engine from its dilated config on a throwaway clock (the same constructors the agents
// call, so nothing the agents check is missed) and names the spec field behind each refusal. It also
// refuses what kernel-tcp hosts cannot do: flows that wait for others, flows relayed through a host, and
// lossless flow control.
func Preflight(l *lab.Lab) error {
	d := l.Spec.EffectiveDilation()
	dl, err := Dilate(l, d)
	if err != nil {
		return err
	}
	g := l.Graph
	if err := kernelPreflight(l, dl); err != nil {
		return err
	}
	// The same field usually fails on every device alike: one message each, naming the devices.
	var msgs []string
	devs := map[string][]string{}
	note := func(dev string, err error) {
		m := fieldError(err)
		if devs[m] == nil {
			msgs = append(msgs, m)
		}
		devs[m] = append(devs[m], dev)
	}
	for _, s := range dl.Switches {
		if _, err := switchsw.New(s.Config, clock.NewVirtual(), nil, nil); err != nil {
			note(g.Nodes[s.Node].Name, err)
		}
	}
	for _, h := range dl.Hosts {
		if _, err := nodes.New(h.Config, clock.NewVirtual(), nil, nil); err != nil {
			note(g.Nodes[h.Node].Name, err)
		}
	}
	var errs []error
	for _, m := range msgs {
		ds := devs[m]
		if len(ds) > 4 {
			ds = append(ds[:4], fmt.Sprintf("and %d more", len(ds)-4))
		}
		errs = append(errs, fmt.Errorf("%s (devices %s; refused before any namespace was made)", m, strings.Join(ds, ", ")))
	}
	return errors.Join(errs...)
}

// specFields maps what an engine's config error mentions to the spec fields that set it, most specific
// first.
var specFields = []struct{ engine, spec string }{
	{"portfc", "switch.flow_control (portfc), switch.xoff, switch.xon"},
	{"flow_control.refresh", "switch.flow_control (its refresh period against the pause time)"},
	{"flow_control.pfcstar", "switch.priorities"},
	{"flow_control.xo", "switch.xoff, switch.xon"},
	{"flow_control", "switch.flow_control"},
	{"shared space", "switch.buffer, switch.headroom, switch.reserve"},
	{"headroom", "switch.headroom"},
	{"xon", "switch.xon, switch.xoff"},
	{"buffer", "switch.buffer"},
	{"ecn", "switch.ecn"},
	{"data_queues", "switch.priorities"},
	{"prios", "switch.priorities"},
	{"lossless", "switch.priorities"},
	{"config.mtu", "host.mtu"},
	{"config.dcqcn", "host.dcqcn"},
	{"config.cnp", "host.cnp, host.cnp_interval"},
	{"config.transport", "host.transport"},
	{"config.cc", "host.cc"},
	{"bdp_cap", "host.bdp_cap"},
	{"rate", "topology.link.rate (or a host/HBD rate), divided by the dilation"},
	{"delay", "topology.link.delay"},
}

// fieldError names the spec fields behind an engine's refusal; the engine's message follows with the
// device number cut (the caller names the devices).
func fieldError(err error) string {
	msg := engineDevice.ReplaceAllString(err.Error(), "")
	for _, f := range specFields {
		if strings.Contains(msg, f.engine) {
			return f.spec + ": " + msg
		}
	}
	return msg
}

var engineDevice = regexp.MustCompile(`^switch \d+: `)

// kernelPreflight refuses what kernel-tcp hosts cannot run faithfully.
func kernelPreflight(l *lab.Lab, dl *Dilated) error {
	if len(dl.Kernel) == 0 {
		return nil
	}
	g := l.Graph
	if fc := l.Spec.Switch.FlowControl; fc != "" && fc != "lossy" {
		// A kernel host neither obeys PFC pauses nor sends them (its veth end is the kernel's, not an
		// agent's): its frames would take lossy drops in queues the spec calls lossless.
		return fmt.Errorf("switch.flow_control: %s with host.transport kernel-tcp: the kernel's hosts do not obey or send PFC/PortFC pauses, so their traffic would not be lossless; use flow_control: lossy (the kernel's TCP recovers its losses) or NIC-engine hosts (lossless, gbn, irn)", fc)
	}
	kernel := map[int]bool{}
	for _, h := range dl.Kernel {
		kernel[h.Node] = true
	}
	for _, f := range l.Flows {
		if len(f.After) > 0 {
			// The kernel hosts run their flows from a fixed schedule (kernelhost) and report completions
			// only at the end: a dependency through them could not be kept.
			return fmt.Errorf("workload %q: flows that start when others complete (ps, moe, htsim triggers) need NIC-engine hosts; host.transport kernel-tcp cannot run them", f.Class)
		}
		if len(f.Path.Nodes) < 2 {
			continue
		}
		ends := kernel[f.Path.Nodes[0]] || kernel[f.Path.Nodes[len(f.Path.Nodes)-1]]
		for _, n := range f.Path.Nodes[1:max(len(f.Path.Nodes)-1, 1)] {
			if g.Nodes[n].Kind == topo.Host && (ends || kernel[n]) {
				return fmt.Errorf("host.transport: kernel-tcp flow %d (%s -> %s) is routed through host %s (a server-centric fabric relays through hosts), and a kernel host does not forward the lab's frames: use a switch-centric topology (fat-tree, dragonfly, ...) or NIC-engine hosts",
					f.ID, g.Nodes[f.Path.Nodes[0]].Name, g.Nodes[f.Path.Nodes[len(f.Path.Nodes)-1]].Name, g.Nodes[n].Name)
			}
		}
	}
	return nil
}
