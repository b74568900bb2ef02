package main

import (
	"context"
	"fmt"
	"io"
	"math"
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
	list  bool   // --list: print the tree's runs with their indices
	json  bool   // --json: --list as JSON
	index string // --index I (or env): run only run I of the tree
}

// plannedRun is one run of a tree: its index, a spec file's point (Spec nil until made) and the
// directory it writes.
type plannedRun struct {
	index int64
	file  string
	pt    spec.Point
	dir   string // relative to the tree
}

// multiRun says whether lab run's arguments ask for more than one run, i.e. a run tree with a manifest
// rather than one run directory (--list and --index always address a tree); for a single run it
// returns the spec it loaded to decide.
func multiRun(files []string) (bool, *spec.Spec, error) {
	if len(files) > 1 || sweepFlags.seeds > 1 || sweepFlags.seeds < 0 || len(sweepFlags.sets) > 0 ||
		sweepFlags.list || sweepFlags.index != "" {
		return true, nil, nil
	}
	s, err := spec.Load(files[0])
	if err != nil {
		return false, nil, err
	}
	// A single run goes on with the spec loaded here: loading it again was 1% of a fat-tree k=4 run.
	return s.Seeds > 1 || len(s.Sweep) > 0, s, nil
}

// treePlan is a tree's runs before any is made: each spec file's expansion, counted. A run is made
// (its spec decoded and checked) only when it is checked or run, one at a time, so nothing here grows
// with the number of runs.
type treePlan struct {
	files []string
	exps  []*spec.Expansion
	n     int64 // runs in all
	// netns is the first spec file found (while checking) to run on a backend other than virtual.
	netns, netnsBackend string
}

