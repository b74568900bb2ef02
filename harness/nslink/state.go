package nslink

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/fabriclab/fabriclab/bounded"
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
	Lab string `json:"lab"`
	PID int    `json:"pid"` // the process that brought the lab up
	// PIDStart is PID's start time (/proc/PID/stat field 22), so a PID reused later is not taken for it.
	PIDStart string `json:"pid_start,omitempty"`
	// BoundToPID: the lab lives only while PID runs (a lab run's, an agent server's part of a lab): PID
	// gone means it was killed before its teardown. False for lab up, whose process exits by design
	// (Options.Outlives), and in state files written before the field.
	BoundToPID bool      `json:"bound_to_pid,omitempty"`
	Created    time.Time `json:"created"`
	Family     string    `json:"family,omitempty"`
	MTU        int       `json:"mtu"`
	TxQueueLen int       `json:"txqueuelen"`
	Complete   bool      `json:"complete"` // Up finished; false after a crash or while coming up
	// Token is random, written before anything is made; Mark() of it tags every namespace the lab makes
	// (its loopback's alias, and the placeholder file under it), so one the file lists without an inode
	// can be told from someone else's of the same name.
	Token      string      `json:"token,omitempty"`
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

// LinkEntry is one veth pair: interface A.Ifname in namespace A.NS and its peer; or, with VXLAN set,
// this machine's end A of a link to another machine (B is empty).
type LinkEntry struct {
	Index int         `json:"index"` // link index in the topology graph
	A     LinkEnd     `json:"a"`
	B     LinkEnd     `json:"b"`
	VXLAN *VXLANEntry `json:"vxlan,omitempty"`
}

// ends are the entry's ends in this machine's namespaces.
func (k LinkEntry) ends() []LinkEnd {
	if k.VXLAN != nil {
		return []LinkEnd{k.A}
	}
	return []LinkEnd{k.A, k.B}
}

// LinkEnd names an interface inside a namespace.
type LinkEnd struct {
	NS     string `json:"ns"`
	Ifname string `json:"ifname"`
}

// Mark is the tag of the lab's namespaces ("" for a state file from before tokens: nothing is verifiable
// by it).
func (st *State) Mark() string {
	if st.Token == "" {
		return ""
	}
	return "fabriclab:" + st.Lab + ":" + st.Token
}

// Check refuses a state file naming anything that is not the lab's own: every namespace must be
// fl-<lab>-<device> for a device name of [a-z0-9]+ (so its path is a direct child of NetnsDir, never
// "../x"), every link must join two of those namespaces by port names p<i>. Down and Status act only on
// a state file that passes.
func (st *State) Check() error {
	if err := ValidateName(st.Lab); err != nil {
		return err
	}
	ours := map[string]bool{}
	for _, e := range st.Namespaces {
		if !deviceRE.MatchString(e.Device) || len(e.Device) > 32 || e.Name != NSName(st.Lab, e.Device) {
			return fmt.Errorf("namespace %q (device %q) is not one of lab %s's names (%s): refusing to act on this state file",
				e.Name, e.Device, st.Lab, NSName(st.Lab, "<device>"))
		}
		ours[e.Name] = true
	}
	for _, k := range st.Links {
		if k.VXLAN != nil {
			if err := k.VXLAN.check(); err != nil {
				return fmt.Errorf("link %d: %w: refusing to act on this state file", k.Index, err)
			}
		}
		for _, end := range k.ends() {
			if !ours[end.NS] || !portRE.MatchString(end.Ifname) {
				return fmt.Errorf("link %d end %s:%s is not in one of lab %s's namespaces: refusing to act on this state file",
					k.Index, end.NS, end.Ifname, st.Lab)
			}
		}
	}
	return nil
}

var portRE = regexp.MustCompile(`^p[0-9]{1,4}$`)

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

// ErrNoLab is ReadState's error (errors.Is) for a lab without a state file.
var ErrNoLab = errors.New("no such lab")

type noLabError struct{ lab string }

func (e noLabError) Error() string {
	return fmt.Sprintf("no lab %q (no state file %s; lab status lists the labs)", e.lab, statePath(e.lab))
}
func (e noLabError) Is(target error) bool { return target == ErrNoLab }

// ReadState reads a lab's state file.
func ReadState(lab string) (*State, error) {
	b, err := bounded.ReadFile(statePath(lab), bounded.State)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, noLabError{lab}
		}
		return nil, err
	}
	return ParseState(b, lab, statePath(lab))
}

// ParseState decodes and checks the state file of lab (path names it in errors).
func ParseState(b []byte, lab, path string) (*State, error) {
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("state file %s: %w", path, err)
	}
	if st.Lab != lab {
		return nil, fmt.Errorf("state file %s names lab %q, not %q", path, st.Lab, lab)
	}
	if err := st.Check(); err != nil {
		return nil, fmt.Errorf("state file %s: %w", path, err)
	}
	return &st, nil
}

// List returns the state of every lab that has a readable, valid state file, sorted by name, and one
// error for each that has not: a bad state file is reported and skipped, never hides the other labs.
func List() ([]State, []error) {
	ents, err := os.ReadDir(StateRoot)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, []error{err}
	}
	var out []State
	var errs []error
	for _, e := range ents {
		if !e.IsDir() || ValidateName(e.Name()) != nil {
			continue
		}
		if _, err := os.Stat(statePath(e.Name())); err != nil {
			continue // a directory without a state file is not a lab
		}
		st, err := ReadState(e.Name())
		if err != nil {
			errs = append(errs, fmt.Errorf("lab %s: %w (skipped)", e.Name(), err))
			continue
		}
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Lab < out[j].Lab })
	return out, errs
}

// StateDir is where lab keeps its state file, lock and (live labs) control socket.
func StateDir(lab string) string { return stateDir(lab) }
