// Package cluster carries a netns lab over several machines: the cluster file that names them, the
// authenticated control channel between the coordinator (`lab run --cluster`) and the agent server on
// each machine (`lab agent serve`), the clock-offset measurement over that channel, and the server
// itself, which makes its machine's part of a lab (namespaces, veths inside the machine, VXLAN to the
// others) and runs its agent.
package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fabriclab/fabriclab/bounded"
)

// DefaultVXLANPort is the UDP port of the links between machines: containerlab's default, not IANA's
// 4789, which Docker's overlay networks and Kubernetes CNIs (flannel, Calico) may already hold.
const DefaultVXLANPort = 14789

// DefaultVNIBase is the VNI of a lab's link 0; link i gets base+i (meshnet-cni, KNE's, uses 5000 + its
// link uid). Two labs at once over the same machines need bases further apart than their link counts.
const DefaultVNIBase = 5000

// MaxVNI is the largest VXLAN network identifier (24 bits).
const MaxVNI = 1<<24 - 1

// File is a cluster file: the machines a lab spreads over and the secret their agents share.
type File struct {
	// Secret is the path of the shared secret (relative paths are relative to the cluster file).
	Secret   string    `yaml:"secret"`
	Machines []Machine `yaml:"machines"`
	VXLAN    VXLAN     `yaml:"vxlan"`
	// ClockBound, if set, replaces the default bound on each machine's clock offset (Duration syntax,
	// e.g. 20us); see Bound.
	ClockBound string `yaml:"clock_bound"`
	// WaitForAgents, if set, is how long the coordinator keeps trying a machine it cannot reach (a name
	// that does not resolve yet, a connection refused or unanswered), saying each time which it waits
	// for: a coordinator started with its agents (a Kubernetes Job beside a StatefulSet) may come up
	// first. Unset, an unreachable machine is an error at once. A machine that answers and refuses (the
	// secret, the version) is never retried.
	WaitForAgents string `yaml:"wait_for_agents"`
	// Log, if set, is told what the coordinator waits for (default: standard error).
	Log func(string) `yaml:"-"`
	dir string
}

// Wait is WaitForAgents as a duration (0 when unset).
func (f *File) Wait() time.Duration {
	d, _ := time.ParseDuration(f.WaitForAgents) // validated with the file
	return d
}

// Machine is one machine: where its agent server listens and the address its VXLAN links use.
type Machine struct {
	Name    string `yaml:"name"`
	Control string `yaml:"control"` // HOST:PORT of `lab agent serve --listen`
	// Underlay is the IPv4 address of the machine's underlay interface; empty: whatever the server's
	// --underlay is (checked against it when set).
	Underlay string `yaml:"underlay"`
}

// VXLAN tunes the links between machines.
type VXLAN struct {
	Port    int `yaml:"port"`     // UDP destination port (default DefaultVXLANPort)
	VNIBase int `yaml:"vni_base"` // VNI of link 0 (default DefaultVNIBase)
}

var machineRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)

// Load reads and validates a cluster file.
func Load(path string) (*File, error) {
	b, err := bounded.ReadFile(path, bounded.Spec)
	if err != nil {
		return nil, fmt.Errorf("cluster file: %w", err)
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("cluster file %s: %w", path, err)
	}
	f.dir = filepath.Dir(path)
	return f, nil
}

// Parse decodes and validates a cluster file's text; unknown fields are errors (a misspelt field must
// not silently fall back to a default).
func Parse(b []byte) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	if f.VXLAN.Port == 0 {
		f.VXLAN.Port = DefaultVXLANPort
	}
	if f.VXLAN.VNIBase == 0 {
		f.VXLAN.VNIBase = DefaultVNIBase
	}
	return &f, f.Validate()
}

