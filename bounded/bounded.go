// Package bounded reads input files with a size limit that fits the file's kind, so that a path naming
// /dev/zero, a FIFO or a mistaken multi-gigabyte file is refused at once instead of read to the end (or
// forever). It is the one way fabriclab's commands read a file a user named (a test in cmd/lab greps
// for reads around it).
package bounded

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Limits of the files fabriclab reads. Each is far above what the repo's own files and runs produce.
const (
	Spec     = 16 << 20  // a spec YAML
	CDF      = 16 << 20  // a flow-size CDF
	Trace    = 256 << 20 // a flow.txt / .cm trace (about 6 M flows)
	Topology = 64 << 20  // a topology JSON (NDC(64,2), 262 k hosts, is about 60 MB)
	RunFile  = 1 << 30   // a table of a run directory (flows.csv, fct.txt of millions of flows)
	State    = 16 << 20  // a netns lab's state file
	// Summary is a run's summary.json, run.json, a tree's manifest.json or a status file: figures per
	// workload class and per port, never per flow (a 1024-host run's is about 1 MB).
	Summary = 64 << 20
	// Claims is a claims.json, a per-seed file or an analyze JSON of lab claims.
	Claims = 64 << 20
	// Page is a documentation page lab claims rewrites.
	Page = 16 << 20
	// Secret is a cluster secret (a token of a few dozen bytes).
	Secret = 64 << 10
)

// TooLarge is the error for a file beyond its limit.
type TooLarge struct {
	Path  string
	Size  int64 // the file's size when Stat knew it, else 0
	Limit int64
}

func (e *TooLarge) Error() string {
	if e.Size > 0 {
		return fmt.Sprintf("%s: %d bytes, more than %d bytes, the limit for this file", e.Path, e.Size, e.Limit)
	}
	return fmt.Sprintf("%s: more than %d bytes, the limit for this file", e.Path, e.Limit)
}

// Open opens a file to read. Regular files and pipes (a shell's <(...)) are accepted; devices
// (/dev/zero, /dev/urandom: endless, and never meant), directories and sockets are refused. The open is
// non-blocking: open(2) of a FIFO without a writer blocks in the kernel, where no signal handler runs
// (lab run fifo.yaml ignored SIGINT); opened non-blocking it returns at once, and a FIFO that has no
// writer reads as empty.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if m := st.Mode(); !m.IsRegular() && m&os.ModeNamedPipe == 0 {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, kind(m))
	}
	return f, nil
}

// kind names a file mode's type for an error.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return m.Type().String()
}

// ReadFile is os.ReadFile refusing devices and files larger than limit bytes: a regular file by its
// size before a byte is read.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}

// ReadAll reads r to the end, refusing more than limit bytes; name is for the error. A regular file
// (r an *os.File, or anything with Stat) is judged by its size first: a 3 GB file is refused without
// reading the first gigabyte.
func ReadAll(r io.Reader, name string, limit int64) ([]byte, error) {
	if err := checkSize(r, name, limit); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLarge{Path: name, Limit: limit}
	}
	return data, nil
}

// checkSize refuses a regular file larger than limit by its size (sparse files included: their size is
// what a reader would read).
func checkSize(r io.Reader, name string, limit int64) error {
	s, ok := r.(interface{ Stat() (fs.FileInfo, error) })
	if !ok {
		return nil
	}
	st, err := s.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	if st.Size() > limit {
		return &TooLarge{Path: name, Size: st.Size(), Limit: limit}
	}
	return nil
}

// Reader wraps r so that reading past limit bytes fails with TooLarge, for scanners and decoders that
// stream; a regular file larger than limit fails on the first read, before anything is decoded.
func Reader(r io.Reader, name string, limit int64) io.Reader {
	return &reader{r: r, name: name, left: limit, limit: limit, err: checkSize(r, name, limit)}
}

type reader struct {
	r     io.Reader
	name  string
	left  int64
	limit int64
	err   error
}

func (l *reader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if l.left <= 0 {
		// One more byte tells a file of exactly limit bytes from a longer one.
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			return 0, &TooLarge{Path: l.name, Limit: l.limit}
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// Within resolves path, as given relative to root (or absolute), and refuses it unless it stays inside
// root once symbolic links are followed: lab claims reads files under the directories it was given,
// never ../../dev/zero or /etc/passwd through a claim's source or a link. The resolved path is returned.
// A path that does not exist is judged by its cleaned name.
func Within(root, path string) (string, error) {
	rootAbs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(rootAbs); err == nil {
		rootAbs = r
	}
	p := path
	if !filepath.IsAbs(p) {
		p = filepath.Join(rootAbs, p)
	}
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	rel, err := filepath.Rel(rootAbs, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s: outside %s, the directory it must be read from", path, root)
	}
	return p, nil
}
