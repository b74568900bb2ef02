// Command lab is fabriclab's command line: describe topologies, bring labs up and down, run experiments,
// and report on them. Each subcommand lives in its own file and registers itself in init.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
)

var root = &cobra.Command{
	Use:           "lab",
	Short:         "fabriclab: data-center fabrics in Linux network namespaces",
	SilenceUsage:  true,
	SilenceErrors: true,
}

// budgetFlag raises (or, "off", lifts) the work budget every command that builds a lab checks.
var budgetFlag string

func init() {
	root.PersistentFlags().StringVar(&budgetFlag, "budget", "",
		"raise the work budget a spec is refused beyond: flows=N,devices=N,entries=N,draws=N,memory=SIZE,samples=N,runs=N, or off "+
			"(defaults: flows=5e6, devices=1e5, entries=1e8 routing table entries, draws=1e8, memory=8GB, samples=1e8 queue samples, runs=1e4 runs in a tree)")
}

// workBudget is the work budget --budget sets.
func workBudget() (lab.Budget, error) { return lab.ParseBudget(budgetFlag, lab.DefaultBudget) }

// buildLab builds s within the budget --budget sets.
func buildLab(s *spec.Spec) (*lab.Lab, error) {
	b, err := workBudget()
	if err != nil {
		return nil, err
	}
	l, err := lab.BuildWithin(s, b)
	if err != nil {
		return nil, err
	}
	for _, w := range l.Warnings {
		fmt.Fprintln(os.Stderr, "lab: warning:", w)
	}
	return l, nil
}

func main() {
	lazyGC()
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(exitCode(err))
	}
}
