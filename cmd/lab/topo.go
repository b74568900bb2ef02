package main

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/spf13/cobra"
)

func init() {
	var asJSON, asDOT, asHPCC, allPairs bool
	cmd := &cobra.Command{
		Use:   "topo (FAMILY [key=value ...] | SPEC.yaml | TOPOLOGY.json)",
		Short: "Describe a topology without creating anything",
		Long: "Build a topology from its family and parameters, from an experiment spec (its topology, as lab up " +
			"takes it) or from a topology JSON file (what --json prints), and print a summary, the JSON " +
			"description (--json, the contract in docs/architecture.md §Contracts) or Graphviz DOT (--dot).\n\nFamilies and keys:\n" + familyHelp(),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if btoi(asJSON)+btoi(asDOT)+btoi(asHPCC) > 1 {
				return fmt.Errorf("--json, --dot and --hpcc are exclusive")
			}
			g, err := topoArg(args)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case asJSON:
				return g.WriteJSONStats(out, allPairs)
			case asDOT:
				return g.WriteDOT(out)
			case asHPCC:
				return g.WriteHPCC(out)
			}
			return writeTopoSummary(out, g, allPairs)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the topology as JSON")
	cmd.Flags().BoolVar(&asDOT, "dot", false, "print the topology as Graphviz DOT")
	cmd.Flags().BoolVar(&asHPCC, "hpcc", false, "print the topology as HPCC's topology.txt (read back with: lab topo file path=F format=hpcc)")
	cmd.Flags().BoolVar(&allPairs, "stats", false, "compute diameters and average paths even on a graph too large to do so unasked "+
		"(more than 2e9 search steps: searches x (nodes + links))")
	root.AddCommand(cmd)
}

func familyHelp() string {
	var b strings.Builder
	for _, f := range topo.Families() {
		fmt.Fprintf(&b, "  %-10s %s\n", f, strings.Join(topo.FamilyKeys(f), " "))
	}
	return b.String()
}

func writeTopoSummary(w io.Writer, g *topo.Graph, allPairs bool) error {
	st := g.StatsBounded(allPairs)
	keys := make([]string, 0, len(g.Params))
	for k := range g.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kv := make([]string, len(keys))
	for i, k := range keys {
		kv[i] = k + "=" + g.Params[k]
	}
	fmt.Fprintf(w, "family    %s\n", g.Family)
	fmt.Fprintf(w, "params    %s\n", strings.Join(kv, " "))
	fmt.Fprintf(w, "hosts     %d\nswitches  %d\nlinks     %d\n", st.Hosts, st.Switches, st.Links)
	if st.AllPairsSkipped {
		_, err := fmt.Fprintf(w, "diameter  not computed: the all-pairs searches would take %.3g steps, more than %.3g (--stats computes them)\n",
			g.AllPairsWork(), topo.AllPairsLimit)
		return err
	}
	if !st.Connected {
		fmt.Fprintf(w, "connected no (diameter and averages cover reachable pairs only)\n")
	}
	pairs := "host pairs"
	if st.Hosts == 0 {
		pairs = "switch pairs"
	}
	_, err := fmt.Fprintf(w, "diameter  %d hops (%s); switch-to-switch %d\navg path  %.4f hops (%s); switch-to-switch %.4f\n",
		st.Diameter, pairs, st.SwitchDiameter, st.AvgShortestPath, pairs, st.SwitchAvgShortestPath)
	return err
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// topoArg builds the topology lab topo's arguments name: FAMILY key=value..., a spec file (.yaml/.yml:
// its whole lab is built, as lab up does, so a spec lab up accepts is described the same) or a
// topology JSON file (.json: the file family's format=json).
func topoArg(args []string) (*topo.Graph, error) {
	switch ext := filepath.Ext(args[0]); ext {
	case ".yaml", ".yml", ".json":
		if len(args) > 1 {
			return nil, fmt.Errorf("lab topo %s takes no key=value arguments", args[0])
		}
		if ext == ".json" {
			return buildTopo("file", map[string]string{"path": args[0], "format": "json"})
		}
		g, _, err := loadSpecGraph(args[0])
		return g, err
	}
	params, err := topo.ParseParams(args[1:])
	if err != nil {
		return nil, err
	}
	return buildTopo(args[0], params)
}
