package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/nslink"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/harness/live"
	"github.com/fabriclab/fabriclab/outfile"
	"github.com/fabriclab/fabriclab/units"
)

// The live-lab commands: each builds its cobra command, so init only lists them.
func init() {
	root.AddCommand(execCommand(), inspectCommand(), watchCommand(), linkCommand(), captureCommand())
}

// execCommand: lab exec LAB DEVICE [-- COMMAND...].
func execCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "exec LAB DEVICE [-- COMMAND [ARG...]]",
		Short: "Run a command in a device's namespace (a shell when none is given); host names resolve",
		Long: "Run COMMAND inside DEVICE's network namespace with `ip netns exec`, which also mounts the lab's " +
			"/etc/netns/<namespace>/hosts over /etc/hosts, so `lab exec LAB h0 -- ping -c3 h5` and " +
			"`lab exec LAB h0 -- iperf3 -c h5` work by name. Without a command: an interactive shell ($SHELL). On a lab " +
			"over several machines (lab up --cluster) the command runs on the device's machine, asked over the " +
			"authenticated control channel, with its output streamed back and its exit status lab exec's (no stdin, " +
			"no terminal, so no shell).",
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if live.IsCluster(args[0]) {
				return execOnMachine(args[0], args[1], args[2:])
			}
			nl, err := nslink.Open(args[0])
			if err != nil {
				return err
			}
			found := false
			for _, d := range nl.Devices() {
				found = found || d == args[1]
			}
			if !found {
				return fmt.Errorf("lab %s has no device %q (devices: %s)", args[0], args[1], strings.Join(nl.Devices(), " "))
			}
			ip, err := exec.LookPath("ip")
			if err != nil {
				return errors.New("lab exec needs `ip` (iproute2; scripts/provision.sh installs it)")
			}
			argv := []string{"ip", "netns", "exec", nl.NSName(args[1])}
			if rest := args[2:]; len(rest) > 0 {
				argv = append(argv, rest...)
			} else {
				sh := os.Getenv("SHELL")
				if sh == "" {
					sh = "/bin/sh"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "lab %s: shell on %s (exit to leave)\n", args[0], args[1])
				argv = append(argv, sh)
			}
			// Replaces this process: the terminal, signals and the exit status are the command's.
			return syscall.Exec(ip, argv, os.Environ())
		},
	}
}

// inspectCommand: lab inspect LAB [--json].
func inspectCommand() *cobra.Command {
	var asJSON bool
	inspect := &cobra.Command{
		Use:   "inspect LAB",
		Short: "A live lab's per-device, per-port counters now (frames, bytes, drops by reason, pauses, ECN, queues)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := live.Do(args[0], live.Request{Op: "inspect"})
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep.Inspect)
			}
			printInspect(cmd.OutOrStdout(), rep.Inspect, nil, 0)
			return nil
		},
	}
	inspect.Flags().BoolVar(&asJSON, "json", false, "JSON (the harness/live.Inspect structure)")
	return inspect
}

// watchCommand: lab watch LAB [--every D] [--count N].
func watchCommand() *cobra.Command {
	var every time.Duration
	var count int
	watch := &cobra.Command{
		Use:   "watch LAB",
		Short: "Refresh a live lab's counters with per-second rates until Ctrl-C",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(sig)
			var prev *live.Inspect
			var prevAt time.Time
			for i := 0; count <= 0 || i < count; i++ {
				rep, err := live.Do(args[0], live.Request{Op: "inspect"})
				if err != nil {
					return err
				}
				now := time.Now()
				var b strings.Builder
				printInspect(&b, rep.Inspect, prev, now.Sub(prevAt).Seconds())
				if fi, _ := os.Stdout.Stat(); fi != nil && fi.Mode()&os.ModeCharDevice != 0 {
					fmt.Fprint(cmd.OutOrStdout(), "\033[H\033[2J")
				}
				fmt.Fprint(cmd.OutOrStdout(), b.String())
				prev, prevAt = rep.Inspect, now
				select {
				case <-sig:
					return nil
				case <-time.After(every):
				}
			}
			return nil
		},
	}
	watch.Flags().DurationVar(&every, "every", time.Second, "refresh period")
	watch.Flags().IntVar(&count, "count", 0, "stop after this many refreshes (0: until Ctrl-C)")
	return watch
}

