package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/harness/live"
	"github.com/fabriclab/fabriclab/harness/nslink"
)

func init() {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List labs (those with a state file) and whether their namespaces and links exist, and live labs over several machines coordinated from here",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sts, errs := nslink.Status()
			// A bad state file is reported (the command's error, after the table) and skipped: the other
			// labs are still listed.
			err := errors.Join(errs...)
			if len(sts) == 0 && err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if eerr := enc.Encode(sts); eerr != nil {
					return eerr
				}
				return err
			}
			clus := live.ClusterLabs()
			if len(sts) == 0 && len(clus) == 0 {
				fmt.Fprintln(out, "no labs")
				return err
			}
			defer printClusterLabs(out, clus)
			if len(sts) == 0 {
				return err
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "LAB\tFAMILY\tSTATE\tNAMESPACES\tLINKS\tPROCESSES")
			for _, s := range sts {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d/%d\t%s\n", s.Lab, s.Family, labState(s),
					s.NamespacesPresent, s.Namespaces, s.LinksPresent, s.Links, labProcesses(s))
			}
			if ferr := tw.Flush(); ferr != nil {
				return ferr
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	root.AddCommand(cmd)
}

// labState is a lab's state in words. A live lab (lab up, not --bare) is up only while its supervisor
// runs: the process that brought it up has exited by design, so its PID says nothing.
func labState(s nslink.LabStatus) string {
	_, err := os.Stat(live.LocalSocketPath(s.Lab))
	isLive := err == nil
	switch {
	case !s.Complete && s.PIDAlive:
		return "coming up"
	case !s.Complete:
		return "incomplete (crashed bring-up: lab down " + s.Lab + ")"
	case s.NamespacesPresent < s.Namespaces || s.LinksPresent < s.Links:
		return "damaged"
	case isLive && len(s.Processes) == 0:
		return "damaged (its supervisor is gone: nothing forwards; lab down " + s.Lab + ")"
	case isLive:
		return "up (live)"
	case s.PIDAlive:
		return "up (running)" // a lab run's namespaces, while it runs
	case s.BoundToPID:
		// A run's lab whose run is gone without its teardown (SIGKILL, a crash): nothing runs in it.
		return "dead (run killed; `lab down " + s.Lab + "` cleans up)"
	case s.Recorded > 0 && len(s.Processes) == 0:
		// Its processes were killed (lab inspect: "not a live lab"): the namespaces are left, inert.
		return "down (its supervisor and agents are gone: nothing forwards; lab down " + s.Lab + " removes the rest)"
	}
	return "up"
}

// labProcesses lists the lab's running processes: the verified supervisor and agents, or the process
// bringing it up; "-" when none runs (a bare lab needs none).
func labProcesses(s nslink.LabStatus) string {
	var ps []string
	for _, p := range s.Processes {
		ps = append(ps, fmt.Sprint(p))
	}
	switch {
	case len(ps) > 0:
		return strings.Join(ps, ",")
	case s.PIDAlive:
		return fmt.Sprint(s.PID)
	}
	return "-"
}
