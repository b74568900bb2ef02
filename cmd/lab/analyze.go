package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/bound"
	"github.com/fabriclab/fabriclab/lab/bound/dynamic"
	"github.com/fabriclab/fabriclab/lab/deadlock"
	"github.com/fabriclab/fabriclab/lab/route"
	"github.com/fabriclab/fabriclab/lab/spec"
)

// analysis is the `lab analyze --json` object (docs/architecture.md §Contracts).
type analysis struct {
	PathsPerPair struct {
		Min int     `json:"min"`
		Avg float64 `json:"avg"`
		Max int     `json:"max"`
		// Hops is the mean number of switch-to-switch links over every path of every pair (FC+ Fig. 6's
		// average path length).
		Hops float64 `json:"switch_hops_avg"`
		// Classes is the number of lossless classes the paths use (1 + the highest per-hop class).
		Classes int `json:"classes"`
	} `json:"paths_per_pair"`
	CBDCycles     map[string]int `json:"cbd_cycles"`
	CBDTruncated  bool           `json:"cbd_truncated,omitempty"`
	LPThroughput  float64        `json:"lp_throughput"`
	LPUnavailable string         `json:"lp_unavailable,omitempty"`
	// LPUpper is the dual bound certifying LPThroughput (the optimum lies between them); LPTM the matrix;
	// LPUnrestricted the same matrix over any path (--unrestricted); LPSeconds the solve's wall time.
	LPUpper        float64 `json:"lp_upper,omitempty"`
	LPTM           string  `json:"lp_tm,omitempty"`
	LPUnrestricted float64 `json:"lp_unrestricted,omitempty"`
	LPSeconds      float64 `json:"lp_seconds,omitempty"`
	// Eq6 is the FC+ paper's Eq. (6) bound for the matrix (total trunk capacity over shortest-path
	// need); MeanHops the matrix's demand-weighted shortest distance.
	// K2OverK is the FC+ paper's K_2/K (--k2): Yen's paths read per K kept, over K2Censored pairs
	// that needed more than 16K.
	K2OverK    float64 `json:"k2_over_k,omitempty"`
	K2Censored int     `json:"k2_censored,omitempty"`
	Eq6        float64 `json:"eq6_bound,omitempty"`
	MeanHops   float64 `json:"mean_hops,omitempty"`
	// UpDownPaths is the FC+ paper's N_P / N_P6 / N_P4 (Tables III, IV; --updown-paths): the mean number
	// of every path with at most UpDownNLP-1 down-up turns per ordered switch pair, within each hop
	// limit ("all": any length).
	UpDownPaths map[string]float64 `json:"updown_paths,omitempty"`
	UpDownNLP   int                `json:"updown_nlp,omitempty"`
	// FibreChannel is the Fibre Channel paper's analytic bound (§3.4-3.5) for uniform traffic.
	FibreChannel *bound.Analytic `json:"fibre_channel_bound,omitempty"`
	// Regular is the expander thesis' all-to-all bound for a fabric of equal switches (Appendix C).
	Regular *regularBound `json:"regular_bound,omitempty"`
}

// regularBound is the expander thesis' Appendix C bound for n switches of r trunks and s hosts each:
// no r-regular graph carries more than r/(d*·s) of a host link per host to the other switches, d*
// being the Cerf bound on its average shortest path; PerHost restates it in the LP's uniform
// normalization (a host also sends s/N of its traffic to its own switch: ×N/(N-s)).
type regularBound struct {
	Switches, Degree, Hosts int
	DStar                   float64 `json:"d_star"`
	OffSwitch               float64 `json:"off_switch"`
	PerHost                 float64 `json:"per_host"`
}

// regular evaluates regularBound when every switch has the same trunk degree and host count.
func regular(f *route.Fabric) *regularBound {
	if len(f.Sw) == 0 {
		return nil
	}
	r, s := len(f.Out[0]), f.Terminals[0]
	for i := range f.Sw {
		if len(f.Out[i]) != r || f.Terminals[i] != s {
			return nil
		}
	}
	t, m, err := dynamic.Restricted(len(f.Sw), r, s)
	if err != nil {
		return nil
	}
	n := len(f.Sw) * s
	return &regularBound{Switches: len(f.Sw), Degree: r, Hosts: s, DStar: m.DStar, OffSwitch: t,
		PerHost: t * float64(n) / float64(n-s)}
}

