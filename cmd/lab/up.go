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

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// loadSpecGraph turns an experiment spec file into its topology and lab name. The spec package wires
// it in (an init in its own file in this command); until then `lab up SPEC.yaml` says it is not
// supported instead of guessing.
var loadSpecGraph func(path string) (*topo.Graph, string, error)

func init() {
	var name string
	var mtu, txqlen int
	var keepOffloads, quiet, bare bool
	var dilation float64
	var clusterFile string
	cmd := &cobra.Command{
		Use:   "up (FAMILY [key=value ...] | SPEC.yaml)",
		Short: "Bring a lab up live: Go switches forwarding between kernel hosts (--bare: namespaces only)",
		Long: liveUpHelp + "\n\nWith --bare: create one network namespace per device (fl-<lab>-<device>) and one veth pair per link " +
			"(interface p<i> is port i of the device). Everything made is recorded in " +
			"/run/fabriclab/<lab>/state.json first, so `lab down <lab>` removes exactly that, even after a crash. " +
			"Ctrl-C during bring-up removes what was made. Needs root.\n\nFamilies and keys:\n" + familyHelp(),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !bare {
				return liveUp(cmd, args, liveUpOpts{name: name, dilation: dilation, mtu: mtu, quiet: quiet, cluster: clusterFile})
			}
			if clusterFile != "" {
				return usage(errors.New("--bare: not with --cluster (a lab over several machines is a live lab)"))
			}
			var g *topo.Graph
			labName := name
			if strings.HasSuffix(args[0], ".yaml") || strings.HasSuffix(args[0], ".yml") {
				if loadSpecGraph == nil {
					return errors.New("spec files not yet supported by `lab up`; use FAMILY key=value")
				}
				if len(args) > 1 {
					return errors.New("`lab up SPEC.yaml` takes no key=value arguments")
				}
				sg, specName, err := loadSpecGraph(args[0])
				if err != nil {
					return err
				}
				g = sg
				if labName == "" {
					labName = specName
				}
			} else {
				params, err := topo.ParseParams(args[1:])
				if err != nil {
					return err
				}
				if g, err = buildTopo(args[0], params); err != nil {
					return err
				}
				if labName == "" {
					labName = args[0]
				}
			}
			if err := nslink.ValidateName(labName); err != nil {
				return fmt.Errorf("%w (choose one with --name)", err)
			}
			// Ctrl-C or SIGTERM cancels the bring-up; Up then removes what it made before returning.
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			errw := cmd.ErrOrStderr()
			opts := nslink.Options{MTU: mtu, TxQueueLen: txqlen, KeepOffloads: keepOffloads, Outlives: true}
			if !quiet {
				opts.Progress = func(phase string, done, total int, d time.Duration) {
					fmt.Fprintf(errw, "lab up %s: %-10s %4d/%-4d %v\n", labName, phase, done, total, d.Round(time.Millisecond))
				}
			}
			t0 := time.Now()
			lab, err := nslink.Up(ctx, labName, g, opts)
			if err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("interrupted; removed what was made: %w", err)
				}
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lab %s up: %d namespaces, %d links, mtu %d, in %v\n",
				lab.Name, len(g.Nodes), len(g.Links), lab.MTU, time.Since(t0).Round(time.Millisecond))
			fmt.Fprintf(cmd.OutOrStdout(), "  e.g. ip netns exec %s ip link; remove with: lab down %s\n",
				lab.NSName(g.Nodes[0].Name), lab.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "lab name (1-16 of a-z, 0-9, '-'); default: the family or spec name")
	cmd.Flags().IntVar(&mtu, "mtu", nslink.DefaultMTU, "MTU of every veth (jumbo up to 65535)")
	cmd.Flags().IntVar(&txqlen, "txqueuelen", nslink.DefaultTxQueueLen, "txqueuelen of every veth")
	cmd.Flags().BoolVar(&keepOffloads, "keep-offloads", false, "leave checksum/TSO/GSO offloads on (for PACKET_VNET_HDR agents)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress lines")
	cmd.Flags().BoolVar(&bare, "bare", false, "namespaces and veths only: no switches run, hosts have no addresses")
	cmd.Flags().StringVar(&clusterFile, "cluster", "", "bring the live lab up over the machines of this cluster file (each runs `lab agent serve`; this machine coordinates and makes nothing)")
	cmd.Flags().Float64Var(&dilation, "dilation", 0, "live FAMILY labs: time dilation (default 1000: 100 Gb/s links run at 100 Mb/s); a spec gives its own")
	root.AddCommand(cmd)
}
