package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/fabriclab/fabriclab/harness/cluster"
	"github.com/fabriclab/fabriclab/harness/live"
	"github.com/fabriclab/fabriclab/harness/nslink"
)

// Live labs over several machines (`lab up SPEC --cluster FILE`): the commands that differ from a
// one-machine lab's. A device's commands run on its machine, asked over the authenticated control
// channel (cluster.Remote.Exec); the live requests go to the lab's supervisor here, which holds the
// machines' connections.

// devRunner runs argv in a device's namespace of a live lab, output to stdout and stderr; a command
// that exits non-zero is an error (cmdExit).
type devRunner func(ctx context.Context, dev string, argv []string, stdout, stderr io.Writer) error

type cmdExit int

func (e cmdExit) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// labRunner is how to run commands on lab name's devices: `ip netns exec` here, or the device's
// machine; done closes what the runner kept open (its connections to the machines).
func labRunner(name string) (run devRunner, done func(), err error) {
	if live.IsCluster(name) {
		cr, err := newClusterRunner(name)
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context, dev string, argv []string, stdout, stderr io.Writer) error {
			code, err := cr.run(ctx, dev, argv, stdout, stderr)
			if err == nil && code != 0 {
				err = cmdExit(code)
			}
			return err
		}, cr.close, nil
	}
	nl, err := nslink.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, dev string, argv []string, stdout, stderr io.Writer) error {
		c := inNS(ctx, nl, dev, argv...)
		c.Stdout, c.Stderr = stdout, stderr
		err := c.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return cmdExit(ee.ExitCode())
		}
		return err
	}, func() {}, nil
}

// clusterRunner runs commands on the devices of a live lab over several machines, each on its device's
// machine over an authenticated connection. A connection that ran a command is kept for the next on its
// machine, so there are as many per machine as commands run there at once: pingall's 240 pairs of a
// fat-tree(4), 8 at a time, take at most 8 connections per machine, not 240.
type clusterRunner struct {
	name    string
	on      map[string]string // device -> machine
	devices []string
	file    string
	machine map[string]cluster.Machine // the cluster file's machines by name
	secret  []byte
	mu      sync.Mutex
	idle    map[string][]*cluster.Remote // by machine
}

// newClusterRunner asks lab name's supervisor where its devices are, and reads the cluster file.
func newClusterRunner(name string) (*clusterRunner, error) {
	rep, err := live.Do(name, live.Request{Op: "status"})
	if err != nil {
		return nil, err
	}
	st := rep.Status
	if !strings.HasPrefix(st.State, "up") {
		return nil, fmt.Errorf("lab %s is %s", name, st.State)
	}
	cr := &clusterRunner{name: name, on: map[string]string{}, file: st.Cluster, idle: map[string][]*cluster.Remote{}}
	for _, m := range st.Machines {
		cr.devices = append(cr.devices, m.Devices...)
		for _, d := range m.Devices {
			cr.on[d] = m.Name
		}
	}
	if cr.machine, cr.secret, err = clusterMachines(st.Cluster); err != nil {
		return nil, err
	}
	return cr, nil
}

// run runs argv on dev's machine and returns its exit status.
func (cr *clusterRunner) run(ctx context.Context, dev string, argv []string, stdout, stderr io.Writer) (int, error) {
	on, ok := cr.on[dev]
	if !ok {
		return -1, fmt.Errorf("lab %s has no device %q (devices: %s)", cr.name, dev, strings.Join(cr.devices, " "))
	}
	m, ok := cr.machine[on]
	if !ok {
		return -1, fmt.Errorf("the cluster file %s no longer names machine %s", cr.file, on)
	}
	r, err := cr.conn(ctx, m)
	if err != nil {
		return -1, err
	}
	code, err := r.Exec(ctx, cr.name, dev, argv, stdout, stderr)
	if err != nil {
		r.Close() // cancelled, lost or refused: not one to reuse
		return code, err
	}
	cr.mu.Lock()
	cr.idle[on] = append(cr.idle[on], r)
	cr.mu.Unlock()
	return code, nil
}

// conn is an idle connection to m, or a new one.
func (cr *clusterRunner) conn(ctx context.Context, m cluster.Machine) (*cluster.Remote, error) {
	cr.mu.Lock()
	if rs := cr.idle[m.Name]; len(rs) > 0 {
		r := rs[len(rs)-1]
		cr.idle[m.Name] = rs[:len(rs)-1]
		cr.mu.Unlock()
		return r, nil
	}
	cr.mu.Unlock()
	return cluster.ConnectMachine(ctx, m, cr.secret)
}

// close closes the idle connections (each server ends what its connection ran).
func (cr *clusterRunner) close() {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	for _, rs := range cr.idle {
		for _, r := range rs {
			r.Close()
		}
	}
	cr.idle = map[string][]*cluster.Remote{}
}

// clusterMachines reads the cluster file at path: its machines by name, and the shared secret.
func clusterMachines(path string) (map[string]cluster.Machine, []byte, error) {
	f, err := cluster.Load(path)
	if err != nil {
		return nil, nil, err
	}
	secret, err := cluster.ReadSecret(f.SecretPath())
	if err != nil {
		return nil, nil, err
	}
	ms := map[string]cluster.Machine{}
	for _, m := range f.Machines {
		ms[m.Name] = m
	}
	return ms, secret, nil
}

// connectMachine opens a connection of its own to machine on of the cluster file at path.
func connectMachine(ctx context.Context, path, on string) (*cluster.Remote, error) {
	ms, secret, err := clusterMachines(path)
	if err != nil {
		return nil, err
	}
	m, ok := ms[on]
	if !ok {
		return nil, fmt.Errorf("the cluster file %s no longer names machine %s", path, on)
	}
	return cluster.ConnectMachine(ctx, m, secret)
}

