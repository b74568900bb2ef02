package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/harness/bench"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/harness/portio"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/lab/topo"
)

type benchFlags struct {
	fabric    string
	agents    string
	datapaths string
	name      string
	dilation  float64
	load      float64
	dur       time.Duration
	repeat    int
	substrate bool
	size      int
	frameDur  time.Duration
	tcp       bool
	mtu       int
	n         int
	flowSize  string
	cc        string
	baseline  string
	forecast  bool
}

func init() {
	var bf benchFlags
	cmd := &cobra.Command{
		Use:   "bench [key=value ...]",
		Short: "measure the netns agent: frame-hops per CPU-second and pace on a fabric, against the Linux bridge",
		Long: `Measure this machine's netns backend (needs root; creates and removes labs named after --name):

 1. The agent on a fabric (--fabric FAMILY key=value ..., default ndc n=4 k=1) under Poisson WebSearch
    at --load for --duration of engine time at --dilation: for each --agents count and each --datapath
    (xdp: AF_XDP sockets; batched: AF_PACKET sockets with receive rings; legacy: the data path of
    26274ad, for a side-by-side ratio), the agents' frame-hops per CPU-second, the pace (wall time /
    (engine time x D): 1 keeps real time) and the fidelity verdict. --repeat alternates the runs.
 2. (--substrate) frames/s through one Go switch, hosted by the agent as in a live lab, against a Linux
    bridge and kernel IP forwarding on the same veths, and with --tcp kernel TCP goodput on NDC(n,1)
    through the agent's switches, run as lab run runs it (with its fidelity verdict).
 3. (--baseline BIN) the same fabric run by BIN's lab run and by this binary's, alternated, one agent
    each (or the first --agents count): another build's agent, measured the same way as ours, from
    outside (its agent processes' CPU clocks, polled while they live; frames from the fidelity line).
 4. (--forecast) beside each pace of 1., the pace forecast for the fabric from a calibration on the
    fabric itself (run first unless cached; lab run's automatic dilation and agents use the same), the
    ratio forecast/measured, the load average, and whether the mean ratio is within 30%.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if bf.name == "" {
				bf.name = fmt.Sprintf("bench%d", os.Getpid())
			}
			w := cmd.OutOrStdout()
			if err := benchAgents(ctx, w, bf, args); err != nil {
				return err
			}
			if !bf.substrate {
				return nil
			}
			return benchSubstrate(ctx, w, bf)
		},
	}
	f := cmd.Flags()
	f.StringVar(&bf.fabric, "fabric", "ndc", "topology family of the agent bench (key=value arguments give its parameters; ndc defaults to n=4 k=1)")
	f.StringVar(&bf.agents, "agents", "1", "agent counts to measure, comma-separated (e.g. 1,2)")
	f.StringVar(&bf.datapaths, "datapath", portio.DefaultDatapath, "data paths to measure side by side, comma-separated: xdp, batched, legacy (e.g. xdp,batched,legacy)")
	f.StringVar(&bf.name, "name", "", "lab name prefix (namespaces fl-<name>-...; default bench<pid>), so two benches do not collide")
	f.Float64Var(&bf.dilation, "dilation", 1000, "time dilation D of the agent bench")
	f.Float64Var(&bf.load, "load", 0.5, "WebSearch load of the agent bench")
	f.DurationVar(&bf.dur, "duration", 2*time.Millisecond, "engine time of the agent bench's arrivals (the run lasts 1 ms longer)")
	f.IntVar(&bf.repeat, "repeat", 1, "runs of each configuration, alternated")
	f.StringVar(&bf.baseline, "baseline", "", "also run the same spec with the fabriclab `BIN` (e.g. built from 26274ad) and with this binary, each by its lab run, alternated, measured from outside (the agents' CPU clocks)")
	f.BoolVar(&bf.forecast, "forecast", false, "also print the pace forecast from a calibration on this fabric (what lab run chooses D and agents by; measured first unless cached) beside the measured one, with their ratio (forecast/measured) and the load average of each run")
	f.BoolVar(&bf.substrate, "substrate", false, "also measure frames/s through the agent's Go switch vs a Linux bridge")
	f.IntVar(&bf.size, "size", 64, "--substrate: frame size in bytes (60-1514)")
	f.DurationVar(&bf.frameDur, "frames-duration", 2*time.Second, "--substrate: length of each frames/s measurement")
	f.BoolVar(&bf.tcp, "tcp", false, "--substrate: also kernel TCP goodput on NDC(n,1) through the agent's Go switches")
	f.IntVar(&bf.mtu, "mtu", 9000, "--tcp: interface MTU")
	f.IntVar(&bf.n, "n", 4, "--tcp: NDC(n,1) size")
	f.StringVar(&bf.flowSize, "flow-size", "10MB", "--tcp: bytes per TCP flow")
	f.StringVar(&bf.cc, "cc", "cubic", "--tcp: TCP congestion control (cubic, dctcp, ...)")
	root.AddCommand(cmd)
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// benchAgents runs the fabric for every agent count and data path, alternating, and prints one row each.
func benchAgents(ctx context.Context, w io.Writer, bf benchFlags, args []string) error {
	params, err := topo.ParseParams(args)
	if err != nil {
		return err
	}
	if bf.fabric == "ndc" && len(args) == 0 {
		params = map[string]string{"n": "4", "k": "1"}
	}
	var counts []int
	for _, v := range splitList(bf.agents) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("--agents: %q is not a positive agent count", v)
		}
		counts = append(counts, n)
	}
	dps := splitList(bf.datapaths)
	for _, dp := range dps {
		if !portio.ValidDatapath(dp) {
			return fmt.Errorf("--datapath: %q is not one of %s", dp, strings.Join(portio.Datapaths, ", "))
		}
	}
	if bf.repeat < 1 {
		return fmt.Errorf("--repeat: %d, want at least 1", bf.repeat)
	}
	fab := bench.Fabric{Family: bf.fabric, Params: params, Load: bf.load, Duration: bf.dur, Dilation: bf.dilation}
	s, err := fab.Spec(bf.name)
	if err != nil {
		return fmt.Errorf("fabric: %w", err)
	}
	l, err := buildLab(s) // within --budget: the topology refused from its parameters before it is built
	if err != nil {
		return fmt.Errorf("fabric: %w", err)
	}
	fmt.Fprintf(w, "agent bench: %s %v, %d devices, WebSearch load %g for %v, D=%g\n", bf.fabric, params, len(l.Graph.Nodes), bf.load, bf.dur, bf.dilation)
	var model *netns.CostModel
	if bf.forecast {
		load, _ := loadAverage()
		fmt.Fprintf(w, "  load average %.1f before the calibration\n", load)
		m, src, err := netns.RunModel(ctx, l, counts, netns.CalibrateOptions{Name: bf.name + "c", Progress: func(s string) { fmt.Fprintln(w, " ", s) }})
		if err != nil {
			return err
		}
		model = &m
		if m.Fabric != nil {
			fmt.Fprintf(w, "  forecast from this fabric (%s): %s\n", netns.FabricCalibrationPath(), m.Fabric)
		} else {
			fmt.Fprintf(w, "  forecast from the two-fabric power law (%s), frame-hops per CPU-second %.0f on %s (%d ports), %.0f on %s (%d ports): cost per frame-hop ~ ports^%.2f\n",
				src, m.Small.FramesPerCPUSecond, m.Small.Fabric, m.Small.Ports, m.Large.FramesPerCPUSecond, m.Large.Fabric, m.Large.Ports, m.Exponent())
		}
		fmt.Fprintf(w, "  %d ports, %.0f frame-hops/s of engine time (FrameRate)\n", netns.AgentPorts(l), netns.FrameRate(l).PerSecond())
		fmt.Fprintf(w, "  %-8s %6s %10s %8s %14s %7s %8s %6s %5s  %s\n", "datapath", "agents", "frames", "cpu_s", "frames/cpu_s", "pace", "forecast", "ratio", "load", "fidelity")
	} else {
		fmt.Fprintf(w, "  %-8s %6s %10s %8s %14s %7s  %s\n", "datapath", "agents", "frames", "cpu_s", "frames/cpu_s", "pace", "fidelity")
	}
	ratios := map[int][]float64{}
	rate := map[string][]float64{}
	for r := 0; r < bf.repeat; r++ {
		for _, n := range counts {
			for _, dp := range dps {
				res, err := bench.RunAgents(ctx, l, bf.name, n, dp)
				if err != nil {
					return fmt.Errorf("%s, %d agents: %w", dp, n, err)
				}
				verdict := "faithful"
				if !res.Fidelity.Faithful {
					verdict = "UNFAITHFUL"
				}
				if res.Used != "" && res.Used != dp {
					verdict += " (" + res.Used + ")"
				}
				if model != nil {
					f := netns.ForecastRun(netns.FrameRate(l), netns.AgentPorts(l), res.Agents, *model, res.Dilation)
					load, _ := loadAverage()
					fmt.Fprintf(w, "  %-8s %6d %10d %8.2f %14.0f %7.2f %8.2f %6.2f %5.1f  %s\n", dp, res.Agents, res.Frames, res.CPU.Seconds(),
						res.FramesPerCPUSecond(), res.Pace(), f.Pace, f.Pace/res.Pace(), load, verdict)
					ratios[res.Agents] = append(ratios[res.Agents], f.Pace/res.Pace())
				} else {
					fmt.Fprintf(w, "  %-8s %6d %10d %8.2f %14.0f %7.2f  %s\n", dp, res.Agents, res.Frames, res.CPU.Seconds(),
						res.FramesPerCPUSecond(), res.Pace(), verdict)
				}
				k := fmt.Sprintf("%s/%d", dp, n)
				rate[k] = append(rate[k], res.FramesPerCPUSecond())
			}
		}
	}
	if bf.baseline != "" {
		if err := benchBaseline(ctx, w, bf, fab, counts[0]); err != nil {
			return err
		}
	}
	for _, n := range counts {
		if r := ratios[n]; len(r) > 0 {
			verdict := "within 30% of the measured pace (0.70-1.30)"
			if m := mean(r); m < 0.7 || m > 1.3 {
				verdict = "NOT within 30% of the measured pace (0.70-1.30)"
			}
			fmt.Fprintf(w, "  %d agents: forecast/measured pace %.2f (mean of %d runs): %s\n", n, mean(r), len(r), verdict)
		}
	}
	if model != nil && len(counts) > 1 {
		// What lab run's choice of agents makes of this fabric's measured costs, at this load and
		// were the machine idle (ChooseAgents).
		load, _ := loadAverage()
		for _, c := range []struct {
			when string
			cpus netns.CPUs
		}{{"now", netns.CPUs{N: runtime.NumCPU(), Load: load}}, {"were the machine idle", netns.CPUs{N: runtime.NumCPU()}}} {
			ch := netns.ChooseAgents(l, netns.FrameRate(l), netns.AgentPorts(l), *model, c.cpus, bf.dilation)
			fmt.Fprintf(w, "  lab run at D=%g would choose, %s: %s\n", bf.dilation, c.when, ch.Why)
		}
	}
	for _, n := range counts {
		old := rate[fmt.Sprintf("legacy/%d", n)]
		for _, dp := range dps {
			if dp == "legacy" || len(old) == 0 {
				continue
			}
			b := rate[fmt.Sprintf("%s/%d", dp, n)]
			fmt.Fprintf(w, "  %d agents: %s/legacy frames per CPU-second %.2fx (mean of %d side-by-side pairs)\n", n, dp, meanRatio(b, old), len(b))
		}
	}
	return nil
}

// benchBaseline runs the fabric with another fabriclab binary and with this one, both through `lab
// run` and measured from outside, alternated --repeat times.
func benchBaseline(ctx context.Context, w io.Writer, bf benchFlags, fab bench.Fabric, agents int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "fabriclab-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	name := bf.name + "b"
	specPath := dir + "/spec.yaml"
	if err := os.WriteFile(specPath, []byte(fab.YAML(name)), 0o644); err != nil {
		return err
	}
	var args []string
	if agents > 1 {
		args = []string{"--agents", strconv.Itoa(agents)}
	}
	fmt.Fprintf(w, "lab run of the same spec by two binaries, %d agent(s) each; agents' CPU over their whole lives, from their CPU clocks:\n", agents)
	fmt.Fprintf(w, "  %-8s %10s %8s %14s %8s  %s\n", "binary", "frames", "cpu_s", "frames/cpu_s", "wall_s", "fidelity")
	rate := map[string][]float64{}
	for r := 0; r < bf.repeat; r++ {
		for _, b := range []struct{ label, path string }{{"this", self}, {"baseline", bf.baseline}} {
			res, err := bench.RunBinary(ctx, b.path, specPath, fmt.Sprintf("%s/%s%d", dir, b.label, r), args...)
			if err != nil {
				return fmt.Errorf("--baseline: %w", err)
			}
			verdict := "faithful"
			if !res.Faithful {
				verdict = "UNFAITHFUL"
			}
			fmt.Fprintf(w, "  %-8s %10d %8.2f %14.0f %8.2f  %s\n", b.label, res.Frames, res.CPU.Seconds(), res.FramesPerCPUSecond(), res.Wall.Seconds(), verdict)
			rate[b.label] = append(rate[b.label], res.FramesPerCPUSecond())
		}
	}
	fmt.Fprintf(w, "  this/baseline (%s) frames per CPU-second %.2fx (mean of %d side-by-side pairs)\n", bf.baseline, meanRatio(rate["this"], rate["baseline"]), bf.repeat)
	return nil
}

func mean(a []float64) float64 {
	s := 0.0
	for _, v := range a {
		s += v
	}
	return s / float64(len(a))
}

func meanRatio(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] / b[i]
	}
	return s / float64(len(a))
}

