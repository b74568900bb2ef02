package netns

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// StateRoot is where each lab keeps its state file (/run is tmpfs: a reboot, which also drops every
// namespace, drops the state with it).
var StateRoot = "/run/fabriclab"

// NetnsDir is where named namespaces are bind-mounted; the same place iproute2 uses, so `ip netns`
// and `ip netns exec` work on a lab's namespaces.
var NetnsDir = "/run/netns"

// State is a lab's state file: every namespace and link the lab made, written before each is made.
// Teardown trusts this file and nothing else.
type State struct {
	Lab        string      `json:"lab"`
	PID        int         `json:"pid"` // the process that brought the lab up
	Created    time.Time   `json:"created"`
	Family     string      `json:"family,omitempty"`
	MTU        int         `json:"mtu"`
	TxQueueLen int         `json:"txqueuelen"`
	Complete   bool        `json:"complete"` // Up finished; false after a crash or while coming up
	Namespaces []NSEntry   `json:"namespaces"`
	Links      []LinkEntry `json:"links"`
}

// NSEntry is one namespace. Ino is the namespace's inode once it exists: Down and Status use it to tell
// our namespace from a same-named one made by someone else after ours was gone.
type NSEntry struct {
	Name   string `json:"name"`
	Device string `json:"device"`
	Ino    uint64 `json:"ino,omitempty"`
}

// LinkEntry is one veth pair: interface A.Ifname in namespace A.NS and its peer.
type LinkEntry struct {
	Index int     `json:"index"` // link index in the topology graph
	A     LinkEnd `json:"a"`
	B     LinkEnd `json:"b"`
}

// LinkEnd names an interface inside a namespace.
type LinkEnd struct {
	NS     string `json:"ns"`
	Ifname string `json:"ifname"`
}

func stateDir(lab string) string  { return filepath.Join(StateRoot, lab) }
func statePath(lab string) string { return filepath.Join(stateDir(lab), "state.json") }

// recorder serializes state-file updates from the bring-up workers. Every write is a complete file
// written to a temporary name, fsynced and renamed over the old one, so a crash at any point leaves
// either the previous or the next version, never a torn one.
type recorder struct {
	mu sync.Mutex
	st State
}

func (r *recorder) update(fn func(*State)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(&r.st)
	return writeState(&r.st)
}

func writeState(st *State) error {
	dir := stateDir(st.Lab)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".state-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), statePath(st.Lab)); err != nil {
		return err
	}
	// The rename is durable only once the directory is synced.
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ReadState reads a lab's state file.
func ReadState(lab string) (*State, error) {
	b, err := os.ReadFile(statePath(lab))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("lab %q has no state file (%s): nothing of it is ours to remove", lab, statePath(lab))
		}
		return nil, err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("state file %s: %w", statePath(lab), err)
	}
	if st.Lab != lab {
		return nil, fmt.Errorf("state file %s names lab %q, not %q", statePath(lab), st.Lab, lab)
	}
	return &st, nil
}

// List returns the state of every lab that has a state file, sorted by name.
func List() ([]State, error) {
	ents, err := os.ReadDir(StateRoot)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []State
	for _, e := range ents {
		if !e.IsDir() || ValidateName(e.Name()) != nil {
			continue
		}
		if _, err := os.Stat(statePath(e.Name())); err != nil {
			continue // a directory without a state file is not a lab
		}
		st, err := ReadState(e.Name())
		if err != nil {
			return out, err
		}
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Lab < out[j].Lab })
	return out, nil
}
