package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/nslink"

	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// Probes is how many clock probes are taken per machine before a run (the best one counts).
const Probes = 32

// Cluster is a run's machines: connected, authenticated, clocks measured. It implements
// netns.Machines.
type Cluster struct {
	File    *File
	remotes []*Remote
	offsets []Offset // before the run
	ends    []Offset // after it (Recheck)
	tol     time.Duration
	mtu     int
	// Live, when set, makes Up set up each machine's kernel hosts too (a live lab, `lab up --cluster`).
	Live *LiveHosts
}

var _ netns.Machines = (*Cluster)(nil)

// Connect connects to every machine of f (at once), checks what they report, and measures their clocks.
// Nothing is made on any machine yet.
func Connect(ctx context.Context, f *File) (*Cluster, error) {
	secret, err := ReadSecret(f.SecretPath())
	if err != nil {
		return nil, err
	}
	c := &Cluster{File: f, remotes: make([]*Remote, len(f.Machines)), offsets: make([]Offset, len(f.Machines))}
	errs := make([]error, len(f.Machines))
	var wg sync.WaitGroup
	for i, m := range f.Machines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := connectWaiting(ctx, m, secret, f.Wait(), f.Log)
			if err != nil {
				errs[i] = err
				return
			}
			c.remotes[i] = r
			c.offsets[i], errs[i] = r.MeasureClock(ctx, Probes)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Close()
		return nil, err
	}
	seen := map[string]string{}
	for _, r := range c.remotes {
		if other, dup := seen[r.Hello.Underlay]; dup {
			c.Close()
			return nil, fmt.Errorf("machines %s and %s report the same underlay %s", other, r.Machine.Name, r.Hello.Underlay)
		}
		seen[r.Hello.Underlay] = r.Machine.Name
	}
	return c, nil
}

// unreachable says whether err is a machine not reachable yet (worth another try while waiting for
// the agents), not one that answered and refused.
func unreachable(err error) bool {
	var dns *net.DNSError
	var op *net.OpError
	return errors.As(err, &dns) || errors.As(err, &op) && op.Op == "dial"
}

