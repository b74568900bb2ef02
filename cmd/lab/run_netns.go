package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/fabriclab/fabriclab/bounded"
	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/cluster"
	"github.com/fabriclab/fabriclab/harness/kernelhost"
	"github.com/fabriclab/fabriclab/harness/netns"
	_ "github.com/fabriclab/fabriclab/harness/netns/agent" // the backend re-executes this binary as its agents
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/report"
)

var netnsFlags struct {
	pcap     string
	agents   int
	name     string
	cluster  string
	against  string
	realtime int
	// given are the backend-specific flags set on the command line (checkRunFlags), refused for a
	// spec whose backend would ignore them (checkBackendFlags).
	given []string
}

func init() {
	backends["netns"] = runNetns
	backendsWithDependencies["netns"] = true
	for _, c := range root.Commands() {
		if c.Name() == "run" {
			c.Flags().StringVar(&netnsFlags.pcap, "pcap", "", "capture ports to DIR/pcap/<device>-p<port>.pcap: all, or a list like s0:p1,h3:p0 (netns: real start time; virtual: Unix epoch + engine time)")
			c.Flags().IntVar(&netnsFlags.agents, "agents", 0, fmt.Sprintf("netns: agent processes hosting the devices, each a connected part of the fabric (default: chosen from the agent's costs measured on this fabric and the CPUs the load leaves free, printed; %d for --cluster, kernel-tcp hosts and flows that wait for others; >= devices: one per device)", netns.DefaultAgents))
			c.Flags().StringVar(&netnsFlags.cluster, "cluster", "", "netns: run over the machines this cluster file names, one agent each (docs/cluster.md)")
			c.Flags().StringVar(&netnsFlags.name, "name", "", "netns: the lab's name (namespaces fl-<name>-<device>; default r<pid>-<n>)")
			c.Flags().IntVar(&netnsFlags.realtime, "realtime", netns.DefaultRealtime, "netns: SCHED_FIFO priority of the agents' loop threads (1-99); 0 or less runs them on the ordinary scheduler, where nice applies (slower on a busy machine, never different: docs/architecture.md §Time dilation)")
			c.Flags().StringVar(&netnsFlags.against, "check-against", "", "netns: virtual: run the lab's virtual twin after the run and compare flow by flow (flows, drops, pauses, deadlock); exit 3 and list the flows when they differ")
		}
	}
}

func runNetns(ctx context.Context, l *lab.Lab, dir string, save func(*records.Log, backendResult) error) error {
	if a := netnsFlags.against; a != "" && a != "virtual" {
		return exitCodeError{code: exitUsage, err: fmt.Errorf("--check-against: %q is not a backend to check against (virtual)", a)}
	}
	bar := newRunProgress(!showProgress, l.End)
	note := func(s string) {
		if showProgress && bar == nil { // no bar (not a terminal): one line per phase instead
			fmt.Fprintln(os.Stderr, "netns:", s)
		}
	}
	why, agentsWhy := "", ""
	agents := netnsFlags.agents
	var err error
	// A calibration on the lab's own fabric (the first run of a fabric on this machine) brings the lab
	// up; the run then uses it rather than bringing it up again.
	var standing *netns.Standing
	defer func() {
		if standing != nil {
			if derr := standing.Down(); derr != nil {
				fmt.Fprintln(os.Stderr, "netns: teardown:", derr)
			}
		}
	}()
	co := func() netns.CalibrateOptions {
		return netns.CalibrateOptions{Name: netnsLabName(), Progress: netnsSay, Standing: standing,
			Keep: func(s *netns.Standing) { standing = s }}
	}
	if netnsFlags.cluster == "" && !slices.Contains(netnsFlags.given, "agents") {
		agents, agentsWhy, err = netnsAgents(ctx, l, co())
	}
	if err != nil {
		return err
	}
	var machines *cluster.Cluster
	if netnsFlags.cluster == "" {
		why, err = netnsDilation(ctx, l, agents, co())
	} else {
		// Connected first: a spec without a dilation takes it from the machines' own calibrations (the
		// coordinator's machine runs no agent, so its own says nothing).
		if machines, err = connectCluster(ctx, netnsFlags.cluster, note); err != nil {
			return err
		}
		defer machines.Close()
		if l.Spec.AutoDilation() {
			why, err = clusterDilation(ctx, l, machines)
		}
	}
	if err != nil {
		return err
	}
	var against error
	busyWarning()
	rt := netnsFlags.realtime
	if rt <= 0 {
		rt = -1 // RunOptions: negative is the ordinary scheduler, 0 the default priority
	}
	opts := netns.RunOptions{Realtime: rt, Pcap: netnsFlags.pcap, Agents: agents, Name: netnsFlags.name, Standing: standing,
		Progress: note, Kernel: kernelhost.ForNetns(l),
		OnClock: func(now clock.Time, completed, total int) { bar.update(now, completed, total) },
		Save: func(log *records.Log, res netns.RunResult) error {
			bar.finish()
			fid := res.Fidelity
			var split *netns.CutReport
			if res.Agents > 1 {
				split = &res.Cut
			}
			br := backendResult{End: res.End, Dilation: res.Dilation, DilationWhy: why, Events: res.Monitor.Timers, AllDone: res.AllDone,
				TimedOut: res.TimedOut, Cancelled: res.Cancelled, Fidelity: &fid, Deadlock: res.Deadlock, Split: split, Partial: res.Partial}
			if netnsFlags.against != "" && !res.Cancelled && !res.Partial {
				verdict, err := checkAgainstVirtual(ctx, l, log, res)
				if err != nil {
					return err
				}
				br.Extra = map[string]any{"check_against_virtual": verdict}
				against = verdict.err()
			}
			if agentsWhy != "" {
				if br.Extra == nil {
					br.Extra = map[string]any{}
				}
				br.Extra["agents_chosen"] = agentsWhy
			}
			if res.Machines != nil {
				if br.Extra == nil {
					br.Extra = map[string]any{}
				}
				br.Extra["cluster"] = res.Machines
				if len(res.Lost) > 0 {
					br.Extra["lost"] = res.Lost
					// Engine time in paper units, as engine_s: what the records cover.
					br.Extra["measured_until_s"] = res.Agreed.Seconds() / max(res.Dilation, 1)
				}
			}
			return save(log, br)
		}}
	if machines != nil {
		opts.Machines = machines
	}
	if opts.Pcap != "" {
		opts.PcapDir = dir + "/pcap"
		if err := os.MkdirAll(opts.PcapDir, 0o755); err != nil {
			return err
		}
	}
	if _, _, err = netns.Run(ctx, l, opts); err != nil {
		return err
	}
	return against
}

