package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/lab"
)

// checkRunFlags refuses lab run's flag values that would otherwise silently mean something else
// (issue 23): an explicit --seeds 0 (0 is the flag's "not given"), negative -j and --agents (read as
// "the default"). Usage errors: exit 2.
func checkRunFlags(cmd *cobra.Command) error {
	f := cmd.Flags()
	if f.Changed("seeds") && sweepFlags.seeds < 1 {
		return usage(fmt.Errorf("--seeds %d: want how many seeds to run (1 or more; leave the flag out for the spec's seeds:)", sweepFlags.seeds))
	}
	if sweepFlags.jobs < 0 {
		return usage(fmt.Errorf("-j %d: want how many runs at once (1 or more; leave the flag out for one per core)", sweepFlags.jobs))
	}
	if netnsFlags.agents < 0 {
		return usage(fmt.Errorf("--agents %d: want how many agent processes (1 or more; leave the flag out for the default)", netnsFlags.agents))
	}
	return nil
}

// checkHasFlows refuses a run of no flows: a spec without a workload (which lab up takes: a topology
// to bring up) or whose workloads all make none would "complete 0 of 0 flows" and exit 0.
func checkHasFlows(l *lab.Lab) error {
	if len(l.Flows) > 0 {
		return nil
	}
	if len(l.Spec.Workload) == 0 {
		return errors.New("workload: the spec has none, so a run would measure nothing (lab up takes a spec without one)")
	}
	return fmt.Errorf("workload: its %d workloads make no flows over the run (a tiny load or a short duration?): nothing to measure", len(l.Spec.Workload))
}