// connectWaiting is ConnectMachine, tried again every 2 s for up to wait while m is unreachable; say
// (default: standard error) is told which machine it waits for, once, and then every 30 s.
func connectWaiting(ctx context.Context, m Machine, secret []byte, wait time.Duration, say func(string)) (*Remote, error) {
	if say == nil {
		say = func(s string) { fmt.Fprintln(os.Stderr, "lab:", s) }
	}
	start, told := time.Now(), time.Time{}
	for {
		r, err := ConnectMachine(ctx, m, secret)
		if err == nil || !unreachable(err) || wait <= 0 {
			return r, err
		}
		if time.Since(start) >= wait {
			return nil, fmt.Errorf("%w; not reachable within wait_for_agents %v: is its agent server running?", err, wait)
		}
		if time.Since(told) >= 30*time.Second {
			say(fmt.Sprintf("waiting for machine %s (%s), up to %v: %v", m.Name, m.Control, wait, err))
			told = time.Now()
		}
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Close closes every connection: each server removes what it made for it.
func (c *Cluster) Close() {
	for _, r := range c.remotes {
		if r != nil {
			r.Close()
		}
	}
}

// Remote is machine i's connection.
func (c *Cluster) Remote(i int) *Remote { return c.remotes[i] }

// Offsets are the clock offsets measured before the run.
func (c *Cluster) Offsets() []Offset { return c.offsets }

// Calibrations are the machines' agent calibrations, asked one machine at a time: a machine that has
// none cached measures its agent, and machines sharing a host (containers) would otherwise measure
// each other's load. progress, if set, is told before each.
func (c *Cluster) Calibrations(ctx context.Context, progress func(string)) ([]netns.Calibration, error) {
	out := make([]netns.Calibration, len(c.remotes))
	for i, r := range c.remotes {
		if progress != nil {
			progress(fmt.Sprintf("machine %s: its agent's calibration (measured there if it has none cached)", r.Machine.Name))
		}
		cal, err := r.Calibration(ctx)
		if err != nil {
			return nil, err
		}
		out[i] = cal
	}
	return out, nil
}

// Count implements netns.Machines.
func (c *Cluster) Count() int { return len(c.remotes) }

// Name implements netns.Machines.
func (c *Cluster) Name(i int) string { return c.remotes[i].Machine.Name }

// Check implements netns.Machines: every underlay carries the lab's MTU inside VXLAN, and every clock
// is within tolerance (the cluster file's clock_bound replaces the run's when set).
func (c *Cluster) Check(mtu int, tolerance time.Duration) error {
	if c.File.ClockBound != "" {
		tolerance, _ = time.ParseDuration(c.File.ClockBound) // validated with the file
	}
	c.tol, c.mtu = tolerance, mtu
	var errs []error
	for i, r := range c.remotes {
		if err := nslink.CheckUnderlayMTU(r.Machine.Name, r.Hello.UnderlayMTU, mtu); err != nil {
			errs = append(errs, err)
		}
		if o := c.offsets[i]; o.Error() > tolerance {
			errs = append(errs, fmt.Errorf("machine %s: clock %v ± %v from the coordinator's, more than the %v this run tolerates "+
				"(half the dilated delay of the shortest link between machines): synchronise the clocks (chrony, PTP), "+
				"raise the dilation, or set clock_bound in the cluster file; nothing was made",
				r.Machine.Name, time.Duration(o.Offset), time.Duration(o.Uncertainty), tolerance))
		}
	}
	return errors.Join(errs...)
}

// Up implements netns.Machines: each machine's nodes, veths among them, and a VXLAN end per link to
// another machine (VNI vni_base + the link's index, so both ends agree without talking).
func (c *Cluster) Up(ctx context.Context, name string, g *topo.Graph, mtu int, agentOf map[int]int) error {
	reqs := make([]*UpReq, len(c.remotes))
	for i := range reqs {
		reqs[i] = &UpReq{Lab: name, Graph: g, MTU: mtu, Nodes: []int{}, Live: c.Live}
	}
	for node := range g.Nodes {
		if a, ok := agentOf[node]; ok {
			reqs[a].Nodes = append(reqs[a].Nodes, node)
		}
	}
	for li, l := range g.Links {
		a, b := agentOf[l.A.Node], agentOf[l.B.Node]
		if a == b {
			continue
		}
		vni := c.File.VXLAN.VNIBase + li
		if vni > MaxVNI {
			return fmt.Errorf("vxlan.vni_base %d + link %d exceeds the largest VNI %d", c.File.VXLAN.VNIBase, li, MaxVNI)
		}
		ua, ub := c.remotes[a].Hello.Underlay, c.remotes[b].Hello.Underlay
		reqs[a].VXLAN = append(reqs[a].VXLAN, nslink.VXLANLink{Link: li, Node: l.A.Node, Port: l.A.Port, VNI: vni, Local: ua, Remote: ub, DstPort: c.File.VXLAN.Port})
		reqs[b].VXLAN = append(reqs[b].VXLAN, nslink.VXLANLink{Link: li, Node: l.B.Node, Port: l.B.Port, VNI: vni, Local: ub, Remote: ua, DstPort: c.File.VXLAN.Port})
	}
	errs := make([]error, len(c.remotes))
	var wg sync.WaitGroup
	for i, r := range c.remotes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.Up(ctx, reqs[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Down(name) // the parts that were made
		return err
	}
	return nil
}

// Agent implements netns.Machines.
func (c *Cluster) Agent(ctx context.Context, i int, s *lockstep.AgentSetup) (lockstep.Control, error) {
	r := c.remotes[i]
	if err := r.Send(&lockstep.AgentMsg{Type: "setup", Setup: s}); err != nil {
		return nil, fmt.Errorf("machine %s: setup: %w", r.Machine.Name, err)
	}
	return r, nil
}

// Recheck implements netns.Machines: 8 probes per machine after the run.
func (c *Cluster) Recheck(ctx context.Context, tolerance time.Duration) error {
	if c.tol > 0 {
		tolerance = c.tol
	}
	c.ends = make([]Offset, len(c.remotes))
	var errs []error
	for i, r := range c.remotes {
		o, err := r.MeasureClock(ctx, 8)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.ends[i] = o
		if o.Error() > tolerance {
			errs = append(errs, fmt.Errorf("machine %s's clock drifted to %v ± %v by the end, more than the %v tolerated",
				r.Machine.Name, time.Duration(o.Offset), time.Duration(o.Uncertainty), tolerance))
		}
	}
	return errors.Join(errs...)
}

// Down implements netns.Machines: every machine removes its part, then the connections close.
func (c *Cluster) Down(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	for _, r := range c.remotes {
		if r == nil {
			continue
		}
		select {
		case <-r.done:
			continue // lost: its server removed the part when the connection ended
		default:
		}
		if err := r.Down(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	c.Close()
	return errors.Join(errs...)
}

// MachineReport is run.json's record of one machine.
type MachineReport struct {
	Name        string  `json:"name"`
	Control     string  `json:"control"`
	Underlay    string  `json:"underlay"`
	UnderlayMTU int     `json:"underlay_mtu"`
	Clock       Offset  `json:"clock"`
	ClockEnd    *Offset `json:"clock_end,omitempty"`
}

// Report implements netns.Machines.
func (c *Cluster) Report() any {
	ms := make([]MachineReport, len(c.remotes))
	for i, r := range c.remotes {
		ms[i] = MachineReport{Name: r.Machine.Name, Control: r.Machine.Control, Underlay: r.Hello.Underlay,
			UnderlayMTU: r.Hello.UnderlayMTU, Clock: c.offsets[i]}
		if i < len(c.ends) && c.ends[i].Probes > 0 {
			e := c.ends[i]
			ms[i].ClockEnd = &e
		}
	}
	return map[string]any{"machines": ms, "clock_tolerance_ns": c.tol.Nanoseconds(), "lab_mtu": c.mtu,
		"vxlan_port": c.File.VXLAN.Port, "vni_base": c.File.VXLAN.VNIBase}
}

// DownEverywhere connects to every machine of f and asks it to remove each of labs (a machine without
// the lab says so in its error); done is called for each removal.
func DownEverywhere(ctx context.Context, f *File, labs []string, done func(machine, lab string)) []error {
	secret, err := ReadSecret(f.SecretPath())
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, m := range f.Machines {
		r, err := ConnectMachine(ctx, m, secret)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, lab := range labs {
			if err := r.Down(ctx, lab); err != nil {
				errs = append(errs, fmt.Errorf("lab %s: %w", lab, err))
			} else {
				done(m.Name, lab)
			}
		}
		r.Close()
	}
	return errs
}
