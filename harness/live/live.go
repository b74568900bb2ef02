// Package live runs a lab as a live network (`lab up`): the lab's Go switches forward in real time, at
// the spec's dilation, between kernel-stack hosts that any program can use (`lab exec LAB h0 -- ping
// h5`). A supervisor process, started by Up and detached from the terminal, owns the agent that runs
// the switches and answers `lab inspect`, `lab link` and `lab capture` on a Unix socket in the lab's
// state directory. `lab down` ends the supervisor and the agent (both are in the lab's agents file)
// and removes the namespaces as for any lab.
package live

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/fabriclab/fabriclab/bounded"
	"github.com/fabriclab/fabriclab/harness/kernelhost"
	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/wire"
)

// Config says which lab to bring up: a spec file, or a topology family with its parameters.
type Config struct {
	Name     string            `json:"name"`
	SpecPath string            `json:"spec,omitempty"`
	Family   string            `json:"family,omitempty"`
	Params   map[string]string `json:"params,omitempty"`
	// Dilation for a family (a spec file gives its own): 100 Gb/s links at D=1000 run at 100 Mb/s.
	Dilation float64 `json:"dilation,omitempty"`
	// MTU of the kernel hosts (and so of every link); 0: the spec's host.mtu, else 1500.
	MTU int `json:"mtu,omitempty"`
	// Cluster is the cluster file (absolute) of a lab over several machines (cluster.go).
	Cluster string `json:"cluster,omitempty"`

	readyWait time.Duration // how long the supervisor may take to be ready, beyond 3 minutes (a big lab)
}

// DefaultDilation is a family lab's dilation: 100 Gb/s links at 100 Mb/s, about 8 k full-size frames per
// second per direction, which one agent forwards on a 2-core machine with room to spare.
const DefaultDilation = 1000

// Build assembles the lab the config names, with kernel-stack hosts (host.transport kernel-tcp on the
// netns backend, whatever the spec says) and returns notes on what was changed to make it live.
func Build(cfg Config) (*lab.Lab, []string, error) {
	var s *spec.Spec
	var err error
	if cfg.SpecPath != "" {
		if s, err = spec.Load(cfg.SpecPath); err != nil {
			return nil, nil, err
		}
	} else {
		s, err = familySpec(cfg)
		if err != nil {
			return nil, nil, err
		}
	}
	var notes []string
	if s.Dilation <= 1 && s.Backend != "netns" || s.Dilation == 0 { // 0: a netns spec that leaves it to the backend
		// A virtual spec's links at D=1 are far beyond what one agent forwards in real time.
		s.Dilation = DefaultDilation
		notes = append(notes, fmt.Sprintf("the spec sets no dilation: the live lab runs at %d", DefaultDilation))
	}
	s.Backend = "netns"
	if s.Host.Transport != "kernel-tcp" {
		if s.Host.Transport != "" {
			notes = append(notes, fmt.Sprintf("hosts are kernel-stack hosts (the spec's host.transport %s applies to `lab run`)", s.Host.Transport))
		}
		s.Host.Transport = "kernel-tcp"
		s.Host.CC = ""
	}
	if cfg.MTU > 0 {
		s.Host.MTU = cfg.MTU
	}
	switch fc := s.Switch.FlowControl; fc {
	case "", "lossy", "pfc", "pfcstar":
	default:
		notes = append(notes, fmt.Sprintf("switch.flow_control %s needs NIC-engine hosts; the live lab's switches run lossy", fc))
		s.Switch.FlowControl = "lossy"
	}
	l, err := lab.Build(s)
	if err != nil {
		return nil, notes, err
	}
	if err := kernelhost.Available(s.Host.CC); err != nil {
		return nil, notes, err
	}
	if fc := s.Switch.FlowControl; fc != "" && fc != "lossy" {
		notes = append(notes, fmt.Sprintf("switch.flow_control %s: kernel hosts neither send nor obey pauses, so only switch-to-switch links are lossless", fc))
	}
	return l, notes, nil
}

