package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/harness/live"
	"github.com/fabriclab/fabriclab/harness/nslink"
)

// Mininet's conveniences for a live lab: pingall (every host pair) and iperf (a server started and
// stopped for one measurement), and the hosts' addresses (in lab inspect). They drive the hosts' own
// ping and iperf3 through `ip netns exec`, as lab exec does.

func init() {
	root.AddCommand(pingallCommand(), iperfCommand())
}

// printHosts prints the lab's hosts and addresses, four to a line.
func printHosts(w io.Writer, hosts []live.HostAddr) {
	for i, h := range hosts {
		sep := "  "
		switch {
		case i == 0:
			sep = "hosts  "
		case i%4 == 0:
			sep = "\n       "
		}
		fmt.Fprintf(w, "%s%s %s (%s)", sep, h.Name, h.Address, h.Interface)
	}
	if len(hosts) > 0 {
		fmt.Fprintln(w)
	}
}

// labHosts asks a live lab's supervisor for its hosts, and says how to run commands on them (done
// closes what the runner keeps open).
func labHosts(name string) ([]live.HostAddr, devRunner, func(), error) {
	rep, err := live.Do(name, live.Request{Op: "inspect"})
	if err != nil {
		return nil, nil, nil, err
	}
	run, done, err := labRunner(name)
	if err != nil {
		return nil, nil, nil, err
	}
	return rep.Inspect.Hosts, run, done, nil
}

func inNS(ctx context.Context, nl *nslink.Lab, dev string, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", nl.NSName(dev)}, argv...)...)
}

func pingallCommand() *cobra.Command {
	var count int
	cmd := &cobra.Command{
		Use:   "pingall LAB",
		Short: "Ping every host from every other host of a live lab (Mininet's pingall); exit 3 if any pair fails",
		Long: "Each host pings every other host by address (-c COUNT, 2 s timeout), 8 pairs at a time, and one line per " +
			"source lists the destinations, X for one that did not answer. Exit status 3 when a pair failed.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if count < 1 {
				return usage(fmt.Errorf("-c %d: want 1 or more pings per pair", count))
			}
			hosts, run, done, err := labHosts(args[0])
			if err != nil {
				return err
			}
			defer done()
			ok := make([][]bool, len(hosts))
			var wg sync.WaitGroup
			sem := make(chan struct{}, 8)
			for a := range hosts {
				ok[a] = make([]bool, len(hosts))
				for b := range hosts {
					if a == b {
						continue
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						sem <- struct{}{}
						defer func() { <-sem }()
						argv := []string{"ping", "-n", "-q", "-c", fmt.Sprint(count), "-i", "0.2", "-W", "2", hosts[b].Address}
						ok[a][b] = run(cmd.Context(), hosts[a].Name, argv, io.Discard, io.Discard) == nil
					}()
				}
			}
			wg.Wait()
			out := cmd.OutOrStdout()
			failed, pairs := 0, 0
			for a := range hosts {
				line := []string{hosts[a].Name, "->"}
				for b := range hosts {
					switch {
					case a == b:
						continue
					case ok[a][b]:
						line = append(line, hosts[b].Name)
					default:
						line = append(line, "X")
						failed++
					}
					pairs++
				}
				fmt.Fprintln(out, strings.Join(line, " "))
			}
			fmt.Fprintf(out, "pingall: %d of %d host pairs answered (%.0f%% dropped)\n", pairs-failed, pairs, 100*float64(failed)/float64(max(pairs, 1)))
			if failed > 0 {
				return exitCodeError{code: exitVerdict, err: fmt.Errorf("pingall: %d host pairs did not answer", failed)}
			}
			return nil
		},
	}
	cmd.Flags().IntVarP(&count, "count", "c", 1, "pings per pair")
	return cmd
}

func iperfCommand() *cobra.Command {
	var seconds, port int
	var reverse bool
	cmd := &cobra.Command{
		Use:   "iperf LAB SRC DST [-t SECONDS]",
		Short: "Measure TCP throughput from host SRC to host DST of a live lab with iperf3 (a server is started on DST for the one test)",
		Long: "Starts `iperf3 -s -1` (one test, then it exits) on DST, runs `iperf3 -c DST -t SECONDS` on SRC and prints " +
			"its report; the server is stopped if the client fails. The same by hand: `lab exec LAB DST -- iperf3 -s -D`, " +
			"then `lab exec LAB SRC -- iperf3 -c DST`.",
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if seconds < 1 {
				return usage(fmt.Errorf("-t %d: want 1 or more seconds", seconds))
			}
			if _, err := exec.LookPath("iperf3"); err != nil && !live.IsCluster(args[0]) { // over machines: theirs
				return errors.New("lab iperf needs iperf3 (scripts/provision.sh installs it)")
			}
			hosts, run, done, err := labHosts(args[0])
			if err != nil {
				return err
			}
			defer done()
			addr := map[string]string{}
			var names []string
			for _, h := range hosts {
				addr[h.Name] = h.Address
				names = append(names, h.Name)
			}
			for _, h := range args[1:] {
				if addr[h] == "" {
					return fmt.Errorf("lab %s has no host %q (hosts: %s)", args[0], h, strings.Join(names, " "))
				}
			}
			return runIperf(cmd, run, args[1], args[2], addr[args[2]], port, seconds, reverse)
		},
	}
	cmd.Flags().IntVarP(&seconds, "time", "t", 5, "seconds to transmit")
	cmd.Flags().IntVarP(&port, "port", "p", 5201, "the server's port on DST")
	cmd.Flags().BoolVarP(&reverse, "reverse", "R", false, "DST sends to SRC instead")
	return cmd
}

// runIperf starts the one-test server on dst, waits until it listens, runs the client on src.
func runIperf(cmd *cobra.Command, run devRunner, src, dst, dstAddr string, port, seconds int, reverse bool) error {
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	// --forceflush: "Server listening" reaches the pipe at once (stdio buffers it otherwise).
	pr, pw := io.Pipe()
	srvDone := make(chan error, 1)
	go func() {
		err := run(ctx, dst, []string{"iperf3", "-s", "-1", "--forceflush", "-p", fmt.Sprint(port)}, pw, os.Stderr)
		pw.CloseWithError(err)
		srvDone <- err
	}()
	defer func() { <-srvDone }()
	defer cancel() // stops the server if the client never reached it
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening") {
				listening <- true
				break
			}
		}
		listening <- false
		io.Copy(io.Discard, pr)
	}()
	select {
	case ok := <-listening:
		if !ok {
			return fmt.Errorf("iperf3 server on %s exited before listening (port %d in use? -p)", dst, port)
		}
	case <-time.After(5 * time.Second):
		return fmt.Errorf("iperf3 server on %s: not listening after 5 s", dst)
	}
	argv := []string{"iperf3", "-c", dstAddr, "-p", fmt.Sprint(port), "-t", fmt.Sprint(seconds)}
	if reverse {
		argv = append(argv, "-R")
	}
	if err := run(ctx, src, argv, cmd.OutOrStdout(), cmd.ErrOrStderr()); err != nil {
		return fmt.Errorf("iperf3 %s -> %s: %w", src, dst, err)
	}
	return nil
}
