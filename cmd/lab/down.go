package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/harness/cluster"
	"github.com/fabriclab/fabriclab/harness/live"
	"github.com/fabriclab/fabriclab/harness/nslink"
)

func init() {
	var all bool
	var clusterFile string
	cmd := &cobra.Command{
		Use:   "down (NAME... | --all)",
		Short: "Remove a lab: exactly the namespaces and links its state file lists",
		Long: "Remove the namespaces (and with them the veths) listed in /run/fabriclab/<lab>/state.json, " +
			"then the state. Nothing that is not in a state file is touched. --all removes every lab " +
			"that has a state file, and every live lab over several machines coordinated from here. A live lab over " +
			"several machines (lab up --cluster) is removed from every machine by its supervisor, with or without " +
			"--cluster. Needs root.",
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if clusterFile != "" {
				return downCluster(cmd.Context(), out, clusterFile, args, all)
			}
			if all {
				if len(args) > 0 {
					return errors.New("--all takes no lab names")
				}
				var errs []error
				clus := live.ClusterLabs() // live labs over machines coordinated from here
				for _, n := range clus {
					errs = append(errs, downClusterLive(out, n))
				}
				names, notes, err := nslink.DownAll()
				for _, n := range notes {
					fmt.Fprintln(out, n)
				}
				for _, n := range names {
					live.Cleanup(n) // after, not before: a lab left alone (busy) keeps its hosts files
					fmt.Fprintf(out, "lab %s down\n", n)
				}
				if len(names) == 0 && len(clus) == 0 && err == nil {
					fmt.Fprintln(out, "no labs")
				}
				return errors.Join(append(errs, err)...)
			}
			if len(args) == 0 {
				return errors.New("name a lab (see `lab status`) or use --all")
			}
			var errs []error
			for _, n := range args {
				if live.IsCluster(n) {
					errs = append(errs, downClusterLive(out, n))
					continue
				}
				notes, err := nslink.DownNotes(n)
				for _, note := range notes {
					fmt.Fprintln(out, note)
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("lab %s: %w", n, err))
					continue
				}
				live.Cleanup(n) // a live lab's hosts files (nothing for a bare one), once it is down
				fmt.Fprintf(out, "lab %s down\n", n)
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "remove every lab that has a state file")
	cmd.Flags().StringVar(&clusterFile, "cluster", "", "remove the named labs' parts on every machine of this cluster file (each agent server removes its own)")
	root.AddCommand(cmd)
}

// downCluster asks every machine of a cluster file to remove the named labs' parts.
func downCluster(ctx context.Context, out io.Writer, path string, names []string, all bool) error {
	if all || len(names) == 0 {
		return errors.New("--cluster: name the labs to remove (--all is this machine's only)")
	}
	f, err := cluster.Load(path)
	if err != nil {
		return err
	}
	var errs []error
	var rest []string
	for _, n := range names {
		if live.IsCluster(n) { // a live lab coordinated from here: its supervisor removes it everywhere
			errs = append(errs, downClusterLive(out, n))
		} else {
			rest = append(rest, n)
		}
	}
	if len(rest) == 0 {
		return errors.Join(errs...)
	}
	errs = append(errs, cluster.DownEverywhere(ctx, f, rest, func(machine, lab string) {
		fmt.Fprintf(out, "lab %s down on %s\n", lab, machine)
	})...)
	return errors.Join(errs...)
}