// busyWarning warns when the machine is busier than its cores: the agents then fall behind the wall
// clock more often, which makes the run slower (its pace), not different, as long as the agent keeps
// every frame to its schedule (the exact cross-check says whether it did); under the ordinary
// scheduler (--realtime 0) any process on the machine can delay them.
func busyWarning() {
	load, ok := loadAverage()
	if !ok {
		return
	}
	if cpus := runtime.NumCPU(); load > float64(cpus) {
		fmt.Fprintf(os.Stderr, "lab: warning: the machine is busy (load average %.1f on %d CPUs): the agents will fall behind the wall clock and the run will take longer (with Go NIC hosts, not differently: the cross-check compares it with the virtual backend's exactly); kernel-tcp hosts keep the wall clock's time and can be changed by it\n", load, cpus)
	}
}

// loadAverage is the machine's 1-minute load average.
func loadAverage() (float64, bool) {
	b, err := bounded.ReadFile("/proc/loadavg", 4096)
	if err != nil {
		return 0, false
	}
	var load float64
	if _, err := fmt.Sscan(string(b), &load); err != nil {
		return 0, false
	}
	return load, true
}

// againstVirtual is what --check-against virtual found (run.json check_against_virtual).
type againstVirtual struct {
	Identical bool              `json:"identical"`
	Flows     int               `json:"flows"`
	Differing []report.FlowDiff `json:"differing_flows,omitempty"`
	Summary   string            `json:"summary"`
	WallS     float64           `json:"virtual_wall_s"`
	// Reused: the run's own cross-check had run the twin, and its comparison is the one reported.
	Reused bool `json:"reused_cross_check"`
}

func (a againstVirtual) err() error {
	if a.Identical {
		return nil
	}
	return exitCodeError{code: exitVerdict, err: fmt.Errorf("--check-against virtual: %d of %d flows differ from the virtual run (run.json check_against_virtual)", len(a.Differing), a.Flows)}
}

