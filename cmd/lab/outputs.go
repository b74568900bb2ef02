package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fabriclab/fabriclab/outfile"
	"github.com/fabriclab/fabriclab/report"
)

// The output directories of lab run (a tree), report and compare are checked as lab run -o is: never
// the root or a system directory, never through a symbolic link, never a directory holding what the
// lab did not write (outfile.CheckOwnDir), and each file in them is written by outfile (a temporary
// renamed into place; a link or directory in the way is refused).

// checkTreeDir refuses a run tree's -o unless it is absent, empty or a run tree (manifest.json: whether
// it is this tree is judged against its manifest, sameTree); a single run's directory (or another
// tree's) and a directory with other content are refused, and so is a directory inside another tree.
func checkTreeDir(out string) error {
	err := outfile.CheckOwnDir("-o", out, func(names []string) bool {
		if slices.Contains(names, report.ManifestFile) {
			return true
		}
		// Only the hidden files of a tree being started by another --index process (its manifest's
		// temporary, run locks): nothing of a user's.
		for _, n := range names {
			if !strings.HasPrefix(n, "."+report.ManifestFile+".tmp-") && !strings.HasSuffix(n, ".lock") {
				return false
			}
		}
		return true
	})
	if err != nil {
		for _, f := range runDirFiles {
			if _, serr := os.Stat(filepath.Join(out, f)); serr == nil {
				return fmt.Errorf("-o %s: a run directory (it holds %s), not a run tree: refusing to write a tree into it; give each tree its own directory", out, f)
			}
		}
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		if _, err := os.Stat(filepath.Join(p, report.ManifestFile)); err == nil {
			return fmt.Errorf("-o %s: inside the run tree %s (its manifest.json): refusing to write another tree among its runs", out, p)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// reportFiles are names only the lab writes into a report's or comparison's directory (besides a run
// directory's and a tree's own files): such a directory is the lab's to write into again.
var reportFiles = []string{"report.txt", "comparison.csv", "compare.json", "aggregate.csv", "aggregate.json"}

// checkOutDir refuses flag's directory dir unless it is absent, empty, or holds what the lab writes: a
// run directory, a run tree, or an earlier report or comparison.
func checkOutDir(flag, dir string) error {
	return outfile.CheckOwnDir(flag, dir, func(names []string) bool {
		for _, n := range names {
			if slices.Contains(runDirFiles, n) || n == report.ManifestFile || slices.Contains(reportFiles, n) {
				return true
			}
		}
		return false
	})
}

// makeOutDir checks dir (checkOutDir) and makes it.
func makeOutDir(flag, dir string) error {
	if err := checkOutDir(flag, dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s %s: %w", flag, dir, err)
	}
	return nil
}
