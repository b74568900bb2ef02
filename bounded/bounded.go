// Package bounded reads files with a size limit, so that a path naming /dev/zero, a FIFO or a
// mistaken multi-gigabyte file is refused after the limit instead of read to the end (or forever).
package bounded

import (
	"fmt"
	"io"
	"os"
)

// Limits of the files fabriclab reads. Each is far above what the repo's own files and runs produce.
const (
	Spec     = 16 << 20  // a spec YAML
	CDF      = 16 << 20  // a flow-size CDF
	Trace    = 256 << 20 // a flow.txt / .cm trace (about 6 M flows)
	Topology = 64 << 20  // a topology JSON (NDC(64,2), 262 k hosts, is about 60 MB)
	RunFile  = 1 << 30   // one file of a run directory (fct.txt of millions of flows)
	State    = 16 << 20  // a netns lab's state file
)

// TooLarge is the error for a file beyond its limit.
type TooLarge struct {
	Path  string
	Limit int64
}

func (e *TooLarge) Error() string {
	return fmt.Sprintf("%s: more than %d bytes, the limit for this file", e.Path, e.Limit)
}

// Open opens a file to read, refusing devices and directories (/dev/zero, /dev/urandom: endless, and
// never meant). Regular files and pipes (a shell's <(...)) are fine.
func Open(path string) (*os.File, error) {
	f, err := os.Open(path)
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
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, m.Type())
	}
	return f, nil
}

// ReadFile is os.ReadFile refusing files larger than limit bytes and devices.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}

// ReadAll reads r to the end, refusing more than limit bytes; name is for the error.
func ReadAll(r io.Reader, name string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLarge{Path: name, Limit: limit}
	}
	return data, nil
}

// Reader wraps r so that reading past limit bytes fails with TooLarge, for scanners and decoders that
// stream.
func Reader(r io.Reader, name string, limit int64) io.Reader {
	return &reader{r: r, name: name, left: limit, limit: limit}
}

type reader struct {
	r     io.Reader
	name  string
	left  int64
	limit int64
}

func (l *reader) Read(p []byte) (int, error) {
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
