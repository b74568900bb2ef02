package netns

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/switchsw"
)

// Dilated is a lab's device configs and schedule in dilated units (docs/architecture.md §Time dilation):
// every rate divided by D, every delay, timer and start time multiplied by D, every byte quantity unchanged,
// so BDPs (rate x delay) and thresholds in BDPs stay what the paper had. The agents run these; records come
// back in dilated time and the report divides by D (report.Meta.Dilation).
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
	// EngineD, when D is a whole number, is D again: the agents run the engines on the paper's configs
	// and flows (Paper) and on their clock seen D times slower (clock.Dilated), so that an engine
	// computes the very numbers the virtual backend computes (a serialization time rounded to the
	// picosecond at 100 Mb/s is not a thousand times the one rounded at 100 Gb/s, and DCQCN's rates
	// divided by D do not multiply back exactly: fat-tree k=4 WebSearch 0.5 at D=1000 had 141 of 179
	// flows apart from the virtual run). Records still come back in dilated time. 0: the agents run
	// the dilated configs above (a fractional D, and live labs, whose streams are in agent time).
	EngineD int64
	// Paper holds the undilated configs and NIC flows by node and flow id, for EngineD.
	Paper *PaperUnits
}

// PaperUnits are a lab's engine configs and NIC flows as the virtual backend runs them.
type PaperUnits struct {
	Switches map[int]switchsw.Config
	Hosts    map[int]nodes.Config
	Flows    map[uint32]nodes.Flow
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
	if e := int64(d); float64(e) == d {
		out.EngineD = e
		out.Paper = &PaperUnits{Switches: map[int]switchsw.Config{}, Hosts: map[int]nodes.Config{}, Flows: map[uint32]nodes.Flow{}}
		for _, f := range l.Flows {
			out.Paper.Flows[f.ID] = f.NICFlow()
		}
	}
	for _, s := range l.Switches {
		if out.Paper != nil {
			out.Paper.Switches[s.Node] = s.Config
		}
		c, err := dilateConfig(s.Config, d)
		if err != nil {
			return nil, fmt.Errorf("switch %s: %w", l.Graph.Nodes[s.Node].Name, err)
		}
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
		if out.Paper != nil {
			out.Paper.Hosts[h.Node] = c
		}
		// Zero DCQCN AI/HAI steps scale with the (dilated) port rate; explicit ones are rates and dilate.
		if c, err = dilateConfig(c, d); err != nil {
			return nil, fmt.Errorf("host %s: %w", l.Graph.Nodes[h.Node].Name, err)
		}
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

// dilateConfig returns a deep copy of an engine config (through its JSON form, which is also how it
// reaches the agent) with every time multiplied by d and every rate divided by d: a field of type
// clock.Time is a time, a float64 field whose name ends in Bps a rate (TestDilateWalksEveryField holds
// every engine config field to one of these, or to a list of dimensionless ones). Walking the type
// rather than listing fields means a timer or rate added to an engine later is dilated too; the list it
// replaced had missed UGAL's threshold (-16.5% FCT on a run marked faithful), ATE's interval and
// the multipath spread gap.
func dilateConfig[T any](c T, d float64) (T, error) {
	var out T
	b, err := json.Marshal(c)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, err
	}
	scaleTimesRates(reflect.ValueOf(&out).Elem(), d)
	return out, nil
}

var timeType = reflect.TypeOf(clock.Time(0))

func scaleTimesRates(v reflect.Value, d float64) {
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if !f.CanSet() {
				continue
			}
			switch {
			case f.Type() == timeType:
				f.SetInt(int64(float64(f.Int())*d + 0.5))
			case f.Kind() == reflect.Float64 && strings.HasSuffix(t.Field(i).Name, "Bps"):
				f.SetFloat(f.Float() / d)
			default:
				scaleTimesRates(f, d)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			scaleTimesRates(v.Index(i), d)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			scaleTimesRates(v.Elem(), d)
		}
	case reflect.Map:
		// Engine configs hold no times or rates in maps (TestDilateWalksEveryField checks).
	}
}