// planTree reads every spec file, counts the runs (axis sizes x seeds, per file, summed; saturating,
// never overflowing) and refuses a tree beyond the work budget's run count before any run is made.
func planTree(files []string) (*treePlan, error) {
	if sweepFlags.seeds < 0 {
		return nil, fmt.Errorf("--seeds %d: want how many seeds to run (1 or more)", sweepFlags.seeds)
	}
	if sweepFlags.jobs < 0 {
		return nil, fmt.Errorf("-j %d: want how many runs at once (1 or more)", sweepFlags.jobs)
	}
	axes, err := spec.ParseSets(sweepFlags.sets)
	if err != nil {
		return nil, usage(err) // a malformed --set, or a path or value given twice
	}
	b, err := workBudget()
	if err != nil {
		return nil, err
	}
	p := &treePlan{files: files}
	names := map[string]string{}
	var errs, sizes []string
	for _, f := range files {
		e, err := spec.Plan(f, axes, sweepFlags.seeds)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		name := e.Base.Name
		if other, dup := names[name]; dup {
			errs = append(errs, fmt.Sprintf("%s and %s are both named %q: a tree keeps runs apart by spec name", other, f, name))
			continue
		}
		names[name] = f
		p.exps = append(p.exps, e)
		if c := e.Count(); p.n > math.MaxInt64-c {
			p.n = math.MaxInt64
		} else {
			p.n += c
		}
		sizes = append(sizes, countText(e))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	if float64(p.n) > b.Runs {
		return nil, fmt.Errorf("%s runs (%s), more than the budget of %s runs: every run is checked before the first starts; raise it with --budget runs=N if you mean it, or sweep fewer values (--set, sweep:) or seeds (--seeds, seeds:)",
			fmtRuns(float64(p.n)), strings.Join(sizes, "; "), fmtRuns(b.Runs))
	}
	return p, nil
}

// countText says how a spec file's run count is made: "s.yaml: 1000 values of workload.0.size x 1000 seeds".
func countText(e *spec.Expansion) string {
	var parts []string
	for _, a := range e.Axes {
		parts = append(parts, fmt.Sprintf("%d values of %s", len(a.Values), a.Path))
	}
	parts = append(parts, fmt.Sprintf("%d seeds", e.Seeds()))
	return e.Path + ": " + strings.Join(parts, " x ")
}

func fmtRuns(v float64) string {
	if v >= math.MaxInt64 {
		return "more than 9.2e18"
	}
	if v < 1e7 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// locate is run i's spec file (k) and its index among that file's runs.
func (p *treePlan) locate(i int64) (k int, j int64) {
	j = i
	for ; k < len(p.exps)-1 && j >= p.exps[k].Count(); k++ {
		j -= p.exps[k].Count()
	}
	return k, j
}

// at is run i without its spec: file, settings, seed and directory.
func (p *treePlan) at(i int64) plannedRun {
	k, j := p.locate(i)
	e := p.exps[k]
	set, seed := e.Setting(j)
	r := plannedRun{index: i, file: p.files[k], pt: spec.Point{Set: set, Seed: seed}}
	var parts []string
	if len(p.files) > 1 {
		parts = append(parts, e.Base.Name)
	}
	if l := r.pt.Label(); l != "" {
		parts = append(parts, strings.NewReplacer("/", "_", string(os.PathSeparator), "_").Replace(l))
	}
	parts = append(parts, "seed-"+strconv.FormatInt(seed, 10))
	r.dir = filepath.Join(parts...)
	return r
}

// make is run i with its spec made (decoded, defaulted, validated); an error names the file and the
// run's settings.
func (p *treePlan) make(i int64) (plannedRun, error) {
	r := p.at(i)
	k, j := p.locate(i)
	pt, err := p.exps[k].Point(j)
	if err != nil {
		return r, err
	}
	r.pt = pt
	return r, nil
}

// maxFailingRuns is how many failing runs the check reports before it stops: a bad value fails every
// seed alike.
const maxFailingRuns = 20

// planRuns plans the tree and checks every run as lab run would (spec, lab assembly, backend, expect:
// names, sampling) before anything runs, one run at a time; ctx (Ctrl-C, SIGTERM) stops it.
func planRuns(ctx context.Context, files []string) (*treePlan, error) {
	p, err := planTree(files)
	if err != nil {
		return nil, err
	}
	var errs []string
	failing := int64(0)
	for i := int64(0); i < p.n; i++ {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("interrupted while checking the runs (%d of %d checked); nothing ran", i, p.n)
		}
		r, err := p.make(i)
		if err == nil {
			err = checkPlanned(r)
		}
		if err != nil {
			errs = append(errs, err.Error())
			if failing++; failing == maxFailingRuns && i+1 < p.n {
				errs = append(errs, fmt.Sprintf("(stopped checking after %d failing runs, %d of %d checked)", failing, i+1, p.n))
				break
			}
			continue
		}
		if r.pt.Spec.Backend != "virtual" && p.netns == "" {
			p.netns, p.netnsBackend = r.file, r.pt.Spec.Backend
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return p, nil
}

// checkPlanned is checkRun on a made run, its errors naming the file and the run's settings.
func checkPlanned(r plannedRun) error {
	err := checkRun(r.pt.Spec)
	if err == nil {
		return nil
	}
	what := "seed " + strconv.FormatInt(r.pt.Seed, 10)
	if l := r.pt.Label(); l != "" {
		what = l + ", " + what
	}
	var lines []string
	for _, line := range strings.Split(err.Error(), "\n") {
		lines = append(lines, fmt.Sprintf("%s (%s): %s", r.file, what, line))
	}
	return fmt.Errorf("%s", strings.Join(lines, "\n"))
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
	if err := checkBackendFlags(s); err != nil {
		return err
	}
	l, err := buildLab(s)
	if err != nil {
		return err
	}
	if err := checkSampling(l); err != nil {
		return err
	}
	if err := checkHasFlows(l); err != nil {
		return err
	}
	return checkDependencies(s.Backend, l)
}

// runJobs is how many runs go at once: -j if given (never above the cores), else the cores. netns
// runs are timing-sensitive (each needs the CPU to keep its schedule), so they go one at a time, and
// asking for more is refused.
func runJobs(p *treePlan, asked int) (int, error) {
	if p.netns != "" {
		if asked > 1 {
			return 0, fmt.Errorf("-j %d: %s runs on backend %s, whose runs are timing-sensitive and run one at a time; use -j 1", asked, p.netns, p.netnsBackend)
		}
		return 1, nil
	}
	if cores := runtime.NumCPU(); asked <= 0 || asked > cores {
		asked = cores
	}
	return int(max(1, min(int64(asked), p.n))), nil
}

// runTree runs every planned run into out, jobs at a time, and writes out/manifest.json (before the
// runs, then again with each run's outcome) and each run's status file. A failed run does not stop the
// others; Ctrl-C does.
func runTree(ctx context.Context, w io.Writer, p *treePlan, out string, jobs int, quiet bool) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	m := treeManifest(p, jobs)
	// A tree already here is replaced only by the same tree (a re-run): another tree's runs would be
	// mixed with this one's, or its manifest silently replaced.
	if _, err := os.Stat(filepath.Join(out, report.ManifestFile)); err == nil {
		if err := sameTree(out, m); err != nil {
			return err
		}
	}
	// Status files of an earlier tree in out would speak for runs this one has not run yet.
	for _, r := range m.Runs {
		if err := os.Remove(report.StatusPath(out, r.Dir)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	path := filepath.Join(out, report.ManifestFile)
	if err := writeJSONAtomic(path, m); err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(w, "lab run: %d runs (%d specs x %d sweep points x %d seeds), %d at a time, into %s\n",
			p.n, len(p.files), p.n/max(1, int64(m.Seeds))/int64(max(1, len(p.files))), m.Seeds, jobs, out)
	}
	var mu sync.Mutex
	next, done, failed := int64(0), 0, 0
	start := time.Now()
	var wg sync.WaitGroup
	for j := 0; j < jobs; j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= p.n || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				r, st, sum, err := runOne(ctx, p, out, i)
				mu.Lock()
				mr := &m.Runs[i]
				mr.Status, mr.Error, mr.WallS = st.Status, st.Error, st.WallS
				if st.Status != "done" {
					failed++
				}
				done++
				if !quiet {
					fmt.Fprintln(w, runLine(fmt.Sprintf("[%d/%d]", done, p.n), r, st, sum, err))
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
	if err := writeJSONAtomic(path, m); err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(w, "lab run: %d runs in %.1f s; manifest %s; aggregate with: lab report %s\n", done, time.Since(start).Seconds(), path, out)
	}
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted: %d of %d runs complete, the others partial or not run (manifest.json); results in %s", done-failed, p.n, out)
	case failed > 0:
		return fmt.Errorf("%d of %d runs failed (manifest.json says which and why)", failed, p.n)
	}
	return nil
}

// runLine is the line lab run prints for a finished run of a tree.
func runLine(prefix string, r plannedRun, st *report.RunStatus, sum *report.Summary, err error) string {
	line := fmt.Sprintf("lab run: %s %s", prefix, r.dir)
	switch {
	case err != nil:
		line += ": " + err.Error()
	case sum != nil:
		line += fmt.Sprintf(": %d/%d flows, FCT avg %.3g s (%.1f s wall)", sum.Flows.Completed, sum.Flows.Total, sum.FCT.Avg, st.WallS)
	}
	if st.Status == "unfaithful" {
		line += ": UNFAITHFUL: " + st.Error
	}
	return line
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
