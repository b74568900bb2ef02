package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fabriclab/fabriclab/report"
)

// TestMain lets a test run this package's lab command in a process of its own: the test binary with
// FABRICLAB_TEST_LAB=1 is lab.
func TestMain(m *testing.M) {
	if os.Getenv("FABRICLAB_TEST_LAB") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// lab runs the lab command in a new process with env added; it returns stdout, and fails the test
// unless the exit status is wantOK's.
func labProcess(t *testing.T, env []string, wantOK bool, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "FABRICLAB_TEST_LAB=1"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if (err == nil) != wantOK {
		t.Errorf("lab %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String() + stderr.String()
}

// TestIndexedTreeMatchesOneProcess: a 12-run tree (3 loads x 4 seeds) run as 12 lab run --index
// processes, 4 at a time in a shuffled order (two taking their index from a Kubernetes and a Slurm
// variable), reports the same aggregate, byte for byte, as the tree run in one process; before its last
// run the report aggregates the others and names the missing one.
func TestIndexedTreeMatchesOneProcess(t *testing.T) {
	dir := t.TempDir()
	a := writeTreeSpec(t, dir, "a", "virtual", "")
	tree := []string{"run", a, "--seeds", "4", "--set", "workload.0.load=0.3,0.5,0.7", "-q"}
	one, many := filepath.Join(dir, "one"), filepath.Join(dir, "many")
	labProcess(t, nil, true, append(tree, "-o", one)...)

	list := strings.Split(strings.TrimSpace(labProcess(t, nil, true, append(tree, "--list")...)), "\n")
	if len(list) != 12 || list[0] != "0\t"+filepath.Join("workload.0.load=0.3", "seed-1") || list[11] != "11\t"+filepath.Join("workload.0.load=0.7", "seed-4") {
		t.Fatalf("--list:\n%s", strings.Join(list, "\n"))
	}
	order := rand.New(rand.NewSource(time.Now().UnixNano())).Perm(11) // index 11 goes last, alone
	var wg sync.WaitGroup
	slots := make(chan struct{}, 4)
	for _, i := range order {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			args, env := append(tree, "-o", many, "--index", strconv.Itoa(i)), []string(nil)
			switch i {
			case 3:
				args[len(args)-1], env = "env", []string{"JOB_COMPLETION_INDEX=3"}
			case 7:
				args[len(args)-1], env = "env", []string{"SLURM_ARRAY_TASK_ID=7"}
			}
			labProcess(t, env, true, args...)
		}()
	}
	wg.Wait()
	partial := labProcess(t, nil, true, "report", many, "-o", filepath.Join(dir, "rep-partial"), "--no-plots")
	missing := filepath.Join(many, "workload.0.load=0.7", "seed-4")
	if !strings.Contains(partial, "not in the aggregate") || !strings.Contains(partial, missing+": not started") {
		t.Errorf("report before the last run does not name %s as not started:\n%s", missing, partial)
	}
	labProcess(t, nil, true, append(tree, "-o", many, "--index", "11")...)

	for _, d := range []string{one, many} {
		labProcess(t, nil, true, "report", d, "-o", filepath.Join(dir, "rep-"+filepath.Base(d)), "--no-plots")
	}
	for _, f := range []string{"aggregate.json", "aggregate.csv", "report.txt"} {
		b1, err1 := os.ReadFile(filepath.Join(dir, "rep-one", f))
		b2, err2 := os.ReadFile(filepath.Join(dir, "rep-many", f))
		if err1 != nil || err2 != nil || len(b1) == 0 || !bytes.Equal(b1, b2) {
			t.Errorf("%s differs between the tree run in one process and by 12 --index processes (%v %v)", f, err1, err2)
		}
	}
	var agg report.AggregateJSON
	if b, err := os.ReadFile(filepath.Join(dir, "rep-many", "aggregate.json")); err != nil || json.Unmarshal(b, &agg) != nil {
		t.Fatal(err)
	}
	if len(agg.Groups) != 3 || len(agg.Groups[0].Seeds) != 4 || len(agg.Skipped) != 0 {
		t.Errorf("aggregate: %d groups, %d seeds in the first, skipped %v", len(agg.Groups), len(agg.Groups[0].Seeds), agg.Skipped)
	}
	// Every run left its status: done, where and when; no temporary file is left in the tree.
	for i, line := range list {
		d := strings.SplitN(line, "\t", 2)[1]
		st, err := report.ReadRunStatus(many, d)
		if err != nil || st == nil || st.Status != "done" || st.Index != int64(i) || st.Host == "" || st.PID == 0 || st.Ended.Before(st.Started) {
			t.Errorf("%s: status %+v %v", d, st, err)
		}
	}
	filepath.Walk(many, func(p string, fi os.FileInfo, err error) error {
		if err == nil && (strings.Contains(fi.Name(), ".tmp-") || strings.Contains(fi.Name(), ".incomplete-")) {
			t.Errorf("left in the tree: %s", p)
		}
		return nil
	})
}

// TestIndexRefusals: an index out of range, env without the variables, --json without --list and a
// tree directory holding another plan's manifest are refused before anything runs.
func TestIndexRefusals(t *testing.T) {
	dir := t.TempDir()
	a := writeTreeSpec(t, dir, "a", "virtual", "")
	defer func() {
		sweepFlags.seeds, sweepFlags.sets, sweepFlags.index, sweepFlags.json, sweepFlags.jobs = 0, nil, "", false, 0
	}()
	sweepFlags.seeds, sweepFlags.sets = 2, []string{"workload.0.load=0.3,0.5"}
	out := filepath.Join(dir, "tree")
	t.Setenv("JOB_COMPLETION_INDEX", "")
	os.Unsetenv("JOB_COMPLETION_INDEX")
	t.Setenv("SLURM_ARRAY_TASK_ID", "")
	os.Unsetenv("SLURM_ARRAY_TASK_ID")
	for _, c := range []struct{ index, want string }{
		{"4", "--index 4: the tree has 4 runs, indices 0 to 3"},
		{"-1", "--index -1: want a run index, 0 to 3"},
		{"env", "--index env: none of [JOB_COMPLETION_INDEX SLURM_ARRAY_TASK_ID] is set"},
	} {
		sweepFlags.index = c.index
		err := runTreeCommand(context.Background(), &bytes.Buffer{}, []string{a}, out, true, noProfiles)
		if err == nil || !strings.Contains(err.Error(), c.want) || exitCode(err) != exitUsage {
			t.Errorf("--index %s: %v (exit %d), want %q (exit %d)", c.index, err, exitCode(err), c.want, exitUsage)
		}
	}
	sweepFlags.index, sweepFlags.jobs = "0", 2
	if err := runTreeCommand(context.Background(), &bytes.Buffer{}, []string{a}, out, true, noProfiles); err == nil || !strings.Contains(err.Error(), "-j 2: --index runs one run") {
		t.Errorf("-j 2 --index 0: %v", err)
	}
	sweepFlags.jobs = 0
	sweepFlags.index, sweepFlags.json = "", true
	if err := runTreeCommand(context.Background(), &bytes.Buffer{}, []string{a}, out, true, noProfiles); err == nil || !strings.Contains(err.Error(), "--json: only with --list") {
		t.Errorf("--json: %v", err)
	}
	sweepFlags.json = false
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s made by a refused command", out)
	}
	sweepFlags.index = "0"
	if err := runTreeCommand(context.Background(), &bytes.Buffer{}, []string{a}, out, true, noProfiles); err != nil {
		t.Fatal(err)
	}
	// A run another process holds is not run twice: refused, its status left to the holder.
	unlock, err := lockRun(out, filepath.Join("workload.0.load=0.3", "seed-2"))
	if err != nil {
		t.Fatal(err)
	}
	sweepFlags.index = "1"
	if err := runTreeCommand(context.Background(), &bytes.Buffer{}, []string{a}, out, true, noProfiles); err == nil || !strings.Contains(err.Error(), "is being run by another process") {
		t.Errorf("a run held by another process: %v", err)
	}
	if st, err := report.ReadRunStatus(out, filepath.Join("workload.0.load=0.3", "seed-2")); st != nil || err != nil {
		t.Errorf("status written for a run another process holds: %+v %v", st, err)
	}
	unlock()
	sweepFlags.seeds, sweepFlags.index = 3, "1"
	if err := runTreeCommand(context.Background(), &bytes.Buffer{}, []string{a}, out, true, noProfiles); err == nil || !strings.Contains(err.Error(), "holds a tree of 4 runs, this one has 6") {
		t.Errorf("another plan into the same tree: %v", err)
	}
}

// TestTreeRunCountBounded: a tree's runs are counted before any is made, and a tree beyond the run
// budget is refused at once naming the count, how it is made and the flag (1000 sweep values x 1000
// seeds ran for 645 s into 4.9 GB; --seeds 1e9 ran out of memory); counts past int64 saturate; a tree
// within a raised budget is checked one run at a time and Ctrl-C stops the check.
func TestTreeRunCountBounded(t *testing.T) {
	dir := t.TempDir()
	a := writeTreeSpec(t, dir, "a", "virtual", "")
	defer func() { sweepFlags.seeds, sweepFlags.sets, budgetFlag = 0, nil, "" }()
	vals := make([]string, 1000)
	for i := range vals {
		vals[i] = fmt.Sprintf("%dus", 1001+i) // run durations, all longer than the workload
	}
	many := make([]string, 7) // 1000^7 x 2 runs: past int64
	for k := range many {
		many[k] = fmt.Sprintf("workload.0.field%d=%s", k, strings.Join(vals, ","))
	}
	for _, c := range []struct {
		seeds int
		sets  []string
		want  string
	}{
		{1000, []string{"duration=" + strings.Join(vals, ",")}, "1000000 runs (" + a + ": 1000 values of duration x 1000 seeds), more than the budget of 10000 runs"},
		{1_000_000_000, nil, "1e+09 runs (" + a + ": 1000000000 seeds), more than the budget of 10000 runs"},
		{2, many, "more than 9.2e18 runs"},
	} {
		sweepFlags.seeds, sweepFlags.sets = c.seeds, c.sets
		done := make(chan error, 1)
		go func() { _, err := planRuns(context.Background(), []string{a}); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--budget runs=N") {
				t.Errorf("%d seeds x %d axes: %v, want %q", c.seeds, len(c.sets), err, c.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%d seeds x %d axes: not refused within 5 s", c.seeds, len(c.sets))
		}
	}
	// Within a raised budget the check goes run by run and stops when the context is cancelled.
	budgetFlag, sweepFlags.seeds = "runs=1e7", 1000
	sweepFlags.sets = []string{"duration=" + strings.Join(vals, ",")}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := planRuns(ctx, []string{a}); done <- err }()
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "interrupted while checking the runs") {
			t.Errorf("cancelled check: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the check went on after its context was cancelled")
	}
}

