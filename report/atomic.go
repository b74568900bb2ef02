package report

import (
	"io"

	"github.com/fabriclab/fabriclab/outfile"
)

// WriteFileAtomic writes a file of a directory the lab writes (a run or report directory) that readers
// see whole or not at all (outfile.Write: a temporary .NAME.tmp-* next to path, synced, renamed over
// path). A report killed mid-write (SIGKILL, a full disk) leaves the previous file or none, never a
// truncated PNG; a symbolic link or a directory at path is refused, never written through.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	return outfile.Write(path, outfile.Replace, write)
}

// WriteBytesAtomic is WriteFileAtomic for a file held in memory.
func WriteBytesAtomic(path string, b []byte) error {
	return outfile.WriteBytes(path, outfile.Replace, b)
}
