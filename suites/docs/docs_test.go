package docs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Time bounds per block: a fast block is a build, a topology, a short virtual run; a slow one may
// bring a lab up, run benchmarks, or be the README's set-up commands (the main job, then the smoke
// tests: minutes each on 2 busy cores).
const (
	fastBlockTimeout = 5 * time.Minute
	slowBlockTimeout = 45 * time.Minute
)

// repoRoot is the directory holding go.mod, found from the suite's directory.
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("docs suite: no go.mod above " + dir)
		}
		dir = parent
	}
}

// pages are README.md and docs/*.md, relative to the root.
func pages(root string) []string {
	out := []string{"README.md"}
	m, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	sort.Strings(m)
	for _, p := range m {
		rel, _ := filepath.Rel(root, p)
		out = append(out, rel)
	}
	return out
}

var _ = Describe("the documentation's commands", func() {
	root := repoRoot()
	for _, page := range pages(root) {
		page := page
		text, readErr := os.ReadFile(filepath.Join(root, page))
		blocks, parseErr := parseDoc(page, string(text))
		hasSlow := false
		for _, b := range blocks {
			hasSlow = hasSlow || b.mode == slow
		}
		It(page+": every shell block runs, or is marked illustrative with a reason", Label("smoke"), func() {
			Expect(readErr).NotTo(HaveOccurred())
			Expect(parseErr).NotTo(HaveOccurred())
			runPage(root, page, blocks, false)
		})
		if hasSlow {
			It(page+": the slow blocks too, in page order", Label("docs-slow"), func() {
				Expect(parseErr).NotTo(HaveOccurred())
				runPage(root, page, blocks, true)
			})
		}
	}
})

// runPage runs a page's blocks in order in a fresh copy of the tree (a git repository of one commit,
// without the history), the slow ones too if slowToo.
func runPage(root, page string, blocks []block, slowToo bool) {
	var todo []block
	for _, b := range blocks {
		if b.mode == skip {
			By(fmt.Sprintf("%s:%d: skipped, illustrative: %s", page, b.line, b.reason))
			continue
		}
		if b.mode == slow && !slowToo {
			By(fmt.Sprintf("%s:%d: slow, runs under the docs-slow label", page, b.line))
			continue
		}
		todo = append(todo, b)
	}
	if len(todo) == 0 {
		return
	}
	if os.Geteuid() != 0 {
		Fail("the docs suite runs the pages' commands, which make namespaces: run it as root (sudo bash scripts/test.sh)")
	}
	scratch := filepath.Join(GinkgoT().TempDir(), "tree")
	Expect(copyTree(root, scratch)).To(Succeed())
	// The copy is a repository of one commit: the test command a page runs (scripts/test.sh) checks
	// the formatting of the files git lists, and this suite copies what git lists.
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"},
		{"-c", "user.name=docs test", "-c", "user.email=docs-test@invalid", "commit", "-q", "--no-gpg-sign", "-m", "docs test copy"}} {
		out, err := exec.Command("git", append([]string{"-C", scratch}, args...)...).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "git %s in the copy:\n%s", strings.Join(args, " "), out)
	}
	aside := GinkgoT().TempDir() // the block scripts, their output and the sudo shim, outside the copy
	env := blockEnv(aside)

	suffix := "-d" + runTag
	names := labNames(todo)
	var groups []int
	DeferCleanup(func() {
		// Take down what the page left up (only the labs this run named), then end what its blocks
		// left running (their process groups: a `lab flow serve &`), and say if a lab is left.
		for _, n := range names {
			exec.Command(labBin, "down", n+suffix).Run()
		}
		for _, g := range groups {
			syscall.Kill(-g, syscall.SIGKILL)
		}
		out, _ := exec.Command("ip", "netns", "list").Output()
		for _, n := range names {
			Expect(string(out)).NotTo(ContainSubstring("fl-"+n+suffix+"-"), "%s left lab %s up", page, n+suffix)
		}
	})

	for k, b := range todo {
		where := fmt.Sprintf("%s:%d", page, b.line)
		By(where)
		body := rename(b.body, names, suffix)
		if strings.Contains(body, "down --all") {
			Fail(where + ": `lab down --all` would take down labs this test did not make: mark the block <!-- docs-test: skip REASON -->")
		}
		timeout := fastBlockTimeout
		if b.mode == slow {
			timeout = slowBlockTimeout
		}
		script := filepath.Join(aside, fmt.Sprintf("block-%02d.sh", k))
		Expect(os.WriteFile(script, []byte(body+"\n"), 0o644)).To(Succeed())
		stdout, stderr, pgid, err := runBlock(scratch, env, script, timeout)
		if pgid > 0 {
			groups = append(groups, pgid)
		}
		fmt.Fprintf(GinkgoWriter, "--- %s\n%s\n--- stdout\n%s--- stderr\n%s", where, body, stdout, stderr)
		if err != nil {
			Fail(fmt.Sprintf("%s: %v\n%s\n--- stdout (last lines)\n%s--- stderr (last lines)\n%s", where, err, body, tail(stdout, 30), tail(stderr, 30)))
		}
		if b.expect != nil && !matchOutput(b.expect, stdout) {
			Fail(fmt.Sprintf("%s: the output is not the one the page shows\n--- the page\n%s\n--- printed\n%s", where, strings.Join(b.expect, "\n"), stdout))
		}
	}
}