// checkAgainstVirtual compares the netns run with l's virtual run exactly (report.CompareRuns), printing
// "identical to the virtual run" or every flow that differs. The run's own cross-check has usually run
// that twin already (res.Twin), and its comparison is reported; only when it did not (kernel hosts, over
// its budget) does the twin run here. A netns run with a fractional D or kernel hosts cannot be
// identical (docs/architecture.md §Fidelity); it is compared all the same, and the difference is the
// answer.
func checkAgainstVirtual(ctx context.Context, l *lab.Lab, log *records.Log, res netns.RunResult) (againstVirtual, error) {
	if float64(int64(res.Dilation)) != res.Dilation {
		fmt.Fprintf(os.Stderr, "check against virtual: D=%g is not a whole number: the agents ran dilated configs, and the runs are not expected to be identical\n", res.Dilation)
	}
	twin := res.Twin
	if twin == nil {
		start := time.Now()
		f, err := virtual.New(l)
		if err != nil {
			return againstVirtual{}, fmt.Errorf("--check-against virtual: %w", err)
		}
		vres := f.Run(ctx)
		if vres.Cancelled {
			return againstVirtual{}, errors.New("--check-against virtual: the virtual run was interrupted")
		}
		d := max(int64(res.Dilation), 1) // a fractional D: compared at the whole D below, every time differs
		twin = &netns.VirtualTwin{Wall: time.Since(start), Diff: report.CompareRuns(
			report.RunSide{Log: log, D: d, Deadlock: res.Deadlock.Detected, DeadlockAt: res.Deadlock.At},
			report.RunSide{Log: f.Log, D: 1, Deadlock: vres.Deadlock.Detected, DeadlockAt: vres.Deadlock.At})}
	}
	diff := twin.Diff
	a := againstVirtual{Identical: diff.Identical(), Flows: diff.Flows, Differing: diff.Differing, Summary: diff.Describe(20),
		WallS: twin.Wall.Seconds(), Reused: res.Twin != nil}
	took := fmt.Sprintf("the virtual run took %.2f s", a.WallS)
	if a.Reused {
		took += ", run once for the cross-check and this"
	}
	if a.Identical {
		fmt.Fprintf(os.Stderr, "check against virtual: identical to the virtual run (%d flows, %d drops, %d pause records; %s)\n",
			diff.Flows, diff.DropsA, diff.PausesA, took)
		return a, nil
	}
	fmt.Fprintf(os.Stderr, "check against virtual: DIFFERS from the virtual run (%s): %d of %d flows\n", took, len(diff.Differing), diff.Flows)
	for _, fd := range diff.Differing {
		fmt.Fprintf(os.Stderr, "  flow %d: FCT %.9g s (netns) vs %.9g s (virtual): %s\n", fd.ID, fd.FCTA, fd.FCTB, fd.What)
	}
	if diff.FirstDrop != "" {
		fmt.Fprintf(os.Stderr, "  drops %d vs %d, first difference %s\n", diff.DropsA, diff.DropsB, diff.FirstDrop)
	}
	if diff.FirstPause != "" {
		fmt.Fprintf(os.Stderr, "  pause records %d vs %d, first difference %s\n", diff.PausesA, diff.PausesB, diff.FirstPause)
	}
	return a, nil
}

// netnsAgents chooses the agents of a run whose command line gives no --agents: as many as this
// machine's CPUs can carry and the fabric justifies (netns.ChooseAgents), printed with why and
// returned for run.json. It measures this machine's agent first if no calibration is cached.
func netnsAgents(ctx context.Context, l *lab.Lab, co netns.CalibrateOptions) (int, string, error) {
	load, _ := loadAverage()
	c, err := netns.AutoAgents(ctx, l, netns.CPUs{N: runtime.NumCPU(), Load: load}, co)
	if err != nil {
		return 0, "", err
	}
	netnsSay(c.Why)
	return c.N, c.Why, nil
}

func netnsSay(s string) {
	if showProgress {
		fmt.Fprintln(os.Stderr, "netns:", s)
	}
}

func netnsLabName() string {
	if netnsFlags.name != "" {
		return netnsFlags.name
	}
	return fmt.Sprintf("r%d", os.Getpid())
}

// netnsDilation settles the run's dilation before anything is made: a spec without one gets the
// smallest D this machine keeps pace at with agents agents (printed with why and the forecast pace,
// and returned for run.json); an explicit one that cannot keep up is warned about. Both measure this
// machine's agent first if no calibration is cached (about 25 s, once a week). Kernel-host labs keep
// their own rule (they need real time).
func netnsDilation(ctx context.Context, l *lab.Lab, agents int, co netns.CalibrateOptions) (string, error) {
	agents = max(agents, netns.DefaultAgents)
	if !l.Spec.AutoDilation() {
		warn, err := netns.ExplicitDilationWarning(ctx, l, agents, co)
		if err != nil {
			return "", err
		}
		if warn != "" {
			fmt.Fprintln(os.Stderr, "netns: warning:", warn)
		}
		return "", nil
	}
	c, err := netns.AutoDilation(ctx, l, agents, co)
	if err != nil {
		return "", err
	}
	l.Spec.Dilation = c.D
	netnsSay(c.Why)
	return c.Why, nil
}

// clusterDilation settles the dilation of a run over machines whose spec sets none, as netnsDilation
// does on one machine, from every machine's calibration (each measures its own agent if it has none
// cached) and clock (netns.ClusterDilation); printed, and returned for run.json.
func clusterDilation(ctx context.Context, l *lab.Lab, c *cluster.Cluster) (string, error) {
	cals, err := c.Calibrations(ctx, netnsSay)
	if err != nil {
		return "", err
	}
	ms := make([]netns.MachineCal, len(cals))
	for i, cal := range cals {
		ms[i] = netns.MachineCal{Name: c.Name(i), Cal: cal, ClockErr: c.Offsets()[i].Error()}
	}
	ch, err := netns.ClusterDilation(l, ms)
	if err != nil {
		return "", err
	}
	l.Spec.Dilation = ch.D
	netnsSay(ch.Why)
	return ch.Why, nil
}

// connectCluster loads a cluster file and connects to its machines (authenticated, clocks measured).
func connectCluster(ctx context.Context, path string, note func(string)) (*cluster.Cluster, error) {
	f, err := cluster.Load(path)
	if err != nil {
		return nil, err
	}
	c, err := cluster.Connect(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("--cluster %s: %w", path, err)
	}
	for _, o := range c.Offsets() {
		note("clock " + o.String())
	}
	return c, nil
}
