package main

import (
	"context"
	"fmt"
	"os"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/kernelhost"
	"github.com/fabriclab/fabriclab/harness/netns"
	_ "github.com/fabriclab/fabriclab/harness/netns/agent" // the backend re-executes this binary as its agents
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/records"
)

var netnsFlags struct {
	pcap   string
	agents int
	name   string
}

func init() {
	backends["netns"] = runNetns
	backendsWithDependencies["netns"] = true
	for _, c := range root.Commands() {
		if c.Name() == "run" {
			c.Flags().StringVar(&netnsFlags.pcap, "pcap", "", "capture ports to DIR/pcap/<device>-p<port>.pcap: all, or a list like s0:p1,h3:p0 (netns: real start time; virtual: Unix epoch + engine time)")
			c.Flags().IntVar(&netnsFlags.agents, "agents", 0, fmt.Sprintf("netns: agent processes hosting the devices, each a connected part of the fabric (default %d; >= devices: one per device)", netns.DefaultAgents))
			c.Flags().StringVar(&netnsFlags.name, "name", "", "netns: the lab's name (namespaces fl-<name>-<device>; default r<pid>-<n>)")
		}
	}
}

func runNetns(ctx context.Context, l *lab.Lab, dir string, save func(*records.Log, backendResult) error) error {
	bar := newRunProgress(!showProgress, l.End)
	note := func(s string) {
		if showProgress && bar == nil { // no bar (not a terminal): one line per phase instead
			fmt.Fprintln(os.Stderr, "netns:", s)
		}
	}
	why, err := netnsDilation(ctx, l)
	if err != nil {
		return err
	}
	opts := netns.RunOptions{Pcap: netnsFlags.pcap, Agents: netnsFlags.agents, Name: netnsFlags.name,
		Progress: note, Kernel: kernelhost.ForNetns(l),
		OnClock: func(now clock.Time, completed, total int) { bar.update(now, completed, total) },
		Save: func(log *records.Log, res netns.RunResult) error {
			bar.finish()
			fid := res.Fidelity
			var split *netns.CutReport
			if res.Agents > 1 {
				split = &res.Cut
			}
			return save(log, backendResult{End: res.End, Dilation: res.Dilation, DilationWhy: why, Events: res.Monitor.Timers, AllDone: res.AllDone,
				TimedOut: res.TimedOut, Cancelled: res.Cancelled, Fidelity: &fid, Deadlock: res.Deadlock, Split: split})
		}}
	if opts.Pcap != "" {
		opts.PcapDir = dir + "/pcap"
		if err := os.MkdirAll(opts.PcapDir, 0o755); err != nil {
			return err
		}
	}
	_, _, err = netns.Run(ctx, l, opts)
	return err
}

// netnsDilation settles the run's dilation before anything is made: a spec without one gets the
// smallest D this machine keeps pace at (printed with why, and returned for run.json); an explicit one
// that cannot keep up is warned about. Both measure this machine's agent first if no calibration is
// cached (about a second, once a week). Kernel-host labs keep their own rule (they need real time).
func netnsDilation(ctx context.Context, l *lab.Lab) (string, error) {
	say := func(s string) {
		if showProgress {
			fmt.Fprintln(os.Stderr, "netns:", s)
		}
	}
	agents := max(netnsFlags.agents, netns.DefaultAgents)
	name := netnsFlags.name
	if name == "" {
		name = fmt.Sprintf("r%d", os.Getpid())
	}
	if !l.Spec.AutoDilation() {
		warn, err := netns.ExplicitDilationWarning(ctx, l, agents, name, say)
		if err != nil {
			return "", err
		}
		if warn != "" {
			fmt.Fprintln(os.Stderr, "netns: warning:", warn)
		}
		return "", nil
	}
	c, err := netns.AutoDilation(ctx, l, agents, name, say)
	if err != nil {
		return "", err
	}
	l.Spec.Dilation = c.D
	say(c.Why)
	return c.Why, nil
}