// lpOptions are the analyze flags for the LP.
type lpOptions struct {
	tm           string
	seed         uint64
	frac, tol    float64
	unrestricted bool
	lpOnly       bool
	k2Pairs      int
	k2K, k2NLP   int
	udLimits     string
	udNLP        int
}

func init() {
	var asJSON bool
	var o lpOptions
	cmd := &cobra.Command{
		Use:   "analyze SPEC",
		Short: "Static analysis of a spec's routing: path diversity, channel-dependency cycles, LP throughput bound",
		Long: "Build the spec's topology and routing (nothing is created) and report paths per host pair, " +
			"cycles of the channel dependency graph per lossless priority (PFC model; DF-KSP's per-hop " +
			"classes as priorities) and the max-concurrent-flow bound of a traffic matrix (--tm) under the " +
			"routing (routing free: any path), certified: the optimum lies between lp_throughput (a feasible " +
			"flow) and lp_upper (a dual bound), at most --tol apart. Values above 1 are allowed (host links " +
			"are not constrained). Also the FC+ paper's Eq. (6), the Fibre Channel paper's analytic bound and, for equal switches, " +
			"the expander thesis' regular-graph bound r/(d*·s) (Appendix C).",
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
			a, err := analyze(l, o)
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
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the JSON object (docs/architecture.md §Contracts)")
	cmd.Flags().StringVar(&o.tm, "tm", "uniform", "traffic matrix: none (no LP), uniform (all-to-all), permutation (random hosts), random (each switch to --frac of the others), near-worst (longest matching), workload (the spec's flows)")
	cmd.Flags().Uint64Var(&o.seed, "tm-seed", 1, "seed of the random matrices")
	cmd.Flags().Float64Var(&o.frac, "frac", 0.125, "random: share of the other switches each sends to (the FC+ paper's 12.5%)")
	cmd.Flags().Float64Var(&o.tol, "tol", 0.01, "certified relative gap between lp_throughput and lp_upper")
	cmd.Flags().BoolVar(&o.unrestricted, "unrestricted", false, "also solve the matrix over any path (lp_unrestricted)")
	cmd.Flags().IntVar(&o.k2Pairs, "k2", 0, "FC+: also measure the paper's K_2/K (Table II) over this many random switch pairs (--tm-seed): how many of Yen's undirected shortest paths a filtering DF-KSP reads to keep --k2-k with at most --k2-nlp - 1 down-up turns (the spec's routing is not used: give a cheap one)")
	cmd.Flags().IntVar(&o.k2K, "k2-k", 32, "--k2: K")
	cmd.Flags().IntVar(&o.k2NLP, "k2-nlp", 2, "--k2: lossless priorities (2: the paper's 2L filtering)")
	cmd.Flags().StringVar(&o.udLimits, "updown-paths", "", "FC/FC+: also count every path with at most --updown-nlp - 1 down-up turns between every switch pair, within each of these hop limits (a comma list of numbers and all: 4,6,all is the paper's N_P4, N_P6, N_P of Tables III and IV)")
	cmd.Flags().IntVar(&o.udNLP, "updown-nlp", 1, "--updown-paths: lossless priorities (1: up-down paths)")
	cmd.Flags().BoolVar(&o.lpOnly, "lp-only", false, "skip paths per pair and cycles (they list every pair's paths; the LP needs only the matrix's pairs)")
	root.AddCommand(cmd)
}

func analyze(l *lab.Lab, o lpOptions) (*analysis, error) {
	a := &analysis{CBDCycles: map[string]int{}}
	if !o.lpOnly {
		if err := analyzePaths(l, a); err != nil {
			return nil, err
		}
	}
	if o.k2Pairs > 0 {
		if err := analyzeK2(l, a, o); err != nil {
			return nil, err
		}
	}
	if o.udLimits != "" {
		if err := analyzeUpDownPaths(l, a, o); err != nil {
			return nil, err
		}
	}
	if o.tm == "none" {
		return a, nil
	}
	if err := analyzeLP(l, a, o); err != nil {
		return nil, err
	}
	return a, nil
}

// analyzeK2 fills K2OverK: the mean over o.k2Pairs random switch pairs of K_2/K, reading at most 16K
// paths per pair (a pair that needs more counts as 16 and is counted in K2Censored). It needs only the
// fabric, not the spec's router.
func analyzeK2(l *lab.Lab, a *analysis, o lpOptions) error {
	f, err := route.NewFabric(l.Graph)
	if err != nil {
		return err
	}
	k, nlp := o.k2K, o.k2NLP
	if k < 1 || nlp < 1 {
		return fmt.Errorf("--k2-k %d, --k2-nlp %d: want both at least 1", k, nlp)
	}
	if err := needVirtualLayers("--k2", l); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(o.seed, 0x2b))
	sg := f.SwitchGraph()
	sum := 0.0
	for i := 0; i < o.k2Pairs; i++ {
		s := rng.IntN(len(f.Sw))
		d := rng.IntN(len(f.Sw) - 1)
		if d >= s {
			d++
		}
		depth, ok, err := f.FilterDepth(sg, s, d, k, nlp, 16*k)
		if err != nil {
			return err
		}
		if !ok {
			a.K2Censored++
			depth = 16 * k
		}
		sum += float64(depth) / float64(k)
	}
	a.K2OverK = sum / float64(o.k2Pairs)
	return nil
}