func familySpec(cfg Config) (*spec.Spec, error) {
	d := cfg.Dilation
	if d == 0 {
		d = DefaultDilation
	}
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nbackend: netns\ndilation: %g\nduration: 1s\n", cfg.Name, d)
	fmt.Fprintf(&b, "switch: {flow_control: lossy}\nhost: {transport: kernel-tcp, mtu: 1500}\nrouting: {algorithm: shortest}\n")
	fmt.Fprintf(&b, "topology:\n  family: %q\n", cfg.Family)
	keys := make([]string, 0, len(cfg.Params))
	for k := range cfg.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var link []string
	for _, k := range keys {
		v := cfg.Params[k]
		if k == "rate" || k == "delay" {
			link = append(link, fmt.Sprintf("%s: %q", k, v))
			continue
		}
		fmt.Fprintf(&b, "  %s: %q\n", k, v)
	}
	if len(link) > 0 {
		fmt.Fprintf(&b, "  link: {%s}\n", strings.Join(link, ", "))
	}
	s, err := spec.Parse([]byte(b.String()))
	if err != nil {
		return nil, fmt.Errorf("lab up %s: %w", cfg.Family, err)
	}
	return s, nil
}

// Info is what Up reports about the lab it brought up.
type Info struct {
	Name     string
	Lab      *lab.Lab
	Notes    []string
	Dilation float64
	MTU      int
}

// EtcNetns is where `ip netns exec` finds per-namespace files it bind-mounts over /etc.
const EtcNetns = "/etc/netns"

// buildNamed builds cfg's lab and settles its name (the spec's when --name is not given), refusing a
// name no namespace can carry, before anything is made on any machine.
func buildNamed(cfg *Config) (*lab.Lab, []string, error) {
	l, notes, err := Build(*cfg)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Name == "" {
		cfg.Name = l.Spec.Name
	}
	if err := nslink.ValidateName(cfg.Name); err != nil {
		return nil, nil, fmt.Errorf("%w (choose one with --name)", err)
	}
	return l, notes, nil
}

// Up brings the lab up and starts its supervisor. On error, or when ctx is cancelled, it removes what
// it made. progress, if set, hears the phases.
func Up(ctx context.Context, cfg Config, progress func(string)) (*Info, error) {
	if progress == nil {
		progress = func(string) {}
	}
	if !lockstep.AgentLinked {
		return nil, errors.New("lab up: this binary does not contain the agent")
	}
	if cfg.Cluster != "" {
		return upCluster(ctx, cfg, progress)
	}
	l, notes, err := buildNamed(&cfg)
	if err != nil {
		return nil, err
	}
	info := &Info{Name: cfg.Name, Lab: l, Notes: notes, Dilation: l.Spec.EffectiveDilation(), MTU: netns.LabMTU(l)}
	// Hold: the lab stays locked until its supervisor is ready, so a `lab down` (or `lab down --all`)
	// from another process finds it busy instead of removing namespaces the bring-up still uses.
	nl, err := nslink.Up(ctx, cfg.Name, l.Graph, nslink.Options{MTU: info.MTU, Hold: true, Outlives: true,
		Progress: func(phase string, done, total int, _ time.Duration) {
			progress(fmt.Sprintf("%s %d/%d", phase, done, total))
		}})
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			removeHostsFiles(cfg.Name)
			nl.Remove()
			return
		}
		nl.Release()
	}()
	progress("kernel hosts")
	if err := setupHosts(nl, l, func(done, total int) { progress(fmt.Sprintf("kernel hosts %d/%d", done, total)) }); err != nil {
		return nil, err
	}
	progress("switches")
	ports := 0
	for _, n := range l.Graph.Nodes {
		if n.Kind == topo.Switch || l.Tables.HostTransit {
			ports += len(n.Ports) // the agent's: every switch's, and a relay host's
		}
	}
	cfg.readyWait = netns.ReadyTimeoutPorts(ports) + time.Minute
	rec := func(pid int, token string) error { return nslink.RecordProcess(cfg.Name, pid, token) }
	if err := startSupervisor(ctx, cfg, nslink.StateDir(cfg.Name), rec); err != nil {
		return nil, err
	}
	ok = true
	return info, nil
}

func setupHosts(nl *nslink.Lab, l *lab.Lab, progress func(done, total int)) error {
	return SetupHosts(nl, l.Graph, nil, l.Tables.HostTransit, kernelhost.Config{CC: l.Spec.Host.CC, ECN: l.Spec.Switch.ECN.ECNEnabled(),
		Progress: progress})
}

