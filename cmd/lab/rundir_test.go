package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