// linkCommand: lab link LAB A B (down | up | set ...).
func linkCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "link LAB A B (down | up | set [loss=P%] [delay=T])",
		Short: "Fail, repair or impair the cable(s) between devices A and B of a live lab, in the switch engines",
		Long: "down drops every frame on the cable both ways and recomputes the switches' ECMP tables without it " +
			"(hosts behind it become unreachable only if no other path exists); up repairs it and recomputes; set " +
			"impairs it where switches send onto it: loss=1% drops that share of frames, delay=5us adds one-way " +
			"delay in the fabric's time, like a spec's link delays: the agent applies it dilated (at D=1000, 5 ms of " +
			"wall time; lab inspect's fault column shows the dilated value). up also clears what set did. Each change is logged " +
			"with its wall and engine time in the lab's events (lab inspect shows them).",
		Args: cobra.MinimumNArgs(4),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := live.Request{Op: "link", A: args[1], B: args[2], State: args[3]}
			switch req.State {
			case "set":
				f, err := parseFault(args[4:])
				if err != nil {
					return usage(err)
				}
				req.Fault = &f
			case "up", "down":
				if len(args) > 4 {
					return usage(fmt.Errorf("link %s takes no more arguments", req.State))
				}
			default:
				return usage(fmt.Errorf("link %q: want down, up or set", req.State))
			}
			rep, err := live.Do(args[0], req)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lab %s: link %s %s %s\n", args[0], args[1], args[2], args[3])
			for _, n := range rep.Notes {
				fmt.Fprintf(cmd.OutOrStdout(), "  %s\n", n)
			}
			return nil
		},
	}
}

// captureCommand: lab capture LAB DEVICE:pN [-w FILE] [--for D].
func captureCommand() *cobra.Command {
	var out string
	var dur time.Duration
	capture := &cobra.Command{
		Use:   "capture LAB DEVICE:pN",
		Short: "Capture a running switch port to a pcap file (frames as they leave and arrive)",
		Long: "Write every frame switch port DEVICE:pN sends and receives to a pcap file (-w, default " +
			"LAB-DEVICE-pN.pcap) until --for has passed or Ctrl-C. Timestamps are the lab's start plus engine time " +
			"(dilated). On a lab over several machines (lab up --cluster) the switch's machine captures the port and " +
			"streams the pcap back over the authenticated control channel as its agent writes it, and the file is " +
			"written here, the same file. To stream, capture a host's side with `lab exec LAB h0 -- tcpdump -w - -i p0`.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				out = fmt.Sprintf("%s-%s.pcap", args[0], strings.ReplaceAll(args[1], ":", "-"))
			}
			if dur < 0 {
				return usage(fmt.Errorf("--for %v: want a duration to capture for (0: until Ctrl-C)", dur))
			}
			abs, err := filepath.Abs(out)
			if err != nil {
				return err
			}
			// Never over a file the capture did not create, nor through a link or into a device
			// (-w /dev/full): checked here for a clear message; the file is created exclusively.
			if err := outfile.Check(abs, outfile.New); err != nil {
				return fmt.Errorf("-w %w", err)
			}
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(sig)
			if live.IsCluster(args[0]) {
				return captureOnMachine(cmd.ErrOrStderr(), args[0], args[1], abs, dur, sig)
			}
			if _, err := live.Do(args[0], live.Request{Op: "capture", Port: args[1], Path: abs}); err != nil {
				return err
			}
			captureWait(cmd.ErrOrStderr(), args[0], args[1], abs, dur, sig, nil)
			if _, err = live.Do(args[0], live.Request{Op: "capture", Port: args[1]}); err != nil {
				return fmt.Errorf("%w (%s holds what was written before)", err, abs)
			}
			return nil
		},
	}
	capture.Flags().StringVarP(&out, "write", "w", "", "pcap file to create (an existing file, a link or a device is refused: a capture never replaces a file it did not create)")
	capture.Flags().DurationVar(&dur, "for", 0, "stop after this long (wall time; 0: until Ctrl-C)")
	return capture
}

// captureWait says what is captured where, and waits for --for to pass, a signal, or ended to close.
func captureWait(w io.Writer, name, port, path string, dur time.Duration, sig <-chan os.Signal, ended <-chan struct{}) {
	fmt.Fprintf(w, "lab %s: capturing %s to %s", name, port, path)
	var stop <-chan time.Time
	if dur > 0 {
		fmt.Fprintf(w, " for %v\n", dur)
		stop = time.After(dur)
	} else {
		fmt.Fprintln(w, " until Ctrl-C")
	}
	select {
	case <-sig:
	case <-stop:
	case <-ended:
	}
}