// needVirtualLayers refuses flag on a fabric without DF-KSP's virtual layers (only FC and FC+ have them).
func needVirtualLayers(flag string, l *lab.Lab) error {
	if l.Graph.Family != "fcplus" && l.Graph.Family != "fc" {
		return fmt.Errorf("%s: topology family %s has no virtual layers (fcplus or fc)", flag, l.Graph.Family)
	}
	return nil
}

// analyzeUpDownPaths fills UpDownPaths with one enumeration up to the largest limit asked for.
func analyzeUpDownPaths(l *lab.Lab, a *analysis, o lpOptions) error {
	if err := needVirtualLayers("--updown-paths", l); err != nil {
		return err
	}
	limits := map[string]int{}
	longest := 0
	for _, s := range strings.Split(o.udLimits, ",") {
		s = strings.TrimSpace(s)
		if s == "all" {
			limits[s], longest = -1, -1
			continue
		}
		h, err := strconv.Atoi(s)
		if err != nil || h < 1 {
			return fmt.Errorf("--updown-paths %q: %q is neither a hop count of at least 1 nor all", o.udLimits, s)
		}
		limits[s] = h
		if longest >= 0 {
			longest = max(longest, h)
		}
	}
	f, err := route.NewFabric(l.Graph)
	if err != nil {
		return err
	}
	c, err := f.CountUpDownPaths(o.udNLP, longest)
	if err != nil {
		return fmt.Errorf("--updown-paths: %w", err)
	}
	a.UpDownPaths, a.UpDownNLP = map[string]float64{}, o.udNLP
	for s, h := range limits {
		a.UpDownPaths[s] = c.PerPair(h)
	}
	return nil
}

// analyzeLP fills the LP fields; a fabric with no switch-level LP (server-centric) says why instead.
func analyzeLP(l *lab.Lab, a *analysis, o lpOptions) error {
	f, err := route.NewFabric(l.Graph)
	if err != nil {
		a.LPUnavailable = err.Error()
		return nil
	}
	if o.tol <= 0 || o.tol >= 1 {
		return fmt.Errorf("--tol %g: want a gap in (0,1)", o.tol)
	}
	tm, err := analyzeTM(l, f, o)
	if err != nil {
		return err
	}
	a.LPTM = o.tm
	unit := l.Graph.LinkAt(l.Graph.Hosts[0], 0).RateBps
	a.Eq6 = bound.Eq6(f, tm, unit)
	a.MeanHops = bound.MeanHops(f, tm)
	if an, err := bound.FibreChannelBound(f); err == nil {
		a.FibreChannel = &an
	}
	a.Regular = regular(f)
	t0 := time.Now()
	res, err := bound.ThroughputTol(l.Graph, l.Router, tm, o.tol)
	if err != nil {
		a.LPUnavailable = err.Error()
		return nil
	}
	a.LPSeconds = time.Since(t0).Seconds()
	a.LPThroughput, a.LPUpper = res.G, res.Upper
	if o.unrestricted {
		free, err := bound.ThroughputTol(l.Graph, nil, tm, o.tol)
		if err != nil {
			return err
		}
		a.LPUnrestricted = free.G
	}
	return nil
}

