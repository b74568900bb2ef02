package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/fabriclab/fabriclab/bounded"
	"github.com/fabriclab/fabriclab/outfile"
	"github.com/fabriclab/fabriclab/report"
)

// A run tree can be filled by many processes at once, each running one run (lab run --index I, as a
// Kubernetes Indexed Job's pods or a Slurm array's tasks do): the manifest is the same plan in every
// process and is created once (by hard link, which fails if it exists), never rewritten by them; each
// run's outcome is its own status file beside its directory, written by rename; the run directory is
// itself written elsewhere and renamed into place. lab report reads the status files.

// runTreeCommand is lab run on a tree: --list prints its runs, --index I runs one of them, and
// otherwise every run goes, jobs at a time. Flags that do not go together and an index the tree does not
// have are usage errors (exit 2). profiles starts --cpuprofile and --memprofile (once the
// runs are checked) and returns what stops them.
func runTreeCommand(ctx context.Context, w io.Writer, files []string, out string, quiet bool, profiles func() (func(), error)) error {
	if sweepFlags.json && !sweepFlags.list {
		return usage(fmt.Errorf("--json: only with --list (a run's results are its directory's summary.json)"))
	}
	if sweepFlags.list && sweepFlags.index != "" {
		return usage(fmt.Errorf("--list and --index: give one of them"))
	}
	if sweepFlags.index != "" && sweepFlags.jobs > 1 {
		return usage(fmt.Errorf("-j %d: --index runs one run; run more processes for more at once", sweepFlags.jobs))
	}
	if sweepFlags.list || sweepFlags.index != "" {
		p, err := planTree(files)
		if err != nil {
			return err
		}
		if sweepFlags.list {
			return listRuns(w, p, sweepFlags.json)
		}
		i, err := runIndex(sweepFlags.index, p.n)
		if err != nil {
			return usage(err)
		}
		if out == "" {
			out = filepath.Join("results", p.exps[0].Base.Name)
		}
		if err := checkTreeDir(out); err != nil {
			return err
		}
		stop, err := profiles()
		if err != nil {
			return err
		}
		defer stop()
		return runOneOfTree(ctx, w, p, out, i, quiet)
	}
	p, err := planRuns(ctx, files)
	if err != nil {
		return err
	}
	jobs, err := runJobs(p, sweepFlags.jobs)
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Join("results", p.exps[0].Base.Name)
	}
	if err := checkTreeDir(out); err != nil {
		return err
	}
	showProgress = false // several runs share the terminal: one line per finished run instead
	stop, err := profiles()
	if err != nil {
		return err
	}
	defer stop()
	return runTree(ctx, w, p, out, jobs, quiet)
}

// indexEnv are the variables --index env reads, in order: a Kubernetes Indexed Job's and a Slurm job
// array's task index.
var indexEnv = []string{"JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"}

// runIndex reads --index: a run index in [0, n), or env for the first of indexEnv that is set.
func runIndex(arg string, n int64) (int64, error) {
	what := "--index " + arg
	if arg == "env" {
		arg = ""
		for _, v := range indexEnv {
			if x, ok := os.LookupEnv(v); ok {
				arg, what = x, fmt.Sprintf("--index env (%s=%s)", v, x)
				break
			}
		}
		if arg == "" {
			return 0, fmt.Errorf("--index env: none of %v is set (they are set in a Kubernetes Indexed Job and a Slurm job array)", indexEnv)
		}
	}
	i, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || i < 0 {
		return 0, fmt.Errorf("%s: want a run index, 0 to %d (lab run --list prints them), or env", what, n-1)
	}
	if i >= n {
		return 0, fmt.Errorf("%s: the tree has %d runs, indices 0 to %d (lab run --list prints them)", what, n, n-1)
	}
	return i, nil
}

