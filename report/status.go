package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
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
	Status  string    `json:"status"` // running, done, failed, unfaithful, interrupted
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