// runBlock runs a block's script with bash -e -o pipefail in dir, in a process group of its own,
// killed whole if the block outlasts timeout. Output goes to files, not pipes, so a command the
// block leaves in the background (`... &`) does not hold the block open; the caller ends the group.
func runBlock(dir string, env []string, script string, timeout time.Duration) (stdout, stderr string, pgid int, err error) {
	outF, err := os.Create(script + ".out")
	if err != nil {
		return "", "", 0, err
	}
	defer outF.Close()
	errF, err := os.Create(script + ".err")
	if err != nil {
		return "", "", 0, err
	}
	defer errF.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.Command("bash", "-e", "-o", "pipefail", script)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, outF, errF
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", "", 0, err
	}
	pgid = cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
		err = fmt.Errorf("timed out after %v (the block's process group was killed)", timeout)
	}
	o, _ := os.ReadFile(script + ".out")
	e, _ := os.ReadFile(script + ".err")
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		err = fmt.Errorf("exit status %d", ee.ExitCode())
	}
	return string(o), string(e), pgid, err
}

// blockEnv is the environment a page's blocks run in: Go on the PATH; in a root shell a `sudo` that
// runs its command as it is (the pages write `sudo bin/lab up` for readers with a user account, and
// a root shell may have no sudo at all); -trimpath so a scratch copy's builds come from the cache.
func blockEnv(aside string) []string {
	shim := filepath.Join(aside, "shim")
	Expect(os.MkdirAll(shim, 0o755)).To(Succeed())
	path := os.Getenv("PATH")
	if os.Geteuid() == 0 {
		sudo := "#!/bin/sh\n# docs test: in a root shell, sudo's command runs as it is\n" +
			"while [ $# -gt 0 ]; do case \"$1\" in -E|-H|-n|--preserve-env*) shift ;; --) shift; break ;; -*) echo \"docs test sudo: option $1 not handled\" >&2; exit 2 ;; *) break ;; esac; done\n" +
			"exec \"$@\"\n"
		Expect(os.WriteFile(filepath.Join(shim, "sudo"), []byte(sudo), 0o755)).To(Succeed())
		path = shim + ":" + path
	}
	gopath, _ := exec.Command("go", "env", "GOPATH").Output()
	path += ":/usr/local/go/bin:" + filepath.Join(strings.TrimSpace(string(gopath)), "bin")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "GOFLAGS=") {
			env = append(env, kv)
		}
	}
	goflags := strings.TrimSpace(os.Getenv("GOFLAGS") + " -trimpath")
	return append(env, "PATH="+path, "GOFLAGS="+goflags)
}

// copyTree copies the files git knows in root (tracked, and untracked ones not ignored: what the
// tree holds, without results or binaries) to dst.
func copyTree(root, dst string) error {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "-co", "--exclude-standard").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("git ls-files in %s: %v: %s", root, err, ee.Stderr)
		}
		return fmt.Errorf("git ls-files in %s: %v", root, err)
	}
	files := bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0})
	if len(files) < 2 {
		return fmt.Errorf("git lists no files in %s (as root in a tree owned by another user: git config --global --add safe.directory %s)", root, root)
	}
	for _, f := range files {
		rel := string(f)
		src, to := filepath.Join(root, rel), filepath.Join(dst, rel)
		fi, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree, not yet committed
		} else if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(src)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, to); err != nil {
				return err
			}
			continue
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		if err := copyFile(src, to, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}
