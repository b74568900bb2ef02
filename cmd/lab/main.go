// Command lab is fabriclab's command line: describe topologies, bring labs up and down, run experiments,
// and report on them. Each subcommand lives in its own file and registers itself in init.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

var root = &cobra.Command{
	Use:           "lab",
	Short:         "fabriclab: data-center fabrics in Linux network namespaces",
	SilenceUsage:  true,
	SilenceErrors: true,
}

func main() {
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(1)
	}
}
