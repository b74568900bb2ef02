package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/lab/spec"
)

// TestRunRefusesOutThatIsAFile: -o naming an existing file (or a symlink) is refused before the run,
// and the file is left as it was (it used to be replaced by the run directory: issue 23, defect 3).
func TestRunRefusesOutThatIsAFile(t *testing.T) {
	dir := t.TempDir()
	p := writeTreeSpec(t, dir, "one", "virtual", "")
	s, err := spec.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	afile := filepath.Join(dir, "afile")
	if err := os.WriteFile(afile, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "alink")
	if err := os.Symlink(afile, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{afile, link} {
		_, _, err := runSpec(context.Background(), s, out)
		if err == nil || !strings.Contains(err.Error(), "-o "+out) {
			t.Fatalf("-o %s: err %v, want a refusal naming -o", out, err)
		}
		if b, err := os.ReadFile(afile); err != nil || string(b) != "x\n" {
			t.Fatalf("-o %s: the user's file is now %q (%v)", out, b, err)
		}
		if fi, err := os.Lstat(out); err != nil || fi.IsDir() {
			t.Fatalf("-o %s: replaced (%v)", out, err)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".incomplete-") {
			t.Fatalf("left %s behind", e.Name())
		}
	}
}

// TestKilledRunLeavesNothingForever: a lab run killed with SIGKILL leaves its hidden incomplete
// directory; the next run into the same place removes it (it used to stay forever, unmarked: issue 23,
// defect 10), and lab clean's sweep does the same.
func TestKilledRunLeavesNothingForever(t *testing.T) {
	if out := os.Getenv("FABRICLAB_KILLED_RUN_OUT"); out != "" {
		s, err := spec.Load(os.Getenv("FABRICLAB_KILLED_RUN_SPEC"))
		if err != nil {
			panic(err)
		}
		showProgress = false
		runSpec(context.Background(), s, out)
		return
	}
	dir := t.TempDir()
	p := writeTreeSpec(t, dir, "long", "virtual", "")
	long := strings.NewReplacer("duration: 3ms", "duration: 10s", "duration: 300us", "duration: 100ms").Replace(mustRead(t, p))
	if err := os.WriteFile(p, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "res", "long")
	incomplete := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, "res", ".long.incomplete-*"))
		return m
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		cmd := exec.Command(exe, "-test.run=^TestKilledRunLeavesNothingForever$")
		cmd.Env = append(os.Environ(), "FABRICLAB_KILLED_RUN_OUT="+out, "FABRICLAB_KILLED_RUN_SPEC="+p)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Killed once its directory is marked: on a loaded machine the 50 ms below did not always cover
		// the instant between making the directory and writing its owner file (left "unmarked").
		marked := func() bool {
			m := incomplete()
			if len(m) == 0 {
				return false
			}
			_, err := os.Stat(filepath.Join(m[0], incompleteOwner))
			return err == nil
		}
		for end := time.Now().Add(20 * time.Second); !marked() && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		left := incomplete()
		if len(left) != 1 {
			t.Fatalf("round %d: %d incomplete directories after the kill: %v", round, len(left), left)
		}
		if round == 0 { // the next run cleans it
			s, err := spec.Load(writeTreeSpec(t, dir, "long", "virtual", ""))
			if err != nil {
				t.Fatal(err)
			}
			showProgress = false
			if _, _, err := runSpec(context.Background(), s, out); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(out, incompleteOwner)); err == nil {
				t.Fatalf("the finished run directory kept its owner file")
			}
		} else { // lab clean does
			if _, err := cleanIncomplete(filepath.Join(dir, "res"), nil); err != nil {
				t.Fatal(err)
			}
		}
		if left := incomplete(); len(left) != 0 {
			t.Fatalf("round %d: still there after cleaning: %v", round, left)
		}
		if err := os.WriteFile(p, []byte(long), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestProfilesOnTrees: --cpuprofile and --memprofile act on a run tree too (they were silently ignored
// whenever a run became a tree: issue 23, defect 10).
func TestProfilesOnTrees(t *testing.T) {
	dir := t.TempDir()
	p := writeTreeSpec(t, dir, "prof", "virtual", "")
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	root.SetArgs([]string{"run", p, "--seeds", "2", "-q", "-o", filepath.Join(dir, "tree"), "--cpuprofile", cpu, "--memprofile", mem})
	defer func() {
		sweepFlags.seeds = 0
		root.SetArgs(nil)
		run, _, _ := root.Find([]string{"run"})
		for _, f := range []string{"cpuprofile", "memprofile", "out", "quiet"} {
			run.Flags().Set(f, run.Flags().Lookup(f).DefValue)
		}
	}()
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{cpu, mem} {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Errorf("%s: not written (%v)", f, err)
		}
	}
}

// TestProfilesCheckedBeforeAnyIsMade: a refused --memprofile (or one path for both flags) leaves no
// --cpuprofile behind; it used to commit an empty one, which the corrected command then refused as "exists".
func TestProfilesCheckedBeforeAnyIsMade(t *testing.T) {
	dir := t.TempDir()
	cpu, user := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "user.pprof")
	os.WriteFile(user, []byte("mine"), 0o644)
	for _, mem := range []string{user, filepath.Join(dir, "nosuchdir", "mem.pprof"), cpu} {
		stop, err := startProfiles(cpu, mem)
		if err == nil {
			stop()
			t.Fatalf("--memprofile %s: accepted", mem)
		}
		if _, serr := os.Lstat(cpu); serr == nil {
			t.Fatalf("--memprofile %s refused (%v), but --cpuprofile %s was made", mem, err, cpu)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries left in the directory, want only the user's file", len(ents))
	}
}

// TestTopoTakesSpecAndJSON: lab topo describes the topology of a spec file lab up accepts, and a
// topology JSON file, not only FAMILY key=value (issue 23).
func TestTopoTakesSpecAndJSON(t *testing.T) {
	dir := t.TempDir()
	p := writeTreeSpec(t, dir, "tp", "virtual", "")
	g, err := topoArg([]string{p})
	if err != nil || g.Family != "ndc" || len(g.Hosts) != 4 {
		t.Fatalf("spec: %v %v", g, err)
	}
	j := filepath.Join(dir, "t.json")
	f, err := os.Create(j)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.WriteJSON(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	g2, err := topoArg([]string{j})
	if err != nil || len(g2.Nodes) != len(g.Nodes) || len(g2.Links) != len(g.Links) {
		t.Fatalf("json: %v %v", g2, err)
	}
	if _, err := topoArg([]string{p, "n=3"}); err == nil {
		t.Error("a spec with key=value accepted")
	}
}