// execOnMachine is lab exec on a lab over several machines; it exits with the command's status.
func execOnMachine(name, dev string, argv []string) error {
	if len(argv) == 0 {
		return usage(fmt.Errorf("lab %s runs over several machines: give a command (no shell is forwarded: exec takes no stdin)", name))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cr, err := newClusterRunner(name)
	if err != nil {
		return err
	}
	code, err := cr.run(ctx, dev, argv, os.Stdout, os.Stderr)
	cr.close()
	if err != nil {
		return err
	}
	if code != 0 {
		os.Exit(code)
	}
	return nil
}

// printUpMachines says where lab up --cluster put the lab.
func printUpMachines(w io.Writer, name string) {
	rep, err := live.Do(name, live.Request{Op: "status"})
	if err != nil {
		fmt.Fprintf(w, "  status: %v\n", err)
		return
	}
	st := rep.Status
	fmt.Fprintf(w, "  over %d machines, %d of %d links VXLAN between them; free-running (no lockstep): a link between machines adds the underlay's transit to its delay\n",
		len(st.Machines), st.VXLAN, st.Links)
	for _, m := range st.Machines {
		fmt.Fprintf(w, "  %s (%s): %s; clock %v ± %v\n", m.Name, m.Control, strings.Join(m.Devices, " "),
			time.Duration(m.Clock.Offset), time.Duration(m.Clock.Uncertainty))
	}
}

// printClusterLabs adds the live labs over several machines coordinated from here to lab status.
func printClusterLabs(w io.Writer, names []string) {
	for _, n := range names {
		rep, err := live.Do(n, live.Request{Op: "status"})
		if err != nil {
			fmt.Fprintf(w, "lab %s (live over machines): damaged: its supervisor does not answer (%v); the machines removed "+
				"their shares when its connections ended; lab down %s\n", n, err, n)
			continue
		}
		st := rep.Status
		fmt.Fprintf(w, "lab %s (%s, live over %d machines of %s): %s; %d links, %d of them VXLAN between machines; up %v\n", st.Lab, st.Family,
			len(st.Machines), st.Cluster, st.State, st.Links, st.VXLAN, time.Duration(st.Uptime*float64(time.Second)).Round(time.Second))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  MACHINE\tCONTROL\tUNDERLAY\tDEVICES\tCLOCK AT UP\tCLOCK NOW\tSTATE")
		for _, m := range st.Machines {
			state := "up"
			switch {
			case m.Lost != "":
				state = "LOST " + m.Lost
			case !strings.HasPrefix(st.State, "up"):
				state = "removed"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%v ± %v\t%v ± %v\t%s\n", m.Name, m.Control, m.Underlay, len(m.Devices),
				time.Duration(m.Clock.Offset), time.Duration(m.Clock.Uncertainty), time.Duration(m.ClockLast.Offset),
				time.Duration(m.ClockLast.Uncertainty), state)
		}
		tw.Flush()
	}
}

// downClusterLive brings a live lab over several machines down: its supervisor removes the lab from
// every machine and exits, then the coordinator's record goes. A supervisor that does not answer is
// ended (its connections' end makes every server remove its share).
func downClusterLive(out io.Writer, name string) error {
	rep, err := live.Do(name, live.Request{Op: "down"})
	if rep != nil {
		for _, n := range rep.Notes {
			fmt.Fprintln(out, n)
		}
	}
	if err != nil {
		fmt.Fprintf(out, "lab %s: supervisor: %v; ending it\n", name, err)
	}
	if err := live.StopCluster(name); err != nil {
		return err
	}
	fmt.Fprintf(out, "lab %s down\n", name)
	return nil
}

// captureOnMachine is lab capture on a lab over several machines: the supervisor checks the port and
// names its machine, which captures it and streams the pcap here until --for, a signal, or the capture
// ends there (the lab brought down, the machine lost).
func captureOnMachine(w io.Writer, name, spec, path string, dur time.Duration, sig <-chan os.Signal) error {
	rep, err := live.Do(name, live.Request{Op: "locate", Port: spec})
	if err != nil {
		return err
	}
	at := rep.At
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := connectMachine(ctx, at.Cluster, at.Machine)
	if err != nil {
		return err
	}
	defer r.Close()
	// A new file only (lab capture checked it with outfile.Check): a capture never replaces a file it
	// did not create nor writes through a link; a refused capture removes the file it made.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	c, err := r.StartCapture(ctx, name, at.Device, at.Port, &truncFirst{f: f})
	if err != nil {
		os.Remove(path)
		return err
	}
	captureWait(w, name, spec, path, dur, sig, c.Done())
	select {
	case <-c.Done():
		if err := c.Err(); err != nil {
			return fmt.Errorf("capture %s ended: %w (%s holds what arrived before)", spec, err, path)
		}
	default:
	}
	if err := c.Stop(); err != nil {
		return fmt.Errorf("capture %s: %w (%s holds what arrived)", spec, err, path)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("capture %s: %w", spec, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(w, "lab %s: %s captured on machine %s: %d bytes of pcap\n", name, spec, at.Machine, c.Bytes())
	return nil
}

// truncFirst empties its file at the first write: a capture's pcap starts with the machine's first
// bytes, which come only once it captures.
type truncFirst struct {
	f       *os.File
	started bool
}

func (t *truncFirst) Write(b []byte) (int, error) {
	if !t.started {
		if err := t.f.Truncate(0); err != nil {
			return 0, err
		}
		t.started = true
	}
	return t.f.Write(b)
}
