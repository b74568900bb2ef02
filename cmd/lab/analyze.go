package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/bound"
	"github.com/fabriclab/fabriclab/lab/deadlock"
	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/spec"
)

// analysis is the DESIGN §8 `lab analyze --json` object.
type analysis struct {
	PathsPerPair struct {
		Min int     `json:"min"`
		Avg float64 `json:"avg"`
		Max int     `json:"max"`
	} `json:"paths_per_pair"`
	CBDCycles     map[string]int `json:"cbd_cycles"`
	CBDTruncated  bool           `json:"cbd_truncated,omitempty"`
	LPThroughput  float64        `json:"lp_throughput"`
	LPUnavailable string         `json:"lp_unavailable,omitempty"`
}

func init() {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "analyze SPEC",
		Short: "Static analysis of a spec's routing: path diversity, channel-dependency cycles, LP throughput bound",
		Long: "Build the spec's topology and routing (nothing is created) and report paths per host pair, " +
			"cycles of the channel dependency graph per lossless priority (PFC model; DF-KSP's per-hop " +
			"classes as priorities) and the max-concurrent-flow LP bound of uniform all-to-all traffic " +
			"under the routing (routing free: any path).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := spec.Load(args[0])
			if err != nil {
				return err
			}
			l, err := buildLab(s)
			if err != nil {
				return err
			}
			a, err := analyze(l)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(a)
			}
			writeAnalysis(cmd.OutOrStdout(), l, a)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the DESIGN §8 JSON object")
	root.AddCommand(cmd)
}

func analyze(l *lab.Lab) (*analysis, error) {
	a := &analysis{CBDCycles: map[string]int{}}
	pairs, err := route.PairPaths(l.Graph, l.Router)
	if err != nil {
		return nil, fmt.Errorf("routing %s: %w", l.Router.Name(), err)
	}
	var all []route.Path
	total := 0
	for i, ps := range pairs {
		if i == 0 || len(ps) < a.PathsPerPair.Min {
			a.PathsPerPair.Min = len(ps)
		}
		a.PathsPerPair.Max = max(a.PathsPerPair.Max, len(ps))
		total += len(ps)
		all = append(all, ps...)
	}
	if len(pairs) > 0 {
		a.PathsPerPair.Avg = float64(total) / float64(len(pairs))
	}
	rep := deadlock.Analyze(l.Graph, all, deadlock.ByPriority(HopClass))
	for p, cs := range rep.ByPriority {
		a.CBDCycles[strconv.Itoa(p)] = len(cs)
	}
	for p, cyc := range rep.Cyclic {
		if _, ok := a.CBDCycles[strconv.Itoa(p)]; !ok && !cyc {
			a.CBDCycles[strconv.Itoa(p)] = 0
		}
	}
	if len(a.CBDCycles) == 0 {
		a.CBDCycles["0"] = 0
	}
	a.CBDTruncated = rep.Truncated
	res, err := bound.Throughput(l.Graph, l.Router, nil)
	if err != nil {
		// Server-centric fabrics have no switch-level LP here; say so rather than fail the analysis.
		a.LPUnavailable = err.Error()
	} else {
		a.LPThroughput = res.G
	}
	return a, nil
}

// HopClass is a path's lossless class at a hop: DF-KSP's per-hop class, else 0.
func HopClass(p route.Path, hop int) int {
	if p.Prio != nil {
		return int(p.Prio[hop])
	}
	return 0
}

func writeAnalysis(w io.Writer, l *lab.Lab, a *analysis) {
	fmt.Fprintf(w, "routing          %s on %s (%d switches, %d hosts)\n", l.Router.Name(), l.Graph.Family, len(l.Graph.Switches), len(l.Graph.Hosts))
	fmt.Fprintf(w, "paths per pair   min %d  avg %.2f  max %d\n", a.PathsPerPair.Min, a.PathsPerPair.Avg, a.PathsPerPair.Max)
	keys := make([]string, 0, len(a.CBDCycles))
	for k := range a.CBDCycles {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "CBD cycles       priority %s: %d\n", k, a.CBDCycles[k])
	}
	if a.CBDTruncated {
		fmt.Fprintln(w, "                 (cycle listing truncated: more exist)")
	}
	if a.LPUnavailable != "" {
		fmt.Fprintf(w, "LP throughput    unavailable: %s\n", a.LPUnavailable)
	} else {
		fmt.Fprintf(w, "LP throughput    %.6f of host link rate per host (uniform all-to-all)\n", a.LPThroughput)
	}
}