// SetupHosts sets up the kernel hosts among nodes (nil: every host of g) on nl, each told about every
// host of g, and writes their hosts files. transit: a server-centric fabric's hosts, whose ports are a
// relay engine's, with the kernel behind it on a veth. A machine's agent server calls it for its share
// of a live lab over several machines.
func SetupHosts(nl *nslink.Lab, g *topo.Graph, nodes []int, transit bool, cfg kernelhost.Config) error {
	mine := map[int]bool{}
	for _, n := range nodes {
		mine[n] = true
	}
	var hs, all []kernelhost.Host
	for _, n := range g.Hosts {
		h := kernelhost.Host{Device: g.Nodes[n].Name, Index: g.Nodes[n].Index}
		if transit {
			h.Ifname = nslink.KernelIf
		}
		all = append(all, h)
		if nodes != nil && !mine[n] {
			continue
		}
		if transit {
			// A relay host: its ports are the relay engine's; the kernel sits behind it on a veth.
			if err := nl.AddKernelPort(h.Device, nl.MTU); err != nil {
				return err
			}
		}
		hs = append(hs, h)
	}
	if err := kernelhost.SetupAmong(nl, hs, all, cfg); err != nil {
		return err
	}
	// Names resolve inside the lab: `ip netns exec` (and so `lab exec`) bind-mounts
	// /etc/netns/<namespace>/hosts over /etc/hosts.
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost\n")
	for _, h := range all {
		fmt.Fprintf(&b, "%s\t%s\n", wire.HostIP(h.Index), h.Device)
	}
	for _, h := range hs {
		dir := filepath.Join(EtcNetns, nl.NSName(h.Device))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// removeHostsFiles removes /etc/netns/fl-<lab>-*: names only our lab's namespaces carry.
func removeHostsFiles(name string) {
	dirs, _ := filepath.Glob(filepath.Join(EtcNetns, nslink.NSName(name, "*")))
	for _, d := range dirs {
		os.Remove(filepath.Join(d, "hosts"))
		os.Remove(d) // only if empty: anything else there is not ours
	}
}

// Cleanup removes what a live lab keeps outside its namespaces and state directory (the hosts files);
// `lab down` calls it once the lab's namespaces are removed.
func Cleanup(name string) {
	if nslink.ValidateName(name) == nil {
		removeHostsFiles(name)
	}
}

// SupervisorEnv turns a binary linking this package into a live lab's supervisor.
const SupervisorEnv = "FABRICLAB_LIVE"

// startSupervisor starts the supervisor process of lab cfg.Name, its log in dir, and waits until it is
// ready; record keeps its PID and token where `lab down` finds them.
func startSupervisor(ctx context.Context, cfg Config, dir string, record func(pid int, token string) error) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if cfg.SpecPath != "" {
		if cfg.SpecPath, err = filepath.Abs(cfg.SpecPath); err != nil {
			return err
		}
	}
	logf, err := os.OpenFile(filepath.Join(dir, "live.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(exe)
	token, tokenEnv := nslink.ProcessToken(cfg.Name)
	cmd.Env = append(os.Environ(), SupervisorEnv+"=1", tokenEnv)
	cmd.Stderr = logf
	// Its own session: it outlives `lab up` and the terminal; `lab down` ends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("supervisor: %w", err)
	}
	if err := record(cmd.Process.Pid, token); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return err
	}
	// Reaped if it dies before we return (its status says how); once we exit, init adopts it.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	json.NewEncoder(in).Encode(cfg)
	in.Close()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case s := <-line:
		if s == "ready" {
			return nil
		}
		if s == "" {
			s = "exited before it was ready"
			var status error
			select {
			case status = <-exited:
			case <-time.After(2 * time.Second):
			}
			if status != nil {
				s += " (" + status.Error() + ")"
			}
			b, _ := bounded.ReadFile(logf.Name(), bounded.State)
			if log := strings.TrimSpace(string(b)); log != "" {
				s += ": " + log
			} else {
				// Nothing logged: it was ended from outside, most likely by a lab down of the same
				// name while it came up (lab status shows what is left).
				s += ", without a word in its log: was it ended from outside (a lab down " + cfg.Name + " at the same time)?"
			}
		}
		return fmt.Errorf("supervisor: %s", s)
	case <-time.After(max(3*time.Minute, cfg.readyWait)):
		cmd.Process.Kill()
		return fmt.Errorf("supervisor: not ready within %v", max(3*time.Minute, cfg.readyWait))
	case <-ctx.Done():
		cmd.Process.Kill()
		return ctx.Err()
	}
}

// peerName names the other end of a port's cable for inspect.
func peerName(g *topo.Graph, node, port int) string {
	if port >= len(g.Nodes[node].Ports) {
		return "kernel:" + nslink.KernelIf // a relay host's own kernel
	}
	p := g.Peer(node, port)
	return fmt.Sprintf("%s:p%d", g.Nodes[p.Node].Name, p.Port)
}
