package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/kernelhost"
	"github.com/fabriclab/fabriclab/harness/live"
	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/records"
)

// onLab is `lab run --lab LAB`: the spec's workload runs on a live lab that is already up, as kernel
// TCP flows between its hosts, while the user watches it with inspect, captures it or fails links.
var onLab string

func init() {
	for _, c := range root.Commands() {
		if c.Name() == "run" {
			c.Flags().StringVar(&onLab, "lab", "", "run the spec's workload on this live lab (`lab up`; same topology) as kernel TCP flows, at the lab's dilation")
		}
	}
	// Whatever the spec's backend, --lab runs on the live lab.
	for name, run := range backends {
		backends[name] = func(ctx context.Context, l *lab.Lab, dir string, save func(*records.Log, backendResult) error) error {
			if onLab != "" {
				return runOnLab(ctx, onLab, l, save)
			}
			return run(ctx, l, dir, save)
		}
	}
}

func runOnLab(ctx context.Context, name string, l *lab.Lab, save func(*records.Log, backendResult) error) error {
	if live.IsCluster(name) {
		return fmt.Errorf("--lab %s: a lab over several machines: a spec's kernel TCP flows are opened by this process, "+
			"whose sockets cannot reach another machine's namespaces; drive it with lab exec (lab flow, or your own programs)", name)
	}
	nl, err := nslink.Open(name)
	if err != nil {
		return err
	}
	rep, err := live.Do(name, live.Request{Op: "inspect"})
	if err != nil {
		return err
	}
	// Same topology: the same devices (names are the graph's) with the same ports.
	have := map[string]int{}
	for _, d := range rep.Inspect.Devices {
		have[d.Name] = len(d.Ports)
	}
	var diff []string
	for _, n := range l.Graph.Nodes {
		_, inNS := nsHas(nl, n.Name)
		if p, ok := have[n.Name]; !inNS || n.Kind == topo.Switch && (!ok || p != len(n.Ports)) {
			diff = append(diff, n.Name)
		}
	}
	if len(diff) > 0 || len(nl.Devices()) != len(l.Graph.Nodes) {
		sort.Strings(diff)
		return fmt.Errorf("--lab %s: the spec's topology (%s, %d devices) is not the lab's (%d devices; differing: %s)",
			name, l.Graph.Family, len(l.Graph.Nodes), len(nl.Devices()), strings.Join(diff, " "))
	}
	d := rep.Inspect.Dilation
	var flows []kernelhost.Flow
	for _, f := range l.Flows {
		if len(f.After) > 0 {
			return fmt.Errorf("--lab: flow %d starts after others complete; kernel hosts run fixed start times only", f.ID)
		}
		flows = append(flows, kernelhost.Flow{ID: f.ID, Src: f.Src, Dst: f.Dst, Size: f.Size,
			At: clock.Time(float64(f.At) * d).Duration(), Ideal: clock.Time(float64(f.Ideal) * d), Class: f.Class})
	}
	if len(flows) == 0 {
		return errors.New("--lab: the spec's workload has no flows")
	}
	if len(l.Faults) > 0 {
		return errors.New("--lab: the spec's faults: are not scheduled on a live lab; fail links by hand with `lab link` while it runs")
	}
	cc := l.Spec.Host.CC
	if l.Spec.Host.Transport != "kernel-tcp" {
		cc = "" // a NIC's congestion control (dcqcn, hpcc, ...) is not the kernel's
		fmt.Fprintf(os.Stderr, "lab run --lab %s: hosts are the lab's kernel TCP stacks (the spec's host.transport %s does not apply)\n", name, l.Spec.Host.Transport)
	}
	r, err := kernelhost.Run(ctx, nl, flows, kernelhost.Options{CC: cc, Port: onLabPort,
		Timeout: clock.Time(float64(l.End)*d).Duration() + 30e9})
	if r == nil {
		return err
	}
	log := &records.Log{Flows: r.Flows}
	res := backendResult{Dilation: d, AllDone: true, Cancelled: ctx.Err() != nil}
	for _, f := range r.Flows {
		res.AllDone = res.AllDone && f.Completed
		res.End = max(res.End, f.Finish)
	}
	if serr := save(log, res); serr != nil {
		return serr
	}
	return err
}

// onLabPort is the receivers' port: not iperf3's 5201, which a user of the live lab may be serving.
const onLabPort = 5399

func nsHas(nl *nslink.Lab, dev string) (string, bool) {
	for _, d := range nl.Devices() {
		if d == dev {
			return d, true
		}
	}
	return "", false
}
