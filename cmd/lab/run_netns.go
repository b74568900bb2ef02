package main

import (
	"context"
	"fmt"
	"os"

	"github.com/fabriclab/fabriclab/harness/kernelhost"
	"github.com/fabriclab/fabriclab/harness/netns"
	_ "github.com/fabriclab/fabriclab/harness/netns/agent" // the backend re-executes this binary as its agents
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/records"
)

var netnsFlags struct {
	pcap   string
	agents int
}

func init() {
	backends["netns"] = runNetns
	for _, c := range root.Commands() {
		if c.Name() == "run" {
			c.Flags().StringVar(&netnsFlags.pcap, "pcap", "", "netns: capture ports to DIR/pcap/<device>-p<port>.pcap: all, or a list like s0:p1,h3:p0")
			c.Flags().IntVar(&netnsFlags.agents, "agents", 0, fmt.Sprintf("netns: agent processes hosting the devices (default %d; >= devices: one per device)", netns.DefaultAgents))
		}
	}
}

func runNetns(ctx context.Context, l *lab.Lab, out string) (*records.Log, backendResult, error) {
	opts := netns.RunOptions{Pcap: netnsFlags.pcap, Agents: netnsFlags.agents,
		Progress: func(s string) { fmt.Fprintln(os.Stderr, "netns:", s) }, Kernel: kernelhost.ForNetns(l)}
	if opts.Pcap != "" {
		opts.PcapDir = out + "/pcap"
		if err := os.MkdirAll(opts.PcapDir, 0o755); err != nil {
			return nil, backendResult{}, err
		}
	}
	log, res, err := netns.Run(ctx, l, opts)
	if err != nil {
		return nil, backendResult{}, err
	}
	fid := res.Fidelity
	return log, backendResult{End: res.End, Dilation: res.Dilation, Events: res.Monitor.Timers, AllDone: res.AllDone,
		TimedOut: res.TimedOut, Cancelled: res.Cancelled, Fidelity: &fid, Deadlock: res.Deadlock}, nil
}
