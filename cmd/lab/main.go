// Command lab is fabriclab's command line: describe topologies, bring labs up and down, run experiments,
// and report on them. Each subcommand lives in its own file and registers itself in init.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/lab/topo"
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

// workBudget is the work budget --budget sets; a bad --budget is a usage error.
func workBudget() (lab.Budget, error) {
	b, err := lab.ParseBudget(budgetFlag, lab.DefaultBudget)
	if err != nil {
		return b, usage(err)
	}
	return b, nil
}

func init() {
	// Every command refuses a bad --budget before it does anything, whether or not it builds a lab.
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		_, err := workBudget()
		return err
	}
}

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

// Exit status, the same for every command (docs/experiments.md, "The CLI at a glance"): a script can tell a mistyped command
// from a run that failed from a comparison that found a regression.
const (
	exitFailure = 1 // something failed: a refused spec, a run that could not complete, an I/O error
	exitUsage   = 2 // the command line is wrong: unknown command or flag, wrong arguments, a bad flag value
	exitVerdict = 3 // the command worked and its verdict failed: lab compare found a regression
)

// version is set at build time (-ldflags "-X main.version=..."); otherwise the module's build info says.
var version = ""

func versionString() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	if rev := buildRevision(); rev != "" {
		return bi.Main.Version + " (" + rev + ")"
	}
	return bi.Main.Version
}

// buildRevision is the commit this binary was built from: 12 hex digits, "-dirty" when built from a
// modified tree; "" when the build info does not say.
func buildRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && dirty {
		rev += "-dirty"
	}
	return rev
}

// usageErrors makes cobra's own refusals (argument counts, flag parsing) exit with exitUsage.
func usageErrors(c *cobra.Command) {
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage(err) })
	if args := c.Args; args != nil {
		c.Args = func(cmd *cobra.Command, a []string) error {
			if err := args(cmd, a); err != nil {
				var ec exitCodeError
				if errors.As(err, &ec) {
					return err
				}
				return usage(err)
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		usageErrors(sub)
	}
}

func main() {
	lazyGC()
	dropFontPages()
	root.Version = versionString()
	usageErrors(root)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(exitStatus(err))
	}
}

// exitStatus is the exit status for what root.Execute returned.
func exitStatus(err error) int {
	code := exitCode(err)
	if code == exitFailure && (strings.HasPrefix(err.Error(), "unknown command ") || strings.HasPrefix(err.Error(), "required flag(s) ")) {
		// cobra's, from finding the command or checking required flags: no hook turns them into usage errors
		code = exitUsage
	}
	return code
}

// buildTopo builds a topology within the devices of the budget --budget sets: refused from its
// parameters before it is built (lab.BuildTopology).
func buildTopo(family string, params map[string]string) (*topo.Graph, error) {
	b, err := workBudget()
	if err != nil {
		return nil, err
	}
	return lab.BuildTopology(family, params, b)
}
