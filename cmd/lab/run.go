package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/outfile"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/report"
)

func init() {
	var out, cpuprofile, memprofile string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "run SPEC [SPEC...] -o DIR",
		Short: "run experiment specs (with seeds and sweeps) and write their run directories",
		Long: `Run an experiment spec (YAML) and write the run directory: the resolved spec, the topology,
summary.json, fct.txt and pfc.txt (HPCC formats), flows.csv, drops and pauses. Ctrl-C stops the run and
keeps what was measured so far.

Several specs, --seeds N (or the spec's seeds:) and --set path=v1,v2,... (or the spec's sweep: block)
make a run tree instead: DIR/[<spec name>/][<path=value,...>/]seed-<n>/, one run directory each, and
DIR/manifest.json saying which has which seed and values; lab report DIR aggregates it. Every run is
checked before any starts; virtual runs go -j at a time (default: the cores), netns runs one at a time.
A tree of more runs than the work budget allows (--budget runs=N, default 10000) is refused before any
is made.

As a cluster job: --list prints the tree's runs with their indices, and --index I (or --index env in a
Kubernetes Indexed Job or a Slurm array) runs only run I into the tree -o names, which many processes
can fill at once; each run leaves DIR.status.json, and lab report aggregates what is done.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkRunFlags(cmd); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			multi, s, err := multiRun(args)
			if err != nil {
				return err
			}
			if multi {
				if workers == 0 {
					workers = 1 // a tree's runs already share the cores (--jobs)
				}
				// Profiles, when asked, cover the whole tree: all its runs (or the one --index runs).
				profiles := func() (func(), error) { return startProfiles(cpuprofile, memprofile) }
				return runTreeCommand(ctx, cmd.OutOrStdout(), args, out, quiet, profiles)
			}
			if err := report.CheckExpect(s.Expect); err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join("results", s.Name)
			}
			if err := checkRunDir(out); err != nil { // before any work: nothing of the user's is replaced
				return err
			}
			showProgress = !quiet
			stopProfiles, err := startProfiles(cpuprofile, memprofile)
			if err != nil {
				return err
			}
			defer stopProfiles()
			sum, res, err := runSpec(ctx, s, out)
			if sum != nil && (!quiet || res.Fidelity != nil && !res.Fidelity.Faithful) {
				printSummary(cmd, out, sum, quiet)
			}
			return err
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "run directory (default results/<spec name>)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing on success (and no progress bar)")
	cmd.Flags().StringVar(&cpuprofile, "cpuprofile", "", "write the run's CPU profile to this new file (never over an existing one; go tool pprof; a run tree's: all its runs); the netns backend's agents: FABRICLAB_AGENT_CPUPROFILE")
	cmd.Flags().StringVar(&memprofile, "memprofile", "", "write the heap profile of the collection that found the run's largest live heap to this new file (never over an existing one; go tool pprof)")
	cmd.Flags().Var(&sampleEvery, "sample-every", "record every switch port's queue depth at this period (e.g. 10us) into queues.csv, for the queue-depth plot")
	cmd.Flags().IntVar(&sweepFlags.seeds, "seeds", 0, "run each spec with this many seeds: its seed, seed+1, ... (replaces the spec's seeds:)")
	cmd.Flags().StringArrayVar(&sweepFlags.sets, "set", nil, "sweep a spec field by path: --set workload.0.load=0.3,0.5,0.7 (repeat for more axes; one value just sets it)")
	cmd.Flags().IntVarP(&sweepFlags.jobs, "jobs", "j", 0, "run trees: runs at once (default and maximum: the cores; netns: 1)")
	cmd.Flags().BoolVar(&sweepFlags.list, "list", false, "run trees: print every run's index and directory (nothing runs)")
	cmd.Flags().BoolVar(&sweepFlags.json, "json", false, "with --list: print the runs as JSON")
	cmd.Flags().StringVar(&sweepFlags.index, "index", "", "run trees: run only run I (see --list) into the tree, which other processes fill too; env: $JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or $SLURM_ARRAY_TASK_ID")
	cmd.Flags().BoolVar(&meters, "meters", true,
		"virtual backend: per-link and per-flow byte meters (links.csv, flow_rate.csv, the heatmaps); false saves their memory on long runs at scale (fat-tree k=12 incast: 399 -> 160 MB)")
	cmd.Flags().BoolVar(&checkFrames, "check-frames", true,
		"virtual backend: check every frame against what the real wire can carry (wire.Check; about 5% of the CPU); false leaves it to the tests")
	cmd.Flags().IntVar(&workers, "workers", 0,
		"virtual backend: split the fabric over this many goroutines, run in windows of the smallest link delay between parts; every output is the same as with 1 (default: by a forecast of the events in one window, up to the processors, printed with why)")
	cmd.Flags().BoolVar(&keepRunningOnDeadlock, "keep-running-on-deadlock", false,
		"virtual backend: run to the spec's duration after the deadlock monitor fires (default: stop there)")
	root.AddCommand(cmd)
}

// startProfiles starts --cpuprofile and --memprofile (either may be empty); stop writes them. A run tree
// is profiled whole: one process runs all its runs. Both paths are checked before either file is made:
// the files are write-once, so a --cpuprofile committed before a refused --memprofile would make the
// corrected command line refuse it in turn.
func startProfiles(cpuprofile, memprofile string) (stop func(), err error) {
	if err := checkProfiles(cpuprofile, memprofile); err != nil {
		return nil, err
	}
	stopCPU, abortCPU, stopHeap := func() {}, func() {}, func() error { return nil }
	if cpuprofile != "" {
		if stopCPU, abortCPU, err = startCPUProfile(cpuprofile); err != nil {
			return nil, err
		}
	}
	if memprofile != "" {
		if stopHeap, err = startPeakHeapProfile(memprofile); err != nil {
			abortCPU() // not committed: the run did not start
			return nil, err
		}
	}
	return func() {
		stopCPU()
		if herr := stopHeap(); herr != nil {
			fmt.Fprintln(os.Stderr, herr)
		}
	}, nil
}

// checkProfiles refuses, before any profile file is made, a profile path outfile would refuse and one
// path given to both flags (the second write would be refused after the whole run).
func checkProfiles(cpuprofile, memprofile string) error {
	for _, p := range []struct{ flag, path string }{{"--cpuprofile", cpuprofile}, {"--memprofile", memprofile}} {
		if p.path == "" {
			continue
		}
		if err := outfile.Check(p.path, outfile.New); err != nil {
			return fmt.Errorf("%s: %w", p.flag, err)
		}
	}
	if cpuprofile != "" && memprofile != "" {
		a, aerr := filepath.Abs(cpuprofile)
		b, berr := filepath.Abs(memprofile)
		if aerr == nil && berr == nil && a == b {
			return usage(fmt.Errorf("--cpuprofile and --memprofile: both name %s: give each its own file", cpuprofile))
		}
	}
	return nil
}

// startCPUProfile writes this process's CPU profile to path until the returned stop is called; abort
// stops it and leaves no file.
func startCPUProfile(path string) (stop, abort func(), err error) {
	f, err := outfile.Create(path, outfile.New) // a new file only, never a user's
	if err != nil {
		return nil, nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Abort()
		return nil, nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "--cpuprofile:", err)
			}
		}, func() {
			pprof.StopCPUProfile()
			f.Abort()
		}, nil
}

// A backend runs a built lab and hands its records to save exactly once (a netns run does it before its
// teardown, so a crash there cannot lose the run). dir is where the run directory is being written
// (pcaps go there). Backends register by spec name in their own files.
type backend func(ctx context.Context, l *lab.Lab, dir string, save func(*records.Log, backendResult) error) error

type backendResult struct {
	End                          clock.Time // engine time at the end (dilated)
	Dilation                     float64
	DilationWhy                  string // netns: why this D, when the spec left it to the backend
	Events                       uint64
	AllDone, TimedOut, Cancelled bool
	Deadlock                     report.DeadlockVerdict
	Fidelity                     *report.Fidelity
	// Split is how a netns run with several agents split the devices (nil: one agent).
	Split *netns.CutReport
	// Partial: the run lost a machine mid-run (Extra says which); Extra goes into run.json as it is.
	Partial bool
	Extra   map[string]any
}

var backends = map[string]backend{"virtual": runVirtual}

func runVirtual(ctx context.Context, l *lab.Lab, dir string, save func(*records.Log, backendResult) error) error {
	if netnsFlags.cluster != "" {
		return errors.New("--cluster: this spec runs on the virtual backend; several machines run backend: netns")
	}
	n, why := chooseWorkers(l, workers)
	f, split, err := newVirtualFabric(l, n)
	if err != nil {
		return err
	}
	if showProgress {
		if split != "" {
			why += "; " + split
		}
		fmt.Fprintln(os.Stderr, "virtual:", why)
	}
	f.StopOnDeadlock = !keepRunningOnDeadlock
	if sampleEvery > 0 { // the link and flow byte meters share the queue sampling period
		f.MeterBin = sampleEvery.Clock()
	}
	// --pcap: the same files the netns backend captures, frames encoded by wire, stamped with engine time.
	if err := f.CapturePorts(netnsFlags.pcap, filepath.Join(dir, "pcap")); err != nil {
		return err
	}
	f.CheckFrames = checkFrames
	if !meters {
		f.MeterBin = -1
	}
	bar := newRunProgress(!showProgress, l.End)
	f.Progress = bar.update
	f.DeferRecords = true
	f.SpillDir = dir // pause records go to disk as they accumulate, read back at the end
	dropFilePages()  // what starting lab and building the lab touched; the run faults back what it uses
	res := f.Run(ctx)
	bar.finish()
	if os.Getenv("FABRICLAB_PARALLEL_STATS") != "" {
		fmt.Fprintf(os.Stderr, "virtual: parallel stats %+v\n", f.ParallelStats())
	}
	if err := f.ClosePcaps(); err != nil {
		return err
	}
	log, finish := f.Log, f.TakeRecords()
	f = nil
	collectIfLarge()
	finish()
	if err := log.SpillErr(); err != nil {
		return err
	}
	return save(log, backendResult{End: res.End, Dilation: 1, Events: res.Events, AllDone: res.AllDone,
		TimedOut: res.TimedOut, Cancelled: res.Cancelled, Deadlock: res.Deadlock})
}

// keepRunningOnDeadlock (--keep-running-on-deadlock) lets a virtual run go on to its end after the
// deadlock monitor fires, e.g. to plot the collapse; by default the run stops at detection.
var keepRunningOnDeadlock bool

// meters (--meters) keeps the virtual backend's per-link and per-flow byte meters.
var meters = true

// checkFrames (--check-frames) checks every frame of a virtual run against what the real wire carries.
var checkFrames = true

// runSpec builds the lab, runs it on the spec's backend and writes the run directory: into a temporary
// directory next to out, renamed to out once complete, so out is never a half-written run (a crash
// leaves the temporary one, marked by its name).
func runSpec(ctx context.Context, s *spec.Spec, out string) (*report.Summary, *backendResult, error) {
	if err := checkBackendFlags(s); err != nil {
		return nil, nil, err
	}
	l, err := buildLab(s)
	if err != nil {
		return nil, nil, err
	}
	if err := checkSampling(l); err != nil {
		return nil, nil, err
	}
	if err := checkHasFlows(l); err != nil {
		return nil, nil, err
	}
	if sampleEvery > 0 {
		for i := range l.Switches {
			l.Switches[i].Config.SampleEvery = sampleEvery.Clock()
		}
	}
	run, ok := backends[s.Backend]
	if !ok {
		return nil, nil, fmt.Errorf("backend: %q runs are not available in this build", s.Backend)
	}
	if err := checkDependencies(s.Backend, l); err != nil {
		return nil, nil, err
	}
	if err := checkRunDir(out); err != nil {
		return nil, nil, err
	}
	tmp, err := tempRunDir(out)
	if err != nil {
		return nil, nil, err
	}
	if err := writeInputs(tmp, l); err != nil {
		removeIncomplete(tmp)
		return nil, nil, err
	}
	if err := writeSchedule(tmp, l); err != nil {
		removeIncomplete(tmp)
		return nil, nil, err
	}
	wall := time.Now()
	var sum *report.Summary
	var got *backendResult
	save := func(log *records.Log, res backendResult) error {
		elapsed := time.Since(wall)
		meta := report.Meta{Dilation: res.Dilation, Duration: res.End, Graph: l.Graph, Deadlock: res.Deadlock, Fidelity: res.Fidelity,
			MeasureFrom: clock.Time(float64(l.Spec.MeasureFrom.Clock()) * max(res.Dilation, 1)), Scheduled: len(l.Flows)}
		sm, err := report.WriteRunDir(tmp, log, meta)
		if err != nil {
			return err
		}
		if err := writeSamples(tmp, log, meta); err != nil {
			return err
		}
		d := max(res.Dilation, 1)
		info := map[string]any{
			"backend": s.Backend, "events": res.Events, "wall_s": elapsed.Seconds(),
			// Engine time in paper units (divided by the dilation), as summary.json's duration_s.
			"engine_s": res.End.Seconds() / d, "dilation": res.Dilation,
			"all_done": res.AllDone, "timed_out": res.TimedOut, "cancelled": res.Cancelled,
			// partial: stopped (Ctrl-C) before its end; what was measured up to then is all here.
			"partial": res.Cancelled || res.Partial,
		}
		for k, v := range res.Extra {
			info[k] = v
		}
		if res.Split != nil {
			info["split"] = res.Split
		}
		if res.Fidelity != nil {
			info["faithful"] = res.Fidelity.Faithful
		}
		if res.DilationWhy != "" {
			info["dilation_chosen"] = res.DilationWhy
		}
		if err := writeJSON(filepath.Join(tmp, "run.json"), info); err != nil {
			return err
		}
		if err := commitRunDir(tmp, out); err != nil {
			return err
		}
		sum, got = sm, &res
		return nil
	}
	if err := run(ctx, l, tmp, save); err != nil {
		if got == nil {
			removeIncomplete(tmp)
			// Say where the run would have been (a hung netns run named neither it nor what to read):
			// the backend's own messages above are all there is.
			err = fmt.Errorf("%w; nothing was written to %s", err, out)
		}
		return sum, got, err
	}
	if got == nil {
		removeIncomplete(tmp)
		return nil, nil, fmt.Errorf("backend %s returned no records", s.Backend)
	}
	if got.Partial {
		return sum, got, fmt.Errorf("a machine was lost at %v engine time; partial results in %s (run.json: partial, lost)",
			clock.Time(float64(got.End)/max(got.Dilation, 1)), out)
	}
	if got.Cancelled {
		return sum, got, fmt.Errorf("interrupted at %v engine time; partial results in %s (run.json: partial)",
			clock.Time(float64(got.End)/max(got.Dilation, 1)), out)
	}
	return sum, got, nil
}

// runDirFiles are the files every run directory has: lab run replaces a directory that is a run
// (isRunDir: all of them, run.json as lab run writes it) and refuses to replace any other non-empty
// directory (a user's project holding a spec.yaml of its own).
var runDirFiles = []string{"run.json", "summary.json", "spec.yaml"}

func checkRunDir(out string) error {
	if err := outfile.CheckDir(out); err != nil {
		return fmt.Errorf("-o %w", err)
	}
	fi, err := os.Lstat(out)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // absent: made at the end
	}
	if err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	if !fi.IsDir() {
		// Replacing it would delete the user's file (or what a symlink points at): never ours to remove.
		what := "a file"
		if fi.Mode()&fs.ModeSymlink != 0 {
			what = "a symbolic link"
		} else if !fi.Mode().IsRegular() {
			what = "not a regular file"
		}
		return fmt.Errorf("-o %s: exists and is %s, not a run directory: refusing to replace it", out, what)
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	if len(ents) == 0 {
		return nil
	}
	if isRunDir(out) {
		return nil
	}
	return fmt.Errorf("-o %s: a non-empty directory that is not a run directory (no lab run.json beside %v): refusing to replace it", out, runDirFiles[1:])
}

// cleanedParents are the directories tempRunDir has cleaned of stale incomplete runs.
var cleanedParents sync.Map

// tempRunDir makes the directory a run is written into, next to out (same filesystem, so the final
// rename is atomic).
func tempRunDir(out string) (string, error) {
	parent := filepath.Dir(filepath.Clean(out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	// What earlier runs killed here left (their owner is gone) goes first; once per directory and
	// process, since a tree's runs share parents (10^4 seeds: 10^4 directory reads each otherwise).
	if _, seen := cleanedParents.LoadOrStore(parent, true); !seen {
		if _, err := cleanIncomplete(parent, os.Stderr); err != nil {
			return "", err
		}
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(filepath.Clean(out))+".incomplete-")
	if err != nil {
		return "", err
	}
	if err := markIncomplete(tmp); err != nil {
		removeIncomplete(tmp)
		return "", err
	}
	return tmp, nil
}

// commitRunDir puts the finished run directory tmp at out, replacing a previous run there.
func commitRunDir(tmp, out string) error {
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := releaseIncomplete(tmp); err != nil {
		return err
	}
	old := ""
	if _, err := os.Stat(out); err == nil {
		if err := checkRunDir(out); err != nil {
			return fmt.Errorf("%w; this run is in %s", err, tmp)
		}
		old = tmp + ".old"
		if err := os.Rename(out, old); err != nil {
			return fmt.Errorf("moving the previous run aside: %w; this run is in %s", err, tmp)
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("%w; this run is in %s", err, tmp)
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

func writeInputs(out string, l *lab.Lab) error {
	b, err := yaml.Marshal(l.Spec)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "spec.yaml"), b, 0o644); err != nil {
		return err
	}
	tf, err := os.Create(filepath.Join(out, "topology.json"))
	if err != nil {
		return err
	}
	defer tf.Close()
	return l.Graph.WriteJSON(tf)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// printSummary prints a run's headline numbers; with quiet only an unfaithful verdict (on stderr), which
// must not pass unseen.
func printSummary(cmd *cobra.Command, out string, s *report.Summary, quiet bool) {
	if quiet {
		if s.Fidelity.Monitored() && !s.Fidelity.Faithful {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: fidelity: UNFAITHFUL: %s\n", out, s.Fidelity.Reason)
		}
		return
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "%s: %d/%d flows completed\n", out, s.Flows.Completed, s.Flows.Total)
	fmt.Fprintf(w, "  FCT avg %.3g s  p50 %.3g  p99 %.3g  p99.9 %.3g\n", s.FCT.Avg, s.FCT.P50, s.FCT.P99, s.FCT.P999)
	fmt.Fprintf(w, "  slowdown avg %.3g  p50 %.3g  p99 %.3g\n", s.Slowdown.Avg, s.Slowdown.P50, s.Slowdown.P99)
	fmt.Fprintf(w, "  goodput per flow (all flows) %.4g Gb/s  aggregate (delivered bytes / %.3g s) %.4g Gb/s\n",
		s.Goodput.PerFlowAllBps/1e9, s.Goodput.WindowS, s.Goodput.AggregateBps/1e9)
	fmt.Fprintf(w, "  drops lossless %d lossy %d  retransmissions %d  pauses sent %d\n",
		s.Drops.Lossless, s.Drops.Lossy, s.Retransmissions, s.Pauses.Sent)
	if s.Fidelity.Monitored() {
		verdict := "faithful"
		if !s.Fidelity.Faithful {
			verdict = "UNFAITHFUL (the numbers are the machine's, not the fabric's)"
		}
		fmt.Fprintf(w, "  fidelity: %s: %s\n", verdict, s.Fidelity.Reason)
	}
	if s.WindowGoodputBps > 0 {
		fmt.Fprintf(w, "  window goodput %.4g Gb/s\n", s.WindowGoodputBps/1e9)
	}
	if s.Deadlock.Detected {
		fmt.Fprintf(w, "  DEADLOCK at %.3g s: %v\n", s.Deadlock.AtS, s.Deadlock.Cycle)
	}
	for _, v := range s.Violations {
		fmt.Fprintf(w, "  VIOLATION: %s\n", v)
	}
	if b := s.ReorderBuffer; b.Held > 0 {
		fmt.Fprintf(w, "  reorder buffer: %d packets held, peak %d packets in one flow\n", b.Held, b.PeakPackets)
	}
	if s.Reordered > 0 {
		fmt.Fprintf(w, "  REORDERED: %d packets in %d flows\n", s.Reordered, len(s.Reorders))
	}
	for i, r := range s.Reorders {
		if i == 3 {
			fmt.Fprintf(w, "  REORDERING: ... (%d more flows in summary.json)\n", len(s.Reorders)-i)
			break
		}
		fmt.Fprintf(w, "  REORDERING: %s\n", r)
	}
}
