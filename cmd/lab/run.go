package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/report"
)

func init() {
	var out string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "run SPEC -o DIR",
		Short: "run an experiment spec and write its run directory",
		Long: `Run an experiment spec (YAML) and write the run directory: the resolved spec, the topology,
summary.json, fct.txt and pfc.txt (HPCC formats), flows.csv, drops and pauses. Ctrl-C stops the run and
keeps what was measured so far.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := spec.Load(args[0])
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join("results", s.Name)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			showProgress = !quiet
			sum, err := runSpec(ctx, s, out)
			if err != nil {
				return err
			}
			if !quiet {
				printSummary(cmd, out, sum)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "run directory (default results/<spec name>)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing on success (and no progress bar)")
	cmd.Flags().Var(&sampleEvery, "sample-every", "record every switch port's queue depth at this period (e.g. 10us) into queues.csv, for the queue-depth plot")
	cmd.Flags().BoolVar(&keepRunningOnDeadlock, "keep-running-on-deadlock", false,
		"virtual backend: run to the spec's duration after the deadlock monitor fires (default: stop there)")
	root.AddCommand(cmd)
}

// A backend runs a built lab and returns its records. Backends register by spec name in their own files.
type backend func(ctx context.Context, l *lab.Lab, out string) (*records.Log, backendResult, error)

type backendResult struct {
	End                          clock.Time // engine time at the end
	Dilation                     float64
	Events                       uint64
	AllDone, TimedOut, Cancelled bool
	Deadlock                     report.DeadlockVerdict
	Fidelity                     *report.Fidelity
}

var backends = map[string]backend{"virtual": runVirtual}

func runVirtual(ctx context.Context, l *lab.Lab, _ string) (*records.Log, backendResult, error) {
	f, err := virtual.New(l)
	if err != nil {
		return nil, backendResult{}, err
	}
	f.StopOnDeadlock = !keepRunningOnDeadlock
	bar := newRunProgress(!showProgress, l.End)
	f.Progress = bar.update
	res := f.Run(ctx)
	bar.finish()
	return f.Log, backendResult{End: res.End, Dilation: 1, Events: res.Events, AllDone: res.AllDone,
		TimedOut: res.TimedOut, Cancelled: res.Cancelled, Deadlock: res.Deadlock}, nil
}

// keepRunningOnDeadlock (--keep-running-on-deadlock) lets a virtual run go on to its end after the
// deadlock monitor fires, e.g. to plot the collapse; by default the run stops at detection.
var keepRunningOnDeadlock bool

// runSpec builds the lab, runs it on the spec's backend and writes the run directory.
func runSpec(ctx context.Context, s *spec.Spec, out string) (*report.Summary, error) {
	l, err := lab.Build(s)
	if err != nil {
		return nil, err
	}
	if sampleEvery > 0 {
		for i := range l.Switches {
			l.Switches[i].Config.SampleEvery = sampleEvery.Clock()
		}
	}
	run, ok := backends[s.Backend]
	if !ok {
		return nil, fmt.Errorf("backend: %q runs are not available in this build", s.Backend)
	}
	if err := checkDependencies(s.Backend, l); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	if err := writeInputs(out, l); err != nil {
		return nil, err
	}
	if err := writeSchedule(out, l); err != nil {
		return nil, err
	}
	wall := time.Now()
	log, res, err := run(ctx, l, out)
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(wall)
	meta := report.Meta{Dilation: res.Dilation, Duration: res.End, Graph: l.Graph, Deadlock: res.Deadlock, Fidelity: res.Fidelity}
	sum, err := report.WriteRunDir(out, log, meta)
	if err != nil {
		return nil, err
	}
	if err := writeSamples(out, log, meta); err != nil {
		return nil, err
	}
	info := map[string]any{
		"backend": s.Backend, "events": res.Events, "engine_s": res.End.Seconds(), "wall_s": elapsed.Seconds(),
		"dilation": res.Dilation, "all_done": res.AllDone, "timed_out": res.TimedOut, "cancelled": res.Cancelled,
	}
	if err := writeJSON(filepath.Join(out, "run.json"), info); err != nil {
		return nil, err
	}
	if res.Cancelled {
		return sum, fmt.Errorf("interrupted at %v engine time; partial results in %s", res.End, out)
	}
	return sum, nil
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

func printSummary(cmd *cobra.Command, out string, s *report.Summary) {
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "%s: %d/%d flows completed\n", out, s.Flows.Completed, s.Flows.Total)
	fmt.Fprintf(w, "  FCT avg %.3g s  p50 %.3g  p99 %.3g  p99.9 %.3g\n", s.FCT.Avg, s.FCT.P50, s.FCT.P99, s.FCT.P999)
	fmt.Fprintf(w, "  slowdown avg %.3g  p50 %.3g  p99 %.3g\n", s.Slowdown.Avg, s.Slowdown.P50, s.Slowdown.P99)
	fmt.Fprintf(w, "  throughput %.4g Gb/s  drops lossless %d lossy %d  retransmissions %d  pauses sent %d\n",
		s.ThroughputBps/1e9, s.Drops.Lossless, s.Drops.Lossy, s.Retransmissions, s.Pauses.Sent)
	if s.Deadlock.Detected {
		fmt.Fprintf(w, "  DEADLOCK at %.3g s: %v\n", s.Deadlock.AtS, s.Deadlock.Cycle)
	}
	for _, v := range s.Violations {
		fmt.Fprintf(w, "  VIOLATION: %s\n", v)
	}
}