// Validate names the first field that is wrong.
func (f *File) Validate() error {
	if f.Secret == "" {
		return errors.New("secret: the path of the agents' shared secret is required")
	}
	if len(f.Machines) == 0 {
		return errors.New("machines: at least one machine is required")
	}
	names, controls, underlays := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, m := range f.Machines {
		at := fmt.Sprintf("machines[%d]", i)
		if !machineRE.MatchString(m.Name) {
			return fmt.Errorf("%s.name %q: use 1-32 characters of a-z, 0-9 and '-'", at, m.Name)
		}
		if names[m.Name] {
			return fmt.Errorf("%s.name %q is used twice", at, m.Name)
		}
		names[m.Name] = true
		host, port, err := net.SplitHostPort(m.Control)
		if err != nil || host == "" {
			return fmt.Errorf("%s.control %q: want HOST:PORT", at, m.Control)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return fmt.Errorf("%s.control %q: port is not in 1..65535", at, m.Control)
		}
		if controls[m.Control] {
			return fmt.Errorf("%s.control %q is used twice", at, m.Control)
		}
		controls[m.Control] = true
		if m.Underlay == "" {
			continue // the server's own --underlay (a container's or pod's address is not known beforehand)
		}
		ip := net.ParseIP(m.Underlay)
		if ip == nil || ip.To4() == nil || ip.IsUnspecified() || ip.IsMulticast() || ip.IsLoopback() {
			return fmt.Errorf("%s.underlay %q: want the machine's unicast IPv4 address", at, m.Underlay)
		}
		if underlays[ip.String()] {
			return fmt.Errorf("%s.underlay %q is used twice", at, m.Underlay)
		}
		underlays[ip.String()] = true
	}
	if f.VXLAN.Port < 1 || f.VXLAN.Port > 65535 {
		return fmt.Errorf("vxlan.port %d is not in 1..65535", f.VXLAN.Port)
	}
	if f.VXLAN.VNIBase < 1 || f.VXLAN.VNIBase > MaxVNI {
		return fmt.Errorf("vxlan.vni_base %d is not in 1..%d", f.VXLAN.VNIBase, MaxVNI)
	}
	if f.ClockBound != "" {
		if d, err := time.ParseDuration(f.ClockBound); err != nil || d <= 0 {
			return fmt.Errorf("clock_bound %q: want a positive duration such as 20us", f.ClockBound)
		}
	}
	if f.WaitForAgents != "" {
		if d, err := time.ParseDuration(f.WaitForAgents); err != nil || d <= 0 || d > time.Hour {
			return fmt.Errorf("wait_for_agents %q: want a duration from 1s to 1h such as 5m", f.WaitForAgents)
		}
	}
	return nil
}

// SecretPath is the secret's path, relative paths taken from the cluster file's directory.
func (f *File) SecretPath() string {
	if filepath.IsAbs(f.Secret) || f.dir == "" {
		return f.Secret
	}
	return filepath.Join(f.dir, f.Secret)
}

// MinSecret is the shortest secret accepted: 16 bytes (128 bits) from a random source.
const MinSecret = 16

// ReadSecret reads a secret file (surrounding whitespace dropped). A short secret is refused, and so is
// one that others can read: whoever holds it can make namespaces as root on every machine.
func ReadSecret(path string) ([]byte, error) {
	// Opened first (non-blocking: a FIFO never hangs the agent before its signals are handled), then
	// judged on what was opened: a directory or FIFO is no secret, whatever its mode says.
	f, err := bounded.Open(path)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("secret %s: not a regular file (%s): give the file holding the secret", path, st.Mode().Type())
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secret %s: mode %o lets others read it: chmod 600 it", path, st.Mode().Perm())
	}
	b, err := bounded.ReadAll(f, path, bounded.Secret)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) < MinSecret {
		return nil, fmt.Errorf("secret %s: %d bytes, need at least %d (e.g. head -c 32 /dev/urandom | base64 > %s)", path, len(b), MinSecret, path)
	}
	return b, nil
}
