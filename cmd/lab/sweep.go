package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/report"
)

// sweepFlags are lab run's seeds-and-sweeps flags.
var sweepFlags struct {
	seeds int
	sets  []string
	jobs  int
}

// plannedRun is one run of a tree: a spec file's point and the directory it writes.
type plannedRun struct {
	file string
	pt   spec.Point
	dir  string // relative to the tree
}

// multiRun says whether lab run's arguments ask for more than one run, i.e. a run tree with a manifest
// rather than one run directory; for a single run it returns the spec it loaded to decide.
func multiRun(files []string) (bool, *spec.Spec, error) {
	if len(files) > 1 || sweepFlags.seeds > 1 || sweepFlags.seeds < 0 || len(sweepFlags.sets) > 0 {
		return true, nil, nil
	}
	s, err := spec.Load(files[0])
	if err != nil {
		return false, nil, err
	}
	// A single run goes on with the spec loaded here: loading it again was 1% of a fat-tree k=4 run.
	return s.Seeds > 1 || len(s.Sweep) > 0, s, nil
}

// planRuns expands every spec file into its runs and checks each one as lab run would (spec, lab
// assembly, backend, expect: names) before anything runs.
func planRuns(files []string) ([]plannedRun, error) {
	if sweepFlags.seeds < 0 {
		return nil, fmt.Errorf("--seeds %d: want how many seeds to run (1 or more)", sweepFlags.seeds)
	}
	if sweepFlags.jobs < 0 {
		return nil, fmt.Errorf("-j %d: want how many runs at once (1 or more)", sweepFlags.jobs)
	}
	axes, err := spec.ParseSets(sweepFlags.sets)
	if err != nil {
		return nil, err
	}
	var runs []plannedRun
	names := map[string]string{}
	var errs []string
	for _, f := range files {
		pts, err := spec.Expand(f, axes, sweepFlags.seeds)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		name := pts[0].Spec.Name
		if other, dup := names[name]; dup {
			errs = append(errs, fmt.Sprintf("%s and %s are both named %q: a tree keeps runs apart by spec name", other, f, name))
			continue
		}
		names[name] = f
		for _, pt := range pts {
			runs = append(runs, plannedRun{file: f, pt: pt})
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	for i := range runs {
		r := &runs[i]
		var parts []string
		if len(files) > 1 {
			parts = append(parts, r.pt.Spec.Name)
		}
		if l := r.pt.Label(); l != "" {
			parts = append(parts, strings.NewReplacer("/", "_", string(os.PathSeparator), "_").Replace(l))
		}
		parts = append(parts, "seed-"+strconv.FormatInt(r.pt.Seed, 10))
		r.dir = filepath.Join(parts...)
		if err := checkRun(r.pt.Spec); err != nil {
			what := "seed " + strconv.FormatInt(r.pt.Seed, 10)
			if l := r.pt.Label(); l != "" {
				what = l + ", " + what
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				errs = append(errs, fmt.Sprintf("%s (%s): %s", r.file, what, line))
			}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return runs, nil
}

// checkRun is everything runSpec refuses before a run starts, without running: the lab assembles, the
// backend exists and can honour the schedule, and every expect: key names a metric the report knows.
func checkRun(s *spec.Spec) error {
	if err := report.CheckExpect(s.Expect); err != nil {
		return err
	}
	if _, ok := backends[s.Backend]; !ok {
		return fmt.Errorf("backend: %q runs are not available in this build", s.Backend)
	}
	l, err := buildLab(s)
	if err != nil {
		return err
	}
	if err := checkSampling(l); err != nil {
		return err
	}
	return checkDependencies(s.Backend, l)
}

// runJobs is how many runs go at once: -j if given (never above the cores), else the cores. netns
// runs are timing-sensitive (each needs the CPU to keep its schedule), so they go one at a time, and
// asking for more is refused.
func runJobs(runs []plannedRun, asked int) (int, error) {
	cores := runtime.NumCPU()
	for _, r := range runs {
		if r.pt.Spec.Backend != "virtual" {
			if asked > 1 {
				return 0, fmt.Errorf("-j %d: %s runs on backend %s, whose runs are timing-sensitive and run one at a time; use -j 1", asked, r.file, r.pt.Spec.Backend)
			}
			return 1, nil
		}
	}
	if asked <= 0 || asked > cores {
		asked = cores
	}
	return max(1, min(asked, len(runs))), nil
}

// runTree runs every planned run into out, jobs at a time, and writes out/manifest.json (before the
// runs, then again with each run's outcome). A failed run does not stop the others; Ctrl-C does.
func runTree(ctx context.Context, w io.Writer, files []string, runs []plannedRun, out string, jobs int, quiet bool) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	// manifest.json: which run directory has which spec, seed and sweep values, and how each ended;
	// lab report reads it to aggregate seeds and plot against swept values.
	m := &report.Manifest{Specs: files, Jobs: jobs}
	seeds := map[int64]bool{}
	axes := map[string][]string{}
	var axisOrder []string
	for _, r := range runs {
		seeds[r.pt.Seed] = true
		for _, st := range r.pt.Set {
			if _, ok := axes[st.Path]; !ok {
				axisOrder = append(axisOrder, st.Path)
			}
			if !contains(axes[st.Path], st.Value) {
				axes[st.Path] = append(axes[st.Path], st.Value)
			}
		}
		var set []report.Setting
		for _, st := range r.pt.Set {
			set = append(set, report.Setting{Path: st.Path, Value: st.Value})
		}
		m.Runs = append(m.Runs, report.ManifestRun{Dir: r.dir, Name: r.pt.Spec.Name, Spec: r.file, Seed: r.pt.Seed,
			Set: set, Status: "pending"})
	}
	m.Seeds = len(seeds)
	for _, p := range axisOrder {
		m.Axes = append(m.Axes, report.ManifestAxis{Path: p, Values: axes[p]})
	}
	path := filepath.Join(out, report.ManifestFile)
	if err := writeJSON(path, m); err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(w, "lab run: %d runs (%d specs x %d sweep points x %d seeds), %d at a time, into %s\n",
			len(runs), len(files), len(runs)/max(1, m.Seeds)/max(1, len(files)), m.Seeds, jobs, out)
	}
	var mu sync.Mutex
	next, done, failed := 0, 0, 0
	start := time.Now()
	var wg sync.WaitGroup
	for j := 0; j < jobs; j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= len(runs) || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				r := runs[i]
				t0 := time.Now()
				sum, res, err := runSpec(ctx, r.pt.Spec, filepath.Join(out, r.dir))
				mu.Lock()
				mr := &m.Runs[i]
				mr.WallS = time.Since(t0).Seconds()
				switch {
				case err != nil && ctx.Err() != nil:
					mr.Status, mr.Error = "interrupted", err.Error()
					failed++
				case err != nil:
					mr.Status, mr.Error = "failed", err.Error()
					failed++
				case res != nil && res.Fidelity != nil && !res.Fidelity.Faithful:
					// The numbers are not the fabric's: kept on disk, left out of the aggregate.
					mr.Status, mr.Error = "unfaithful", res.Fidelity.Reason
					failed++
				default:
					mr.Status = "done"
				}
				done++
				if !quiet {
					line := fmt.Sprintf("lab run: [%d/%d] %s", done, len(runs), r.dir)
					if err != nil {
						line += ": " + err.Error()
					} else {
						line += fmt.Sprintf(": %d/%d flows, FCT avg %.3g s (%.1f s wall)", sum.Flows.Completed, sum.Flows.Total, sum.FCT.Avg, mr.WallS)
					}
					fmt.Fprintln(w, line)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for i := range m.Runs {
		if m.Runs[i].Status == "pending" {
			m.Runs[i].Status = "not run"
		}
	}
	if err := writeJSON(path, m); err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(w, "lab run: %d runs in %.1f s; manifest %s; aggregate with: lab report %s\n", done, time.Since(start).Seconds(), path, out)
	}
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted: %d of %d runs complete, the others partial or not run (manifest.json); results in %s", done-failed, len(runs), out)
	case failed > 0:
		return fmt.Errorf("%d of %d runs failed (manifest.json says which and why)", failed, len(runs))
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
