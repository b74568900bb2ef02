package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/fabriclab/fabriclab/harness/live"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/units"
	"github.com/spf13/cobra"
)

const liveUpHelp = "Bring a lab up live, as Mininet or containerlab do: one network namespace per device, one veth " +
	"pair per link, the lab's Go switches forwarding in real time at the spec's dilation (FAMILY labs: --dilation, " +
	"default 1000), and kernel-stack hosts addressed from 198.18.0.0/15 with every neighbour resolved and every " +
	"host name in /etc/netns/<namespace>/hosts. Then: `lab exec LAB h0 -- ping -c3 h5`, `lab exec LAB h1` " +
	"(a shell), `lab inspect LAB`, `lab watch LAB`, `lab link LAB s0 s1 down`, `lab capture LAB s0:p1`, and " +
	"`lab down LAB`. The switches run in an agent process under a supervisor that outlives this command. With " +
	"--cluster FILE the lab spreads over the machines of a cluster file (each running `lab agent serve`), and the " +
	"supervisor stays here holding their connections (docs/cluster.md). Needs root."

// liveUpOpts are lab up's flags for a live lab.
type liveUpOpts struct {
	name     string
	dilation float64
	mtu      int
	quiet    bool
	cluster  string
}

func liveUp(cmd *cobra.Command, args []string, o liveUpOpts) error {
	name, dilation, quiet := o.name, o.dilation, o.quiet
	if cmd.Flags().Changed("name") && name == "" {
		// Left out, the family or spec names the lab; an empty one given would do the same, unsaid.
		return usage(errors.New(`--name "": give the lab a name (1-16 of a-z, 0-9, '-'), or leave the flag out for the family's or spec's`))
	}
	cfg := live.Config{Name: name, Dilation: dilation, Cluster: o.cluster}
	if cmd.Flags().Changed("mtu") {
		cfg.MTU = o.mtu
	}
	if strings.HasSuffix(args[0], ".yaml") || strings.HasSuffix(args[0], ".yml") {
		if len(args) > 1 {
			return fmt.Errorf("`lab up SPEC.yaml` takes no key=value arguments")
		}
		if dilation != 0 {
			return fmt.Errorf("--dilation: a spec gives its own (dilation:)")
		}
		cfg.SpecPath = args[0]
	} else {
		params, err := topo.ParseParams(args[1:])
		if err != nil {
			return err
		}
		if _, err := buildTopo(args[0], params); err != nil {
			return err
		}
		cfg.Family, cfg.Params = args[0], params
		if cfg.Name == "" {
			cfg.Name = args[0]
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errw, out := cmd.ErrOrStderr(), cmd.OutOrStdout()
	t0 := time.Now()
	progress := func(s string) {
		if !quiet {
			fmt.Fprintf(errw, "lab up: %s (%v)\n", s, time.Since(t0).Round(time.Millisecond))
		}
	}
	info, err := live.Up(ctx, cfg, progress)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted; removed what was made: %w", err)
		}
		return err
	}
	l := info.Lab
	g := l.Graph
	fmt.Fprintf(out, "lab %s up live: %d switches, %d kernel hosts, %d links, mtu %d, in %v\n",
		info.Name, len(g.Switches), len(g.Hosts), len(g.Links), info.MTU, time.Since(t0).Round(time.Millisecond))
	if cfg.Cluster != "" {
		printUpMachines(out, info.Name)
	}
	// The limits: what the links really run at, and the frame rate the agent must keep up with.
	var lo, hi float64
	for i, lk := range g.Links {
		if i == 0 || lk.RateBps < lo {
			lo = lk.RateBps
		}
		hi = max(hi, lk.RateBps)
	}
	d := info.Dilation
	fps := hi / d / 8 / float64(info.MTU+14)
	fmt.Fprintf(out, "  dilation %g: links of %s run at %s, delays x%g; a busy link is %.0f full frames/s each way,\n",
		d, rateRange(lo, hi), rateRange(lo/d, hi/d), d, fps)
	fmt.Fprintf(out, "  and one agent forwards a few tens of thousands per second in all on 2 cores: more and it falls behind (raise the dilation)\n")
	if fps > 50000 {
		fmt.Fprintf(out, "  WARNING: at this dilation a busy link alone needs %.0f frames/s: expect the switches to fall behind under load\n", fps)
	}
	for _, n := range info.Notes {
		fmt.Fprintf(out, "  note: %s\n", n)
	}
	h0, h1 := g.Nodes[g.Hosts[0]].Name, g.Nodes[g.Hosts[len(g.Hosts)-1]].Name
	fmt.Fprintf(out, "  try: lab exec %s %s -- ping -c3 %s    lab inspect %s    lab down %s\n", info.Name, h0, h1, info.Name, info.Name)
	return nil
}

func rateRange(lo, hi float64) string {
	if lo == hi {
		return units.FormatRate(lo)
	}
	return units.FormatRate(lo) + ".." + units.FormatRate(hi)
}
