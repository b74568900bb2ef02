package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/lab/bound/dynamic"
)

// dynamicInputs are lab dynamic's flags; the defaults are the thesis' own examples (§3.3.3, App. A).
type dynamicInputs struct {
	switches, degree, servers int
	portCost, fractions       []float64
	rounds                    dynamic.Rounds
	linkGbps                  float64
}

func init() {
	var in dynamicInputs
	cmd := &cobra.Command{
		Use:   "dynamic",
		Short: "The expander thesis' dynamic-topology bounds and equal-cost fat-tree, from their inputs",
		Long: "Compute, from the flags, the flow-level numbers the Kassing expander thesis compares static " +
			"fabrics with (package lab/bound/dynamic; docs/expander.md claim 12): for --switches nodes of " +
			"--degree network ports and --servers servers each, the equal-cost oversubscribed fat-tree " +
			"(Appendix B: the same switches with degree+servers ports), the perfect dynamic topology " +
			"(degree/δ dynamic ports per node for each --port-cost δ, per server), and the restricted one " +
			"(Appendix C: r/(d*·s) over round(x·switches) nodes for each --fractions x); then Appendix A's " +
			"all-to-all buffering of the three round-robin strategies. The defaults are the thesis' examples.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in.rounds.Link = in.linkGbps * 1e9
			return writeDynamic(cmd.OutOrStdout(), in)
		},
	}
	f := cmd.Flags()
	f.IntVar(&in.switches, "switches", 578, "nodes (switches) of the equal-cost comparison")
	f.IntVar(&in.degree, "degree", 25, "network ports per node (r)")
	f.IntVar(&in.servers, "servers", 24, "servers per node (s)")
	f.Float64SliceVar(&in.portCost, "port-cost", []float64{2, 1.5, 1}, "cost of a dynamic port in static ports (δ); a node gets degree/δ dynamic ports")
	f.Float64SliceVar(&in.fractions, "fractions", []float64{1, 0.7, 0.5, 0.3, 0.2, 0.1}, "active fractions x of the all-to-all (restricted bound)")
	f.IntVar(&in.rounds.N, "rounds-switches", 1001, "Appendix A: switches n")
	f.IntVar(&in.rounds.K, "rounds-servers", 25, "Appendix A: servers per switch k")
	f.IntVar(&in.rounds.R, "rounds-ports", 25, "Appendix A: dynamic network ports per switch r")
	f.DurationVar(&in.rounds.Change, "t-change", 12*time.Microsecond, "Appendix A: time to re-aim a link each round")
	f.DurationVar(&in.rounds.Transmit, "t-transmit", 120*time.Microsecond, "Appendix A: sending time per round")
	f.Float64Var(&in.linkGbps, "link-gbps", 10, "Appendix A: link capacity, Gb/s")
	root.AddCommand(cmd)
}

func writeDynamic(w io.Writer, in dynamicInputs) error {
	fmt.Fprintf(w, "equal cost        %d switches of %d ports (%d network + %d servers), %d servers\n",
		in.switches, in.degree+in.servers, in.degree, in.servers, in.switches*in.servers)
	ft, err := dynamic.EqualCostFatTree(in.switches, in.degree+in.servers, in.switches*in.servers)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "fat-tree (App. B) %.3f bottom + %.3f aggregation + %.3f core switches, up-link share x %.4f: %.4f per server\n",
		ft.Bottom, ft.Agg, ft.Core, ft.X, ft.Throughput)
	for _, d := range in.portCost {
		if d <= 0 {
			return fmt.Errorf("--port-cost %g: want a positive cost", d)
		}
		p, err := dynamic.Perfect(float64(in.degree)/d, float64(in.servers))
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "perfect dynamic   δ %.4g: %.4g dynamic ports per node: %.3f per server\n", d, float64(in.degree)/d, p)
	}
	for _, x := range in.fractions {
		n, err := dynamic.ActiveNodes(in.switches, x)
		if err != nil {
			return fmt.Errorf("--fractions: %w", err)
		}
		t, m, err := dynamic.Restricted(n, in.degree, in.servers)
		if err != nil {
			return fmt.Errorf("--fractions %g: %w", x, err)
		}
		fmt.Fprintf(w, "restricted (C)    x %.2f: %d nodes, d* %.4f (K %d, R %d): %.3f per server\n", x, n, m.DStar, m.K, m.Rest, t)
	}
	r := in.rounds
	fmt.Fprintf(w, "buffering (App. A) all-to-all, n %d, k %d, r %d, %g Gb/s, t_change %v, t_transmit %v\n",
		r.N, r.K, r.R, r.Link/1e9, r.Change, r.Transmit)
	fmt.Fprintf(w, "  %-14s %12s %13s %16s %14s %14s\n", "strategy", "ratio_active", "alpha_real", "queue build-up", "server max", "server min")
	for _, strat := range []func() (dynamic.Buffering, error){r.FullCoupling, r.OneByOne, r.FanOut} {
		b, err := strat()
		if err != nil {
			fmt.Fprintf(w, "  %v\n", err)
			continue
		}
		fmt.Fprintf(w, "  %-14s %12.7f %8.5f Gb/s %13.3f KB %11.3f MB %11.3f MB\n",
			b.Strategy, b.RatioActive, b.AlphaReal/1e9, b.BuildUp/1e3, b.TotalMax/1e6, b.TotalMin/1e6)
	}
	return nil
}