// listRuns prints every run of the tree with its index: "INDEX<tab>DIR" lines, or JSON.
func listRuns(w io.Writer, p *treePlan, asJSON bool) error {
	if !asJSON {
		for i := int64(0); i < p.n; i++ {
			if _, err := fmt.Fprintf(w, "%d\t%s\n", i, p.at(i).dir); err != nil {
				return err
			}
		}
		return nil
	}
	type listed struct {
		Index int64            `json:"index"`
		Dir   string           `json:"dir"`
		Name  string           `json:"name"`
		Spec  string           `json:"spec"`
		Seed  int64            `json:"seed"`
		Set   []report.Setting `json:"set,omitempty"`
	}
	out := struct {
		Runs  int64    `json:"runs"`
		Specs []string `json:"specs"`
		List  []listed `json:"list"`
	}{Runs: p.n, Specs: p.files}
	for i, r := range treeManifest(p, 0).Runs {
		out.List = append(out.List, listed{Index: int64(i), Dir: r.Dir, Name: r.Name, Spec: r.Spec, Seed: r.Seed, Set: r.Set})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// runOneOfTree runs run i of the tree into out, among other processes running others: it creates the
// manifest if no process has yet (refusing a tree of a different plan), and leaves the run's status.
func runOneOfTree(ctx context.Context, w io.Writer, p *treePlan, out string, i int64, quiet bool) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := ensureManifest(out, treeManifest(p, 0)); err != nil {
		return err
	}
	r, st, sum, err := runOne(ctx, p, out, i)
	if !quiet || err != nil || st.Status != "done" {
		fmt.Fprintln(w, runLine(fmt.Sprintf("[run %d of %d]", i, p.n), r, st, sum, nil))
	}
	switch {
	case err != nil:
		return fmt.Errorf("run %d (%s): %w", i, r.dir, err)
	case st.Status != "done":
		return fmt.Errorf("run %d (%s): %s: %s", i, r.dir, st.Status, st.Error)
	}
	return nil
}

// treeManifest is the tree's manifest.json before any run: which run directory has which spec, seed
// and sweep values (every run pending), and the swept axes; lab report reads it to aggregate seeds and
// plot against swept values.
func treeManifest(p *treePlan, jobs int) *report.Manifest {
	m := &report.Manifest{Specs: p.files, Jobs: jobs}
	seeds := map[int64]bool{}
	for _, e := range p.exps {
		for k := int64(0); k < e.Seeds(); k++ {
			_, s := e.Setting(k)
			seeds[s] = true
		}
		for _, a := range e.Axes {
			ax := -1
			for j := range m.Axes {
				if m.Axes[j].Path == a.Path {
					ax = j
				}
			}
			if ax < 0 {
				m.Axes = append(m.Axes, report.ManifestAxis{Path: a.Path})
				ax = len(m.Axes) - 1
			}
			for _, v := range a.Values {
				if !contains(m.Axes[ax].Values, v) {
					m.Axes[ax].Values = append(m.Axes[ax].Values, v)
				}
			}
		}
	}
	m.Seeds = len(seeds)
	for i := int64(0); i < p.n; i++ {
		r := p.at(i)
		var set []report.Setting
		for _, st := range r.pt.Set {
			set = append(set, report.Setting{Path: st.Path, Value: st.Value})
		}
		k, _ := p.locate(i)
		m.Runs = append(m.Runs, report.ManifestRun{Dir: r.dir, Name: p.exps[k].Base.Name, Spec: r.file, Seed: r.pt.Seed,
			Set: set, Status: "pending"})
	}
	return m
}

// ensureManifest creates out/manifest.json as m unless it exists; an existing one must list the same
// runs (directories, names, seeds, settings) in the same order, or the indices would mean other runs.
func ensureManifest(out string, m *report.Manifest) error {
	path := filepath.Join(out, report.ManifestFile)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	// Policy New creates it by link(2), which fails if it exists: exactly one process creates it.
	err = outfile.WriteBytes(path, outfile.New, append(b, '\n'))
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	return sameTree(out, m)
}

// sameTree refuses out when the manifest it holds describes another tree than m: other runs (directories,
// spec names, seeds, settings) or another order, so indices or run directories would mean other runs.
// A manifest that cannot be read is refused too (nothing of it is replaced).
func sameTree(out string, m *report.Manifest) error {
	path := filepath.Join(out, report.ManifestFile)
	old, err := bounded.ReadFile(path, bounded.Summary)
	if err != nil {
		return err
	}
	var have report.Manifest
	if err := json.Unmarshal(old, &have); err != nil || len(have.Runs) == 0 {
		if err == nil {
			err = errors.New("no runs")
		}
		return fmt.Errorf("-o %s: its manifest.json is not a run tree's (%v): refusing to replace it; give each tree its own directory", out, err)
	}
	if len(have.Runs) != len(m.Runs) {
		return fmt.Errorf("-o %s holds a tree of %d runs, this one has %d: give each tree its own directory", out, len(have.Runs), len(m.Runs))
	}
	for i := range m.Runs {
		a, b := have.Runs[i], m.Runs[i]
		var what string
		switch {
		case a.Dir != b.Dir:
			what = fmt.Sprintf("its run %d is %s, this tree's is %s", i, a.Dir, b.Dir)
		case a.Name != b.Name:
			what = fmt.Sprintf("its run %d (%s) is of spec %q, this tree's of spec %q", i, a.Dir, a.Name, b.Name)
		case a.Seed != b.Seed:
			what = fmt.Sprintf("its run %d (%s) has seed %d, this tree's seed %d", i, a.Dir, a.Seed, b.Seed)
		case report.SetLabel(a.Set) != report.SetLabel(b.Set):
			what = fmt.Sprintf("its run %d (%s) sets %q, this tree's %q", i, a.Dir, report.SetLabel(a.Set), report.SetLabel(b.Set))
		default:
			continue
		}
		return fmt.Errorf("-o %s holds a different tree: %s; give each tree its own directory", out, what)
	}
	return nil
}

// runOne makes run i and runs it into its directory of out, its status file saying running (with the
// host, the process and the start time) until it says how the run ended. err is the run's error; a
// status file that cannot be written is an error too.
func runOne(ctx context.Context, p *treePlan, out string, i int64) (plannedRun, *report.RunStatus, *report.Summary, error) {
	r := p.at(i)
	host, _ := os.Hostname()
	st := &report.RunStatus{Index: i, Dir: r.dir, Status: "running", Host: host, PID: os.Getpid(), Started: time.Now().UTC()}
	unlock, err := lockRun(out, r.dir)
	if err != nil {
		// Another process has this run: its status file is its own.
		st.Status, st.Error = "failed", err.Error()
		return r, st, nil, err
	}
	defer unlock()
	if err := writeStatus(out, st); err != nil {
		st.Status, st.Error = "failed", err.Error()
		return r, st, nil, err
	}
	var sum *report.Summary
	var res *backendResult
	made, err := p.make(i)
	if err == nil {
		r = made
		err = report.CheckExpect(r.pt.Spec.Expect)
	}
	if err == nil {
		sum, res, err = runSpec(ctx, r.pt.Spec, filepath.Join(out, r.dir))
	}
	st.Ended = time.Now().UTC()
	st.WallS = st.Ended.Sub(st.Started).Seconds()
	switch {
	case err != nil && ctx.Err() != nil:
		st.Status, st.Error = "interrupted", err.Error()
	case err != nil:
		st.Status, st.Error = "failed", err.Error()
	case res != nil && res.Fidelity != nil && !res.Fidelity.Faithful:
		// The numbers are not the fabric's: kept on disk, left out of the aggregate.
		st.Status, st.Error = "unfaithful", res.Fidelity.Reason
	default:
		st.Status = "done"
	}
	if werr := writeStatus(out, st); werr != nil && err == nil {
		st.Status, st.Error = "failed", werr.Error()
		err = werr
	}
	return r, st, sum, err
}

// lockRun takes run dir's lock, a hidden file beside it (.NAME.lock), so that no two processes run the
// same run at once (a Kubernetes Indexed Job can start a replacement pod for an index before the old one
// is gone; a user can submit an index twice): the second is refused, leaving the first's run and
// status alone. flock locks are seen by every client of NFSv4 and CephFS, where shared trees live.
func lockRun(out, dir string) (unlock func(), err error) {
	path := report.LockPath(out, dir)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	// lab report and lab clean probe the lock for an instant (RunStatus.Orphaned): a few tries.
	for try := 0; ; try++ {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || try == 10 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is being run by another process (%s is locked); not run twice at once", dir, path)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// writeStatus writes a run's status file (atomically).
func writeStatus(out string, st *report.RunStatus) error {
	path := report.StatusPath(out, st.Dir)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeJSONAtomic(path, st)
}

// writeJSONAtomic writes v as JSON to path through outfile (a synced temporary renamed into place,
// the directory synced), so a reader (or a process killed mid-write) never sees half a file.
func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return outfile.WriteBytes(path, outfile.Replace, append(b, '\n'))
}
