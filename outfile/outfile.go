// Package outfile is the one way fabriclab's commands write an output file a user named or a file into
// an output directory: into a temporary file in the same directory, synced, then renamed over the
// target, the directory synced after, so a reader (or a full disk, a SIGKILL or a crash) never sees a
// half-written file; a replaced file keeps its permissions. It refuses what would replace something
// that is not the lab's: a symbolic link (which would redirect the write), a directory, a device, and
// the root and system directories. A test in cmd/lab greps the commands for writes around it.
package outfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Policy says what to do when the target exists as a regular file.
type Policy int

const (
	// Replace: an existing regular file is replaced; the caller knows it is the lab's (a file in a
	// directory the lab made, or the input it rewrites).
	Replace Policy = iota
	// New: an existing file is refused, never replaced (lab capture -w: the user's file, as far as the
	// lab can tell). The target is created by link(2), which fails if it appeared meanwhile.
	New
)

// systemDirs are never written into, nor is anything under them.
var systemDirs = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc",
	"/sbin", "/sys", "/usr", "/var/lib", "/var/log", "/var/cache", "/var/spool"}

// CheckDir refuses dir as a directory to write outputs into when it is the root, a system directory or
// under one, or a symbolic link. It says nothing of what dir holds: CheckOwnDir does.
func CheckDir(dir string) error { return checkDir(dir, dir) }

// checkDir is CheckDir naming what in its errors (the file to be written in dir, or dir).
func checkDir(what, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if abs == "/" {
		return fmt.Errorf("%s: the root directory: refusing to write there", what)
	}
	// Judge where the writes land: a link to /etc is /etc, also when the link is an ancestor of a
	// directory not made yet (-o /tmp/l/new with /tmp/l -> /etc would be made as /etc/new).
	real := resolveExisting(abs)
	for _, p := range []string{abs, real} {
		if p == "/" {
			return fmt.Errorf("%s: the root directory: refusing to write there", what)
		}
		for _, s := range systemDirs {
			if p == s || strings.HasPrefix(p, s+"/") {
				return fmt.Errorf("%s: in the system directory %s: refusing to write there", what, s)
			}
		}
	}
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s: %s is a symbolic link: refusing to write through it (give the directory it points at)", what, dir)
	}
	return nil
}

// resolveExisting resolves the symbolic links of abs's longest existing prefix and joins the rest to
// it: where a path not made yet would be made.
func resolveExisting(abs string) string {
	rest := ""
	for p := abs; ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		if p == "/" || p == "." {
			return abs
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// CheckOwnDir refuses dir as an output directory unless it is absent, empty, or ours says its entries
// are the lab's (a run directory, a report directory); it also refuses what CheckDir refuses, and a
// dir that exists and is not a directory. what names the flag for errors ("-o").
func CheckOwnDir(what, dir string, ours func(names []string) bool) error {
	if err := CheckDir(dir); err != nil {
		return fmt.Errorf("%s %w", what, err)
	}
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s %s: exists and is not a directory: refusing to replace it", what, dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	if len(ents) == 0 {
		return nil
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	if ours != nil && ours(names) {
		return nil
	}
	return fmt.Errorf("%s %s: a directory with other content (%s...), not one the lab wrote: refusing to write into it; give a new or empty directory", what, dir, names[0])
}

// Check refuses path as an output file: a symbolic link, a directory or anything not a regular file,
// in the root or a system directory or a directory that does not exist, or (policy New) any existing
// file.
func Check(path string, policy Policy) error {
	if err := checkDir(path, filepath.Dir(path)); err != nil {
		return err
	}
	// Its directory must be there now: a file checked before a long run (a profile) and written after
	// it would otherwise be lost at the end.
	if fi, err := os.Stat(filepath.Dir(path)); err != nil {
		return fmt.Errorf("%s: its directory: %w", path, err)
	} else if !fi.IsDir() {
		return fmt.Errorf("%s: %s is not a directory", path, filepath.Dir(path))
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		return fmt.Errorf("%s: a symbolic link: refusing to write through it (it would replace the file it points at)", path)
	case m.IsDir():
		return fmt.Errorf("%s: a directory: refusing to replace it with a file", path)
	case !m.IsRegular():
		return fmt.Errorf("%s: not a regular file (%s): refusing to write there", path, m.Type())
	case policy == New:
		return existsError{path}
	}
	return nil
}

// existsError is policy New's refusal of an existing file; it is fs.ErrExist (errors.Is), as link(2)'s
// refusal of a path that appeared meanwhile is, so a caller creating a file once among many processes
// tells "another made it" by one test.
type existsError struct{ path string }

func (e existsError) Error() string {
	return e.path + ": exists, and this command never replaces a file it did not create: remove it or give a new name"
}

func (e existsError) Is(target error) bool { return target == fs.ErrExist }

// Write writes path through write: checked (Check), into a temporary .NAME.tmp-* in the same directory,
// synced, then renamed over path (policy Replace) or linked to it (policy New: fails if path appeared
// meanwhile). On any error, the temporary is removed and path is as it was.
func Write(path string, policy Policy, write func(io.Writer) error) (err error) {
	f, err := Create(path, policy)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Abort()
		}
	}()
	w := bufio.NewWriterSize(f, 64<<10)
	if err = write(w); err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// WriteBytes is Write for a file held in memory.
func WriteBytes(path string, policy Policy, b []byte) error {
	return Write(path, policy, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// File is an output being written: a temporary file that Close commits to its path and Abort removes.
// For outputs streamed over a long time (a capture's pcap, a CPU profile).
type File struct {
	*os.File
	path   string
	policy Policy
	done   bool
}

// Create checks path (Check) and opens a temporary file next to it; Close commits it.
func Create(path string, policy Policy) (*File, error) {
	if err := Check(path, policy); err != nil {
		return nil, err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// A replaced file keeps its permissions (a claims table a user made group-writable, a report
	// readable by its owner only); a new one is 0644, as the lab's directories' files are.
	mode := fs.FileMode(0o644)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		mode = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &File{File: f, path: path, policy: policy}, nil
}

// Close syncs and closes the temporary, puts it at its path and syncs the directory; on an error (a full disk's ENOSPC from
// the sync, a path that appeared meanwhile) the temporary is removed and the error returned.
func (f *File) Close() (err error) {
	if f.done {
		return nil
	}
	f.done = true
	tmp := f.File.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if err = f.File.Sync(); err != nil {
		f.File.Close()
		return fmt.Errorf("%s: %w", f.path, err)
	}
	if err = f.File.Close(); err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	// Checked again: a link or directory made at the path while we wrote is not replaced.
	if err = Check(f.path, f.policy); err != nil {
		return err
	}
	if f.policy == New {
		if err = os.Link(tmp, f.path); err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
		if err = os.Remove(tmp); err != nil {
			return err
		}
	} else if err = os.Rename(tmp, f.path); err != nil {
		return err
	}
	// The new name is an entry of the directory: until the directory is synced too, a crash can leave
	// the old file (or none) however well the data was synced.
	if err := syncDir(filepath.Dir(f.path)); err != nil {
		return fmt.Errorf("%s: syncing its directory: %w", f.path, err)
	}
	return nil
}

// syncDir fsyncs a directory (a variable: the tests see that Close calls it).
var syncDir = func(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Abort removes the temporary; the path is left as it was.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	os.Remove(f.File.Name())
}

// Name is the path the file will have once closed.
func (f *File) Name() string { return f.path }
