package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/cluster"
	"github.com/fabriclab/fabriclab/harness/kernelhost"
	"github.com/fabriclab/fabriclab/harness/netns"
	_ "github.com/fabriclab/fabriclab/harness/netns/agent" // the backend re-executes this binary as its agents
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/records"
)

var netnsFlags struct {
	pcap    string
	agents  int
	name    string
	cluster string
	// given are the backend-specific flags set on the command line (checkRunFlags), refused for a
	// spec whose backend would ignore them (checkBackendFlags).
	given []string
}

func init() {
	backends["netns"] = runNetns
	backendsWithDependencies["netns"] = true
	for _, c := range root.Commands() {
		if c.Name() == "run" {
			c.Flags().StringVar(&netnsFlags.pcap, "pcap", "", "capture ports to DIR/pcap/<device>-p<port>.pcap: all, or a list like s0:p1,h3:p0 (netns: real start time; virtual: Unix epoch + engine time)")
			c.Flags().IntVar(&netnsFlags.agents, "agents", 0, fmt.Sprintf("netns: agent processes hosting the devices, each a connected part of the fabric (default %d; >= devices: one per device)", netns.DefaultAgents))
			c.Flags().StringVar(&netnsFlags.cluster, "cluster", "", "netns: run over the machines this cluster file names, one agent each (README: Several machines)")
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
	why := ""
	var err error
	if netnsFlags.cluster == "" {
		why, err = netnsDilation(ctx, l)
	} else if l.Spec.AutoDilation() {
		// The calibration measures this machine's agent, not the cluster's (nor does the coordinator
		// need to make namespaces at all).
		err = errors.New("--cluster: give the spec a dilation (the automatic choice calibrates this machine, not the cluster's)")
	}
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
			br := backendResult{End: res.End, Dilation: res.Dilation, DilationWhy: why, Events: res.Monitor.Timers, AllDone: res.AllDone,
				TimedOut: res.TimedOut, Cancelled: res.Cancelled, Fidelity: &fid, Deadlock: res.Deadlock, Split: split, Partial: res.Partial}
			if res.Machines != nil {
				br.Extra = map[string]any{"cluster": res.Machines}
				if len(res.Lost) > 0 {
					br.Extra["lost"] = res.Lost
					// Engine time in paper units, as engine_s: what the records cover.
					br.Extra["measured_until_s"] = res.Agreed.Seconds() / max(res.Dilation, 1)
				}
			}
			return save(log, br)
		}}
	if netnsFlags.cluster != "" {
		c, err := connectCluster(ctx, netnsFlags.cluster, note)
		if err != nil {
			return err
		}
		defer c.Close()
		opts.Machines = c
	}
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

// connectCluster loads a cluster file and connects to its machines (authenticated, clocks measured).
func connectCluster(ctx context.Context, path string, note func(string)) (*cluster.Cluster, error) {
	f, err := cluster.Load(path)
	if err != nil {
		return nil, err
	}
	c, err := cluster.Connect(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("--cluster %s: %w", path, err)
	}
	for _, o := range c.Offsets() {
		note("clock " + o.String())
	}
	return c, nil
}
