package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fabriclab/fabriclab/bounded"
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
	// Only a lab tree's manifest makes an ancestor a tree: manifest.json is a common name (a web app's,
	// a package's), and a project holding one is no reason to refuse -o project/results/tree.
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		if isTreeManifest(p) {
			return fmt.Errorf("-o %s: inside the run tree %s (its manifest.json): refusing to write another tree among its runs", out, p)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// isTreeManifest says whether dir holds a run tree's manifest.json: one that parses as the manifest lab run
// writes, listing runs by directory.
func isTreeManifest(dir string) bool {
	b, err := bounded.ReadFile(filepath.Join(dir, report.ManifestFile), bounded.Summary)
	if err != nil {
		return false
	}
	var m report.Manifest
	if json.Unmarshal(b, &m) != nil || len(m.Runs) == 0 {
		return false
	}
	for _, r := range m.Runs {
		if r.Dir == "" {
			return false
		}
	}
	return true
}

// isRunDir says whether dir is a run directory: its run.json is the object lab run writes (backend and
// engine time), beside summary.json and spec.yaml.
func isRunDir(dir string) bool {
	for _, f := range runDirFiles {
		if fi, err := os.Lstat(filepath.Join(dir, f)); err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	return jsonHasKeys(filepath.Join(dir, "run.json"), "backend", "engine_s")
}

// jsonHasKeys says whether path holds a JSON object with all of keys.
func jsonHasKeys(path string, keys ...string) bool {
	b, err := bounded.ReadFile(path, bounded.Summary)
	if err != nil {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// firstLineIs says whether path's first line starts with prefix.
func firstLineIs(path, prefix string) bool {
	f, err := bounded.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, len(prefix))
	_, err = io.ReadFull(f, buf)
	return err == nil && string(buf) == prefix
}

// checkOutDir refuses flag's directory dir unless it is absent, empty, or one the lab wrote, recognized
// by its files' content, not only their names (report.txt, summary.json and spec.yaml are a user's names
// too): a run directory (isRunDir), a run tree (isTreeManifest), an earlier lab compare (its compare.json) or
// an earlier lab report of several runs (its comparison.csv).
func checkOutDir(flag, dir string) error {
	return outfile.CheckOwnDir(flag, dir, func([]string) bool {
		return isRunDir(dir) || isTreeManifest(dir) ||
			jsonHasKeys(filepath.Join(dir, "compare.json"), "metrics_with_ci", "verdicts") ||
			firstLineIs(filepath.Join(dir, "comparison.csv"), "metric,")
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
