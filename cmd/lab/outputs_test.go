package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// labExit runs lab in a process of its own (TestMain) and returns its exit status and output.
func labExit(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "FABRICLAB_TEST_LAB=1")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	}
	t.Fatal(err)
	return -1, ""
}

// leaves lists every command that runs (not the groups).
func leaves(c *cobra.Command, path []string) [][]string {
	var out [][]string
	for _, s := range c.Commands() {
		if s.Hidden || s.Name() == "help" || s.Name() == "completion" {
			continue
		}
		p := append(append([]string{}, path...), s.Name())
		if s.Runnable() {
			out = append(out, p)
		}
		out = append(out, leaves(s, p)...)
	}
	return out
}

// TestEveryCommandBadFlagExits2: every command refuses a flag it does not have, and a bad --budget,
// with exit 2 (README and help: usage errors 2), as do the bad values issue 37 found exiting 1.
func TestEveryCommandBadFlagExits2(t *testing.T) {
	dir := t.TempDir()
	cmds := leaves(root, nil)
	if len(cmds) < 20 {
		t.Fatalf("only %d commands found: %v", len(cmds), cmds)
	}
	var cases [][]string
	for _, c := range cmds {
		cases = append(cases, append(append([]string{}, c...), "--no-such-flag"))
	}
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef"), 0o600)
	cases = append(cases,
		[]string{"topo", "ndc", "n=2", "k=1", "--budget", "banana"},
		[]string{"run", "x.yaml", "--budget", "devices=0"},
		[]string{"agent", "serve", "--listen", ":7070", "--secret", secret, "--underlay", "banana"},
		[]string{"agent", "serve", "--listen", "127.0.0.1:70000", "--secret", secret, "--underlay", "198.18.0.1"},
		[]string{"agent", "serve"},
		[]string{"link", "nosuchlab", "a", "b", "sideways"},
		[]string{"up", "ring", "n=3", "--name", ""},
		[]string{"capture", "nosuchlab", "s0:p0", "--for", "-1s"},
		[]string{"clean", "small.yaml"},
	)
	os.WriteFile(filepath.Join(dir, "small.yaml"), []byte("name: x\n"), 0o644)
	for _, c := range cases {
		code, out := labExit(t, dir, c...)
		if code != exitUsage {
			t.Errorf("lab %s: exit %d, want %d: %s", strings.Join(c, " "), code, exitUsage, firstLine(out))
		}
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// TestOutputFlagsNeverReplaceAUsersFile: for every output flag, an existing file the lab did not write
// and a symbolic link to a user's file are refused and left as they were; / and a directory with other
// content are refused as output directories.
func TestOutputFlagsNeverReplaceAUsersFile(t *testing.T) {
	dir := t.TempDir()
	spec := writeTreeSpec(t, dir, "o", "virtual", "")
	user := filepath.Join(dir, "user.txt")
	os.WriteFile(user, []byte("mine"), 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(user, link)
	userDir := filepath.Join(dir, "thesis")
	os.Mkdir(userDir, 0o755)
	os.WriteFile(filepath.Join(userDir, "thesis.tex"), []byte("mine"), 0o644)
	linkDir := filepath.Join(dir, "linkdir")
	os.Symlink(userDir, linkDir)
	// A run to report on and compare, and a claims table to write.
	if code, out := labExit(t, dir, "run", spec, "-o", filepath.Join(dir, "run1"), "-q"); code != 0 {
		t.Fatalf("lab run: %d %s", code, out)
	}
	claims := filepath.Join(dir, "claims.json")
	os.WriteFile(claims, []byte("[]\n"), 0o644)
	run1 := filepath.Join(dir, "run1")
	for _, c := range [][]string{
		{"run", spec, "-o", link},
		{"run", spec, "-o", "/"},
		{"run", spec, "-o", userDir},
		{"run", spec, "--seeds", "2", "-o", userDir},
		{"run", spec, "--seeds", "2", "-o", linkDir},
		{"run", spec, "--seeds", "2", "-o", "/"},
		{"run", spec, "--seeds", "2", "-o", run1},
		{"run", spec, "-o", filepath.Join(dir, "r2"), "--cpuprofile", user},
		{"run", spec, "-o", filepath.Join(dir, "r3"), "--cpuprofile", link},
		{"run", spec, "-o", filepath.Join(dir, "r4"), "--memprofile", user},
		{"report", run1, "-o", "/"},
		{"report", run1, "-o", userDir},
		{"report", run1, "-o", linkDir},
		{"compare", run1, run1, "-o", "/"},
		{"compare", run1, run1, "-o", userDir},
		{"capture", "nosuchlab", "s0:p0", "-w", user},
		{"capture", "nosuchlab", "s0:p0", "-w", link},
		{"capture", "nosuchlab", "s0:p0", "-w", "/dev/full"},
		{"claims", "--in", claims, "-o", link, "--docs", "-"},
		{"wireshark-plugin", "--dir", linkDir},
	} {
		code, out := labExit(t, dir, c...)
		if code == 0 {
			t.Errorf("lab %s: accepted: %s", strings.Join(c, " "), firstLine(out))
		}
	}
	if b, _ := os.ReadFile(user); string(b) != "mine" {
		t.Errorf("the user's file now holds %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(userDir, "thesis.tex")); string(b) != "mine" {
		t.Error("the user's directory was changed")
	}
	if ents, _ := os.ReadDir(userDir); len(ents) != 1 {
		t.Errorf("the user's directory holds %d entries", len(ents))
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	// compare.json through a link (a link in the lab's own compare directory) is refused too.
	cmpDir := filepath.Join(dir, "cmp")
	os.Mkdir(cmpDir, 0o755)
	os.Symlink(user, filepath.Join(cmpDir, "compare.json"))
	labExit(t, dir, "compare", run1, run1, "-o", cmpDir)
	if b, _ := os.ReadFile(user); string(b) != "mine" {
		t.Errorf("compare wrote through compare.json's link: the user's file holds %q", b)
	}
}

// ioCall is a read or write of a file by the os package's own functions (os.CreateTemp too: a
// temporary renamed over an output is outfile's job).
var ioCall = regexp.MustCompile(`os\.(ReadFile|WriteFile|Create|CreateTemp|OpenFile|Open)\(`)

// allowedIO are the commands' reads and writes that go around bounded (inputs) and outfile (outputs),
// each with why: files of the kernel (/proc, /sys), of the lab's own state and of directories the lab
// just made (a run's .incomplete-* directory, a temporary directory), exclusive creates, and the
// calibration cache. file: number of calls.
var allowedIO = map[string]struct {
	n   int
	why string
}{
	"cmd/lab/filepages.go":         {1, "/proc/self/smaps"},
	"cmd/lab/incomplete.go":        {5, "/proc/PID/stat and boot_id, lock files opened to probe their flock, the owner file (flocked before its rename: the lock must be on the file that is renamed into place)"},
	"report/status.go":             {1, "a run's lock file, opened to probe its flock"},
	"cmd/lab/runfiles.go":          {3, "files of the run's own new .incomplete-* directory, committed by its rename"},
	"cmd/lab/run.go":               {3, "files of the run's own new .incomplete-* directory, committed by its rename"},
	"cmd/lab/treejobs.go":          {1, "a run's lock file beside its directory (flock)"},
	"cmd/lab/liveclus.go":          {1, "capture -w: created exclusively (O_EXCL|O_NOFOLLOW) after outfile.Check"},
	"cmd/lab/bench.go":             {1, "a spec in the bench's own os.MkdirTemp directory"},
	"report/rundir.go":             {1, "files of the run's own new .incomplete-* directory, committed by its rename"},
	"harness/kernelhost/setup.go":  {4, "/proc/sys (the congestion controls, twice around a modprobe; the kernel release)"},
	"harness/virtual/pcap.go":      {1, "pcaps into the run's own new directory"},
	"harness/virtual/virtual.go":   {1, "an unlinked temporary file pause records spill to (no name to replace)"},
	"harness/netns/calibrate.go":   {3, "/proc/cpuinfo and the calibration cache under the lab's state"},
	"harness/netns/fabriccal.go":   {2, "the fabric calibration cache beside the machine's"},
	"harness/netns/backend_run.go": {1, "/proc/PID/stat of an agent the run started"},
	"harness/nslink/nsops.go":      {2, "/proc/sys and a namespace file (O_NOFOLLOW)"},
	"harness/netns/agent/live.go":  {1, "a capture's pcap: created exclusively (O_EXCL|O_NOFOLLOW)"},
	"harness/netns/agent/loop.go":  {1, "pcaps into the run's own new directory"},
	"harness/netns/agent/agent.go": {1, "FABRICLAB_AGENT_CPUPROFILE, a developer's knob"},
	"harness/nslink/netns.go":      {1, "the lab's lock file under /run/fabriclab/LAB"},
	"harness/nslink/procs.go":      {6, "/proc/PID/{stat,environ} and the lab's agents file"},
	"harness/nslink/state.go":      {2, "the lab's state directory and its state file (written by rename, under /run)"},
	"harness/live/live.go":         {2, "the lab's hosts file and log under its state directory"},
	"harness/live/cluster.go":      {2, "the supervisor file under the lab's state directory"},
	"harness/live/supervisor.go":   {1, "the lab's events log under its state directory"},
	"harness/cluster/execproc.go":  {1, "/proc/PID/stat"},
	"harness/cluster/capture.go":   {1, "the agent's capture file under the lab's state directory"},
	"harness/cluster/exec.go":      {1, "the lab's hosts file"},
	"harness/bench/frames.go":      {2, "/proc/sys and a topology in the bench's os.MkdirTemp directory"},
	"harness/bench/binary.go":      {2, "/proc/PID/task/*/children and run.json of the bench's own run"},
}

// TestNoReadsOrWritesAroundTheHelpers walks the commands' code and fails on a read or write of a file
// that goes around bounded and outfile, unless allowedIO says why.
func TestNoReadsOrWritesAroundTheHelpers(t *testing.T) {
	repo := filepath.Join("..", "..")
	got := map[string]int{}
	for _, top := range []string{"cmd", "report", "claims", "lab", "traffic", "harness", "units", "records"} {
		err := filepath.WalkDir(filepath.Join(repo, top), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(repo, p)
			if n := len(ioCall.FindAll(b, -1)); n > 0 {
				got[filepath.ToSlash(rel)] = n
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for f, n := range got {
		a, ok := allowedIO[f]
		switch {
		case !ok:
			t.Errorf("%s: %d reads or writes of files around bounded and outfile (use them, or say why in allowedIO)", f, n)
		case n != a.n:
			t.Errorf("%s: %d reads or writes of files, allowedIO says %d (%s)", f, n, a.n, a.why)
		}
	}
	for f := range allowedIO {
		if _, ok := got[f]; !ok {
			t.Errorf("allowedIO lists %s, which no longer reads or writes around the helpers", f)
		}
	}
}

// TestOutDirsRecognizedByContent: an output directory is the lab's by what its files hold, not by a
// name a user's files share (report.txt, summary.json, spec.yaml: such directories were written into,
// or with lab run -o replaced whole); and only a lab tree's manifest.json makes an ancestor a tree (a
// web app's manifest.json made every -o below it refused).
func TestOutDirsRecognizedByContent(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, files map[string]string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for f, text := range files {
			if err := os.WriteFile(filepath.Join(d, f), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	users := []string{
		mk("thesis", map[string]string{"report.txt": "chapter 1", "thesis.tex": "mine"}),
		mk("project", map[string]string{"spec.yaml": "openapi: 3.0", "main.go": "package main"}),
		mk("stats", map[string]string{"summary.json": "{}", "run.json": `{"name":"mine"}`, "spec.yaml": "x: 1"}),
		mk("verdicts", map[string]string{"compare.json": `{"a":1}`, "notes.txt": "mine"}),
	}
	for _, d := range users {
		if err := checkOutDir("-o", d); err == nil {
			t.Errorf("checkOutDir %s: a user's directory accepted", filepath.Base(d))
		}
		if err := checkRunDir(d); err == nil {
			t.Errorf("checkRunDir %s: a user's directory accepted (lab run would replace it)", filepath.Base(d))
		}
	}
	// A real run directory, an earlier comparison and a tree are the lab's.
	spec := writeTreeSpec(t, dir, "o", "virtual", "")
	run := filepath.Join(dir, "run1")
	if code, out := labExit(t, dir, "run", spec, "-o", run, "-q"); code != 0 {
		t.Fatalf("lab run: %d %s", code, out)
	}
	cmp := filepath.Join(dir, "cmp")
	if code, out := labExit(t, dir, "report", run, run, "-o", cmp, "--no-plots"); code != 0 {
		t.Fatalf("lab report: %d %s", code, out)
	}
	cmp2 := filepath.Join(dir, "cmp2")
	if code, out := labExit(t, dir, "compare", run, run, "-o", cmp2); code != 0 && code != exitFailure {
		t.Fatalf("lab compare: %d %s", code, out)
	}
	for _, f := range []string{filepath.Join(cmp, "comparison.csv"), filepath.Join(cmp2, "compare.json")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err) // else the checks below would pass on an absent directory
		}
	}
	for _, d := range []string{run, cmp, cmp2} {
		if err := checkOutDir("-o", d); err != nil {
			t.Errorf("checkOutDir %s: %v", filepath.Base(d), err)
		}
	}
	if err := checkRunDir(run); err != nil {
		t.Errorf("checkRunDir of a run: %v", err)
	}
	// A web app's manifest.json above -o is no tree; a lab tree's is.
	app := mk("app", map[string]string{"manifest.json": `{"name":"app","start_url":"/","icons":[]}`})
	if err := checkTreeDir(filepath.Join(app, "results", "tree")); err != nil {
		t.Errorf("-o under a web app's manifest.json: %v", err)
	}
	tree := mk("tree", map[string]string{"manifest.json": `{"specs":["o.yaml"],"seeds":2,"runs":[{"dir":"seed-1"},{"dir":"seed-2"}]}`})
	if err := checkTreeDir(filepath.Join(tree, "seed-1", "sub")); err == nil || !strings.Contains(err.Error(), "inside the run tree") {
		t.Errorf("-o inside a lab tree: %v", err)
	}
	if err := checkOutDir("-o", tree); err != nil {
		t.Errorf("checkOutDir of a tree: %v", err)
	}
}