func noProfiles() (func(), error) { return func() {}, nil }

// TestIncompleteOfAnotherHostKept: a tree on shared storage is written by lab run processes on many
// hosts (and pods, each with its own PID namespace and host name); a run's unfinished directory owned
// by another host is never removed as stale, however its PID looks here, while a dead local owner's is.
func TestIncompleteOfAnotherHostKept(t *testing.T) {
	dir := t.TempDir()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]string{
		".seed-1.incomplete-a": "1 1 another-host-" + host + "\n", // pid 1 here is someone else's
		".seed-2.incomplete-b": "999999999 1 " + host + "\n",      // no such process here: stale
	}
	for d, o := range owners {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d, incompleteOwner), []byte(o), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := cleanIncomplete(dir, nil)
	if err != nil || len(removed) != 1 || filepath.Base(removed[0]) != ".seed-2.incomplete-b" {
		t.Errorf("removed %v (%v), want only the local stale one", removed, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".seed-1.incomplete-a")); err != nil {
		t.Errorf("another host's unfinished run was removed: %v", err)
	}
}

// TestIndexedJobExample: deploy/k8s/sweep/sweep-indexed-job.yaml is an Indexed Job whose pods run lab run
// --index env with arguments lab accepts, and whose completions are the tree's run count.
func TestIndexedJobExample(t *testing.T) {
	b, err := os.ReadFile("../../deploy/k8s/sweep/sweep-indexed-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string
		Spec       struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int
			Template       struct {
				Spec struct {
					Containers []struct{ Args []string }
				}
			}
		}
	}
	if err := yaml.Unmarshal(b, &job); err != nil {
		t.Fatal(err)
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Spec.CompletionMode != "Indexed" || len(job.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("not one Indexed batch/v1 Job: %+v", job)
	}
	args := job.Spec.Template.Spec.Containers[0].Args
	joined := strings.Join(args, " ")
	if len(args) == 0 || args[0] != "run" || !strings.Contains(joined, "--index env") {
		t.Fatalf("args %q: want lab run ... --index env", args)
	}
	// The ConfigMap holds the experiment directory's files at /specs.
	var list []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--index" || a == "-o":
			i++
		case a == "-q":
		case strings.HasPrefix(a, "/specs/"):
			list = append(list, "../../lab/experiments/portfc-ndc41-websearch/"+strings.TrimPrefix(a, "/specs/"))
		default:
			list = append(list, a)
		}
	}
	runs := strings.Split(strings.TrimSpace(labProcess(t, nil, true, append(list, "--list")...)), "\n")
	if len(runs) != job.Spec.Completions {
		t.Errorf("completions %d, the tree has %d runs", job.Spec.Completions, len(runs))
	}
}

