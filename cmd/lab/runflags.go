package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
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
	if netnsFlags.agents < 0 || (f.Changed("agents") && netnsFlags.agents < 1) {
		return usage(fmt.Errorf("--agents %d: want how many agent processes (1 or more; leave the flag out for the default)", netnsFlags.agents))
	}
	if f.Changed("workers") && workers < 1 {
		return usage(fmt.Errorf("--workers %d: want how many worker goroutines (1 or more; leave the flag out for the default)", workers))
	}
	netnsFlags.given = nil
	for _, n := range []string{"agents", "name", "pcap", "cluster", "check-against", "realtime", "keep-running-on-deadlock", "workers"} {
		if f.Lookup(n) != nil && f.Changed(n) {
			netnsFlags.given = append(netnsFlags.given, n)
		}
	}
	return nil
}

// backendFlags are the flags only one backend acts on; given for a spec of the other backend, they
// would be ignored without a word.
var backendFlags = map[string][]string{
	"virtual": {"agents", "name", "cluster", "check-against", "realtime"},
	"netns":   {"keep-running-on-deadlock", "workers"},
}

// checkBackendFlags refuses a flag given on the command line that the spec's backend would ignore
// (--agents 1000 on a virtual spec, --keep-running-on-deadlock on netns): before the run is built.
func checkBackendFlags(s *spec.Spec) error {
	for _, n := range backendFlags[s.Backend] {
		if slices.Contains(netnsFlags.given, n) {
			other := "netns"
			if s.Backend == "netns" {
				other = "virtual"
			}
			return usage(fmt.Errorf("--%s: only the %s backend acts on it, and %s runs on backend %s: leave the flag out", n, other, s.Name, s.Backend))
		}
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