func analyzeTM(l *lab.Lab, f *route.Fabric, o lpOptions) (bound.TM, error) {
	r := rand.New(rand.NewPCG(o.seed, 0x1f))
	switch o.tm {
	case "uniform":
		return bound.Uniform(f), nil
	case "permutation":
		return bound.Permutation(f, r), nil
	case "random":
		if o.frac <= 0 || o.frac > 1 {
			return nil, fmt.Errorf("--frac %g: want a share in (0,1]", o.frac)
		}
		return bound.RandomFraction(f, r, o.frac), nil
	case "near-worst":
		return bound.NearWorst(f), nil
	case "workload":
		var src, dst []int
		var bytes []int64
		for _, fl := range l.Flows {
			src, dst, bytes = append(src, fl.Src), append(dst, fl.Dst), append(bytes, fl.Size)
		}
		return bound.Flows(f, src, dst, bytes)
	}
	return nil, fmt.Errorf("--tm %q: want one of %s", o.tm, strings.Join(bound.TMNames, ", "))
}

func analyzePaths(l *lab.Lab, a *analysis) error {
	pairs, err := route.PairPaths(l.Graph, l.Router)
	if err != nil {
		return fmt.Errorf("routing %s: %w", l.Router.Name(), err)
	}
	var all []route.Path
	total, hops := 0, 0
	a.PathsPerPair.Classes = 1
	for i, ps := range pairs {
		for _, p := range ps {
			hops += len(p.Nodes) - 3 // n nodes, n-1 links, minus the two host links
			for _, c := range p.Prio {
				a.PathsPerPair.Classes = max(a.PathsPerPair.Classes, int(c)+1)
			}
		}
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
	if total > 0 {
		a.PathsPerPair.Hops = float64(hops) / float64(total)
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
	return nil
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
	if a.PathsPerPair.Max == 0 { // --lp-only
		writeLP(w, a)
		return
	}
	fmt.Fprintf(w, "paths per pair   min %d  avg %.2f  max %d; %.3f switch-to-switch links per path; %d lossless class(es)\n",
		a.PathsPerPair.Min, a.PathsPerPair.Avg, a.PathsPerPair.Max, a.PathsPerPair.Hops, a.PathsPerPair.Classes)
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
	writeLP(w, a)
}

func writeLP(w io.Writer, a *analysis) {
	if a.K2OverK > 0 {
		fmt.Fprintf(w, "K_2 / K          %.3f (%d pairs above 16K)\n", a.K2OverK, a.K2Censored)
	}
	if len(a.UpDownPaths) > 0 {
		keys := make([]string, 0, len(a.UpDownPaths))
		for k := range a.UpDownPaths {
			keys = append(keys, k)
		}
		// By hop count, "all" last: as strings, 10 came before 4.
		hops := func(k string) int {
			if h, err := strconv.Atoi(k); err == nil {
				return h
			}
			return math.MaxInt
		}
		sort.Slice(keys, func(i, j int) bool { return hops(keys[i]) < hops(keys[j]) })
		for _, k := range keys {
			fmt.Fprintf(w, "paths <= %-3s hops %.2f per switch pair (every path with at most %d down-up turns)\n", k, a.UpDownPaths[k], a.UpDownNLP-1)
		}
	}
	if a.LPTM == "" && a.LPUnavailable == "" { // --tm none
		return
	}
	if a.LPUnavailable != "" {
		fmt.Fprintf(w, "LP throughput    unavailable: %s\n", a.LPUnavailable)
		return
	}
	fmt.Fprintf(w, "LP throughput    %.6f of host link rate per host (%s), certified <= %.6f (%.1f s)\n", a.LPThroughput, a.LPTM, a.LPUpper, a.LPSeconds)
	if a.LPUnrestricted > 0 {
		fmt.Fprintf(w, "LP unrestricted  %.6f (any path)\n", a.LPUnrestricted)
	}
	fmt.Fprintf(w, "Eq. (6) bound    %.6f (FC+ paper; mean shortest distance %.3f hops)\n", a.Eq6, a.MeanHops)
	if fc := a.FibreChannel; fc != nil {
		fmt.Fprintf(w, "Fibre Channel    %.6f = min(path length %.6f, cut %.6f) for S=%d, c=%d, N=%d (uniform)\n", fc.Bound, fc.PathLength, fc.Cut, fc.S, fc.C, fc.N)
	}
	if rb := a.Regular; rb != nil {
		fmt.Fprintf(w, "regular bound    %.6f (uniform) = r/(d*·s) %.6f to other switches, any %d-regular graph on %d switches, Cerf d* %.4f (expander thesis App. C)\n",
			rb.PerHost, rb.OffSwitch, rb.Degree, rb.Switches, rb.DStar)
	}
}