// benchSubstrate is the frames/s comparison of the agent's Go switch with the Linux bridge and, with
// --tcp, kernel TCP goodput through the agent.
func benchSubstrate(ctx context.Context, w io.Writer, bf benchFlags) error {
	fr, err := bench.FramesPerSecond(ctx, bench.FramesOptions{Lab: bf.name + "f", Size: bf.size, Duration: bf.frameDur})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "one forwarding device between two veths (%d B frames, %v each, counted at the receiver; per CPU-second of the generator and receiver threads and, for the Go switch, the agent process):\n", fr.Size, bf.frameDur)
	fmt.Fprintf(w, "  %-18s %10s %10s %14s\n", "", "frames/s", "offered", "frames/cpu_s")
	fmt.Fprintf(w, "  %-18s %10.0f %10.0f %14.0f\n", "linux bridge", fr.BridgeFPS, fr.BridgeOffered, fr.BridgePerCPU)
	fmt.Fprintf(w, "  %-18s %10.0f %10.0f %14.0f\n", "kernel forwarding", fr.RouterFPS, fr.RouterOffered, fr.RouterPerCPU)
	fmt.Fprintf(w, "  %-18s %10.0f %10.0f %14.0f  (the agent: read %d, malformed %d, switch drops %d)\n", "Go switch", fr.SwitchFPS, fr.SwitchOffered, fr.SwitchPerCPU,
		fr.SwitchRx, fr.Malformed, fr.SwitchDrops)
	fmt.Fprintf(w, "  ratio Go/bridge %.3f (frames/s), %.3f (per CPU-second)\n", fr.Ratio, fr.SwitchPerCPU/max(fr.BridgePerCPU, 1))
	if !bf.tcp {
		return nil
	}
	l, err := ndcLab(bf.name+"t", bf.n, bf.dilation, bf.mtu, bf.cc, bf.flowSize)
	if err != nil {
		return err
	}
	kr, err := bench.RunKernel(ctx, bf.name+"t", l, 0)
	if err != nil {
		return err
	}
	var sum float64
	done := 0
	var retrans int64
	for i, f := range kr.Flows {
		retrans += f.Retransmits
		if f.Completed {
			done++
			sum += kr.GoodputBps[i]
		}
	}
	fmt.Fprintf(w, "kernel TCP (%s) on NDC(%d,1) through the agent, %d flows of %s, MTU %d, dilation %g: links %.4g Mb/s\n",
		bf.cc, bf.n, len(kr.Flows), bf.flowSize, bf.mtu, kr.Dilation, kr.LinkBps/1e6)
	if done > 0 {
		avg := sum / float64(done)
		fmt.Fprintf(w, "  per-flow goodput avg %.4g Mb/s = %.3f of the link; aggregate %.4g Mb/s; %d/%d completed, %d retransmits\n",
			avg/1e6, avg/kr.LinkBps, kr.AggregateBp/1e6, done, len(kr.Flows), retrans)
	}
	ok, why := kr.Faithful(bf.mtu + 14)
	m := kr.Monitor
	fmt.Fprintf(w, "  agent: %d frames read, %d written, %d late, %d malformed, timer lag mean %v max %v, faithful %v %s\n",
		m.RxFrames, m.Frames, m.LateFrames, m.Malformed, kr.TimerLagMean(), m.TimerLagMax, ok, why)
	return nil
}

// ndcLab is NDC(n,1) with kernel hosts and one flow per host to the next host on its level-0 switch.
func ndcLab(name string, n int, d float64, mtu int, cc, size string) (*lab.Lab, error) {
	if n < 2 {
		return nil, fmt.Errorf("--n: NDC(%d,1) has no host pairs; use n >= 2", n)
	}
	y := fmt.Sprintf(`name: %s
backend: netns
dilation: %g
topology: {family: ndc, n: %d, k: 1, link: {rate: 100Gbps, delay: 1us}}
switch: {buffer: 4MB, flow_control: lossy}
host: {transport: kernel-tcp, cc: %s, mtu: %d}
routing: {algorithm: shortest}
duration: 1s
workload:
  - kind: flows
    list:
`, name, d, n, cc, mtu)
	for g := 0; g < n; g++ {
		for i := 0; i < n; i++ {
			y += fmt.Sprintf("      - {src: h%d, dst: h%d, size: %s, at: 0s}\n", g*n+i, g*n+(i+1)%n, size)
		}
	}
	s, err := spec.Parse([]byte(y))
	if err != nil {
		return nil, err
	}
	return buildLab(s)
}
