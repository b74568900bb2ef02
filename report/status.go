package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fabriclab/fabriclab/bounded"
)

// StatusSuffix names a tree run's status file: the run directory DIR has DIR.status.json beside it,
// written (atomically, by rename) by the process running it, whichever process or machine that is.
// It is what lab report reads to decide whether a run finished: many processes (a Kubernetes Indexed
// Job, a Slurm array) fill one tree, and none of them rewrites the shared manifest.json.
const StatusSuffix = ".status.json"

// RunStatus is a tree run's status file.
type RunStatus struct {
	Index   int64     `json:"index"`  // the run's index in the tree (lab run --list)
	Dir     string    `json:"dir"`    // relative to the tree
	Status  string    `json:"status"` // running, done, failed, unfaithful, interrupted, died (lab clean)
	Error   string    `json:"error,omitempty"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	WallS   float64   `json:"wall_s,omitempty"`
}

// StatusPath is the status file of the run directory dir (relative to tree).
func StatusPath(tree, dir string) string {
	return filepath.Join(tree, filepath.Clean(dir)+StatusSuffix)
}

// ReadRunStatus reads the status file of tree's run dir; (nil, nil) when there is none (a run not
// started, or a tree written before status files).
func ReadRunStatus(tree, dir string) (*RunStatus, error) {
	b, err := bounded.ReadFile(StatusPath(tree, dir), bounded.Spec)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st RunStatus
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", StatusPath(tree, dir), err)
	}
	return &st, nil
}

// LockPath is the lock file of tree's run dir (.NAME.lock beside it): the process running the run holds
// an flock on it from before its status file says running until after it says how the run ended.
// flock locks are the kernel's, or the file server's on NFSv4 and CephFS, where shared trees live: one
// that is free says its holder is gone, whatever host or container it ran in.
func LockPath(tree, dir string) string {
	return filepath.Join(tree, filepath.Dir(dir), "."+filepath.Base(dir)+".lock")
}

// Orphaned says whether st, a status file saying running, was left by a process that is gone: the run's
// lock is free (a SIGKILLed --index process, a pod deleted with its node). A run whose lock cannot be
// probed (no lock file: a tree written before locks) is not called orphaned. The probe holds the lock
// for an instant (a run starting then retries: cmd/lab lockRun).
func (st *RunStatus) Orphaned(tree string) bool {
	if st.Status != "running" {
		return false
	}
	f, err := os.OpenFile(LockPath(tree, st.Dir), os.O_RDWR, 0) // writable, as NFS needs for flock
	if err != nil {
		return false
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

// MarkDied makes st say the run died: its process ended without saying how the run ended.
func (st *RunStatus) MarkDied() {
	st.Error = fmt.Sprintf("its process (pid %d on %s, running since %s) is gone without saying how the run ended (killed?); nobody holds %s",
		st.PID, st.Host, st.Started.Format(time.RFC3339), "."+filepath.Base(st.Dir)+".lock")
	st.Status = "died"
}

// describe says how a run that is not done stands, for the report's "not in the aggregate" list.
func (st *RunStatus) describe() string {
	s := st.Status
	switch {
	case st.Status == "running":
		s += fmt.Sprintf(" (on %s, pid %d, since %s)", st.Host, st.PID, st.Started.Format(time.RFC3339))
	case st.Error != "":
		s += fmt.Sprintf(" (on %s: %s)", st.Host, st.Error)
	}
	return s
}
