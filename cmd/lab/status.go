package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/spf13/cobra"
)

func init() {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List labs (those with a state file) and whether their namespaces and links exist",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sts, errs := netns.Status()
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
			if len(sts) == 0 {
				fmt.Fprintln(out, "no labs")
				return err
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "LAB\tFAMILY\tSTATE\tNAMESPACES\tLINKS\tPID")
			for _, s := range sts {
				state := "up"
				switch {
				case !s.Complete && s.PIDAlive:
					state = "coming up"
				case !s.Complete:
					state = "incomplete (crashed bring-up: lab down " + s.Lab + ")"
				case s.NamespacesPresent < s.Namespaces || s.LinksPresent < s.Links:
					state = "damaged"
				}
				pid := fmt.Sprint(s.PID)
				if !s.PIDAlive {
					pid += " (exited)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d/%d\t%s\n", s.Lab, s.Family, state,
					s.NamespacesPresent, s.Namespaces, s.LinksPresent, s.Links, pid)
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
