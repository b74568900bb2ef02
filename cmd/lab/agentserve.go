package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/harness/cluster"
	"github.com/fabriclab/fabriclab/harness/kernelhost"
	"github.com/fabriclab/fabriclab/harness/live"
	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// The agent server's main goroutine keeps the main thread to itself. netns makes each namespace on a
// goroutine that enters it and is never unlocked, so Go discards that thread after; but the main thread
// cannot be discarded, only parked, and a namespace made on it would live on in this long-running
// process after its lab was removed (seen: a removed lab's namespace, with its loopback, held by the
// server's main thread). Only a lock taken during init pins main to the main thread.
func init() {
	var words []string
	for _, a := range os.Args[1:] {
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	if len(words) >= 2 && words[0] == "agent" && words[1] == "serve" {
		runtime.LockOSThread()
	}
}

func init() {
	agentCmd := &cobra.Command{Use: "agent", Short: "This machine's part of labs over several machines (see serve)"}
	var listen, secret, underlay, name string
	var offset time.Duration
	serve := &cobra.Command{
		Use:   "serve --listen HOST:PORT --secret FILE --underlay IP",
		Short: "Run this machine's agent server: a coordinator's `lab run|up SPEC --cluster FILE` makes its part of a lab here",
		Long: "Listens for coordinators on --listen. A coordinator must prove it holds the secret in --secret " +
			"(HMAC challenge-response; every message after is authenticated too); anything else is refused before " +
			"it is read. For each coordinator the server makes its share of a lab (namespaces, veths inside this " +
			"machine, kernel VXLAN links to the other machines from the interface holding --underlay), runs its " +
			"agent, and removes all of it when the coordinator's connection ends. Needs root. Runs until SIGINT/SIGTERM.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if listen == "" || secret == "" || underlay == "" {
				return usage(errors.New("--listen, --secret and --underlay are required"))
			}
			// The command line first (exit 2), before the secret is read or anything is listened on.
			if err := checkListen(listen); err != nil {
				return usage(err)
			}
			if underlay != "auto" {
				if ip := net.ParseIP(underlay); ip == nil || ip.To4() == nil {
					return usage(errors.New("--underlay " + underlay + ": want this machine's IPv4 address (or auto)"))
				}
			}
			key, err := cluster.ReadSecret(secret)
			if err != nil {
				return err
			}
			if os.Geteuid() != 0 {
				return errors.New("lab agent serve needs root: it creates network namespaces")
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			s := &cluster.Server{Secret: key, Name: name, Underlay: underlay, ClockOffset: offset,
				HostSetup: liveHostSetup, Cleanup: live.Cleanup}
			return s.Serve(ctx, ln)
		},
	}
	serve.Flags().StringVar(&listen, "listen", "", "address to accept coordinators on (HOST:PORT; :7070 for every address)")
	serve.Flags().StringVar(&secret, "secret", "", "file holding the cluster's shared secret (at least 16 bytes, mode 600)")
	serve.Flags().StringVar(&underlay, "underlay", "", "this machine's IPv4 address on the network between the machines (the VXLAN links' local end); auto: the namespace's one non-loopback address when a coordinator connects; either way the interface holding it is looked up for each lab")
	serve.Flags().StringVar(&name, "name", "", "this machine's name in messages (default: the host name)")
	serve.Flags().DurationVar(&offset, "test-clock-offset", 0, "tests only: pretend this machine's clock is off by this much")
	serve.Flags().MarkHidden("test-clock-offset")
	agentCmd.AddCommand(serve)
	root.AddCommand(agentCmd)
}

// liveHostSetup sets up this machine's kernel hosts of a live lab over several machines.
func liveHostSetup(nl *nslink.Lab, g *topo.Graph, nodes []int, h cluster.LiveHosts) error {
	return live.SetupHosts(nl, g, nodes, h.Transit, kernelhost.Config{CC: h.CC, ECN: h.ECN})
}

// checkListen refuses a --listen that is not HOST:PORT with a port in 1..65535 (or 0 for any).
func checkListen(listen string) error {
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--listen %s: want HOST:PORT (:7070 for every address): %v", listen, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("--listen %s: port %q is not a port number (0 to 65535)", listen, port)
	}
	return nil
}