// parseFault reads loss=P% (or a fraction) and delay=T.
func parseFault(kv []string) (egress.Fault, error) {
	var f egress.Fault
	if len(kv) == 0 {
		return f, errors.New("link set: give loss=P% and/or delay=T, e.g. loss=1% delay=5us")
	}
	for _, a := range kv {
		k, v, ok := strings.Cut(a, "=")
		switch {
		case !ok:
			return f, fmt.Errorf("link set: %q is not key=value", a)
		case k == "loss":
			pct := strings.HasSuffix(v, "%")
			x, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
			if err != nil {
				return f, fmt.Errorf("link set: loss %q: want a percentage like 1%% or a fraction like 0.01", v)
			}
			if pct {
				x /= 100
			}
			f.Loss = x
		case k == "delay":
			t, err := units.ParseTime(v)
			if err != nil {
				return f, fmt.Errorf("link set: delay: %w", err)
			}
			f.Delay = t
		default:
			return f, fmt.Errorf("link set: unknown key %q (loss, delay)", k)
		}
	}
	return f, f.Check()
}

// printInspect writes the counters as a table; with prev (dt seconds earlier), rates instead of totals
// in the frame columns.
func printInspect(w io.Writer, in *live.Inspect, prev *live.Inspect, dt float64) {
	fmt.Fprintf(w, "lab %s  dilation %g  engine time %v  up %.1fs\n", in.Lab, in.Dilation, in.Now, in.Uptime)
	for _, m := range in.Machines { // a lab over several machines: where each device runs
		fmt.Fprintf(w, "machine %s: %s\n", m.Name, strings.Join(m.Devices, " "))
	}
	old := map[string]lockstep.LivePort{}
	if prev != nil {
		for _, d := range prev.Devices {
			for _, p := range d.Ports {
				old[fmt.Sprintf("%s:%d", d.Name, p.Port)] = p
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if prev != nil && dt > 0 {
		fmt.Fprintln(tw, "port\tpeer\ttx fr/s\ttx Mb/s\trx fr/s\trx Mb/s\tdrops\tpause tx/rx\tecn\tqueue now/peak\tfault\t")
	} else {
		fmt.Fprintln(tw, "port\tpeer\ttx frames\ttx bytes\trx frames\trx bytes\tdrops\tpause tx/rx\tecn\tqueue now/peak\tfault\t")
	}
	for _, d := range in.Devices {
		if d.Kind != "switch" {
			continue
		}
		for _, p := range d.Ports {
			var drops []string
			reasons := make([]string, 0, len(p.Drops))
			for r := range p.Drops {
				reasons = append(reasons, r)
			}
			sort.Strings(reasons)
			for _, r := range reasons {
				drops = append(drops, fmt.Sprintf("%s=%d", r, p.Drops[r]))
			}
			if p.Malformed > 0 { // read and dropped before any engine: frames that did not decode
				drops = append(drops, fmt.Sprintf("malformed=%d", p.Malformed))
			}
			ds := strings.Join(drops, ",")
			if ds == "" {
				ds = "0"
			}
			cols := []string{fmt.Sprint(p.TxFrames), units.FormatBytes(int64(p.TxBytes)), fmt.Sprint(p.RxFrames), units.FormatBytes(int64(p.RxBytes))}
			if o, ok := old[fmt.Sprintf("%s:%d", d.Name, p.Port)]; ok && dt > 0 {
				cols = []string{fmt.Sprintf("%.0f", float64(p.TxFrames-o.TxFrames)/dt), fmt.Sprintf("%.2f", float64(p.TxBytes-o.TxBytes)*8/dt/1e6),
					fmt.Sprintf("%.0f", float64(p.RxFrames-o.RxFrames)/dt), fmt.Sprintf("%.2f", float64(p.RxBytes-o.RxBytes)*8/dt/1e6)}
			}
			fault := p.Fault
			if fault == "" {
				fault = "-"
			}
			fmt.Fprintf(tw, "%s:p%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%d\t%s/%s\t%s\t\n", d.Name, p.Port, p.Peer, cols[0], cols[1], cols[2], cols[3],
				ds, p.PausesSent, p.PausesRecv, p.ECNMarked, units.FormatBytes(int64(p.QueueBytes)), units.FormatBytes(p.QueuePeak), fault)
		}
	}
	tw.Flush()
	printHosts(w, in.Hosts)
	for _, e := range in.Events {
		fmt.Fprintf(w, "event %s (engine %v): link %s %s %s  %s\n", e.Wall.Format("15:04:05.000"), clock.Time(e.Engine), e.Link[0], e.Link[1], e.State, e.Routes)
	}
}
