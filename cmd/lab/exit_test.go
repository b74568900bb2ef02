package main

import (
	"io"
	"path/filepath"
	"testing"
)

// TestExitCodes: usage errors exit 2, failures 1, success 0 (every error used to exit 1: issue 23), and
// --version answers.
func TestExitCodes(t *testing.T) {
	usageErrors(root)
	dir := t.TempDir()
	p := writeTreeSpec(t, dir, "ex", "virtual", "")
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	defer func() {
		root.SetArgs(nil)
		root.SetOut(nil)
		root.SetErr(nil)
		sweepFlags.seeds, sweepFlags.jobs = 0, 0
		run, _, _ := root.Find([]string{"run"})
		for _, f := range []string{"seeds", "jobs", "out", "quiet"} {
			run.Flags().Set(f, run.Flags().Lookup(f).DefValue)
			run.Flags().Lookup(f).Changed = false
		}
	}()
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"nosuch"}, exitUsage},
		{[]string{"run"}, exitUsage},
		{[]string{"run", p, "--bogus"}, exitUsage},
		{[]string{"run", p, "--seeds", "0"}, exitUsage},
		{[]string{"run", p, "-j", "-3"}, exitUsage},
		{[]string{"run", p, "--agents", "-2"}, exitUsage},
		{[]string{"run", filepath.Join(dir, "absent.yaml")}, exitFailure},
		{[]string{"topo", "ndc", "n=2", "k=1"}, 0},
	} {
		root.SetArgs(tc.args)
		code := 0
		if err := root.Execute(); err != nil {
			code = exitStatus(err)
		}
		if code != tc.code {
			t.Errorf("lab %v: exit %d, want %d", tc.args, code, tc.code)
		}
		run, _, _ := root.Find([]string{"run"})
		for _, f := range []string{"seeds", "jobs", "agents"} {
			run.Flags().Set(f, run.Flags().Lookup(f).DefValue)
			run.Flags().Lookup(f).Changed = false
		}
	}
	root.Version = versionString()
	if root.Version == "" {
		t.Error("no version")
	}
}
