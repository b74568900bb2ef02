package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRewriteSaysWhy(t *testing.T) {
	in := `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" disabled="2" errors="0" failures="0" time="1">
  <testsuite name="S" package="/p" tests="3" disabled="2" skipped="2" errors="0" failures="0" time="1" timestamp="2026-11-27T20:00:00">
    <testcase name="[It] a [netns, smoke]" classname="S" status="skipped" time="0"><skipped message="skipped"></skipped></testcase>
    <testcase name="[It] b" classname="S" status="skipped" time="0"><skipped message="skipped - dctcp not available"></skipped></testcase>
    <testcase name="[It] c [pins]" classname="S" status="passed" time="0.5"></testcase>
  </testsuite>
</testsuites>`
	p := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(p, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := rewrite(p, "pins")
	if err != nil || n != 1 {
		t.Fatalf("n %d err %v", n, err)
	}
	b, _ := os.ReadFile(p)
	out := string(b)
	for _, want := range []string{
		`not run: the label filter &#34;pins&#34; does not select it (its labels: netns, smoke)`,
		`skipped - dctcp not available`, `name="[It] c [pins]"`, `status="passed"`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in\n%s", want, out)
		}
	}
}