// TestSbatchExample: deploy/slurm/sweep.sbatch, run as two array tasks, fills a tree whose runs are
// done; an array that does not cover the tree is refused.
func TestSbatchExample(t *testing.T) {
	dir := t.TempDir()
	a := writeTreeSpec(t, dir, "a", "virtual", "")
	tree := filepath.Join(dir, "tree")
	sbatch := func(id, count string) (string, error) {
		cmd := exec.Command("bash", "../../deploy/slurm/sweep.sbatch")
		cmd.Env = append(os.Environ(), "FABRICLAB_TEST_LAB=1", "LAB="+os.Args[0], "SPECS="+a, "FLAGS=--seeds 2",
			"TREE="+tree, "SLURM_ARRAY_TASK_ID="+id, "SLURM_ARRAY_TASK_COUNT="+count)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := sbatch("0", "3"); err == nil || !strings.Contains(out, "the array has 3 tasks and the tree 2 runs: submit with --array=0-1") {
		t.Errorf("array of 3 for 2 runs: %v\n%s", err, out)
	}
	for _, id := range []string{"0", "1"} {
		if out, err := sbatch(id, "2"); err != nil {
			t.Fatalf("task %s: %v\n%s", id, err, out)
		}
	}
	for _, d := range []string{"seed-1", "seed-2"} {
		if st, err := report.ReadRunStatus(tree, d); err != nil || st == nil || st.Status != "done" {
			t.Errorf("%s: %+v %v", d, st, err)
		}
	}
}

// TestStatusFilesAreAuthoritative: lab report counts a tree's run by its status file, whatever the
// manifest says (processes filling a tree never rewrite the manifest); a tree without status files
// (written before them) is read by its manifest.
func TestStatusFilesAreAuthoritative(t *testing.T) {
	dir := t.TempDir()
	a := writeTreeSpec(t, dir, "a", "virtual", "")
	defer func() { sweepFlags.seeds = 0 }()
	sweepFlags.seeds = 2
	out := filepath.Join(dir, "tree")
	if err := runTreeCommand(context.Background(), &bytes.Buffer{}, []string{a}, out, true, noProfiles); err != nil {
		t.Fatal(err)
	}
	skipped := func() []string {
		tr, err := report.LoadTrees([]string{out})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Skipped
	}
	if s := skipped(); len(s) != 0 {
		t.Fatalf("skipped %v", s)
	}
	st, err := report.ReadRunStatus(out, "seed-2")
	if err != nil || st == nil {
		t.Fatal(st, err)
	}
	st.Status, st.Ended = "running", time.Time{}
	if err := writeStatus(out, st); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockRun(out, "seed-2") // as its process holds it while it runs
	if err != nil {
		t.Fatal(err)
	}
	if s := skipped(); len(s) != 1 || !strings.Contains(s[0], "seed-2: running (on "+st.Host) {
		t.Errorf("a run whose status says running (manifest: done): skipped %v", s)
	}
	unlock() // its process gone: the status file still says running, nobody holds the lock
	if s := skipped(); len(s) != 1 || !strings.Contains(s[0], "seed-2: died") {
		t.Errorf("a run whose status says running, its lock free: skipped %v", s)
	}
	for _, d := range []string{"seed-1", "seed-2"} {
		if err := os.Remove(report.StatusPath(out, d)); err != nil {
			t.Fatal(err)
		}
	}
	if s := skipped(); len(s) != 0 {
		t.Errorf("without status files the manifest (all done) stands: skipped %v", s)
	}
}
