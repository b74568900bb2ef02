// Package kernelhost turns host namespaces of a netns lab into kernel-stack hosts: real Linux TCP
// (cubic, dctcp, ...) talking through the lab's Go switches. Setup gives each host the fabric's fixed
// identity (wire.HostIP / wire.HostMAC, so a switch that forwards frames by destination host agrees with
// the kernel on who is who), permanent neighbour entries for every other host (no ARP ever crosses the
// fabric: a switch forwards IPv4 only), and the namespace's TCP sysctls. Run drives TCP flows between
// those hosts and measures each flow's completion time at its receiver.
//
// Nothing here runs an engine: the kernel owns the host's port, and the lab's switches are whatever the
// backend runs (agents, or a Linux bridge in `lab bench`).
package kernelhost

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/wire"
)

// Host is one kernel-stack host of a lab: the device (namespace) it lives in and its host index.
type Host struct {
	Device string // e.g. "h3"
	Index  int    // host index: its address is wire.HostIP(Index)
	Port   int    // the port the host reaches the fabric through (hosts in switch-centric fabrics: 0)
	// Ifname, if set, is the interface instead of port Port's (a live lab's relay host: nslink.KernelIf).
	Ifname string
}

// Config is the kernel stack's configuration, the same for every host of a lab.
type Config struct {
	// CC is the TCP congestion control (net.ipv4.tcp_congestion_control): cubic, dctcp, reno, bbr...
	// Empty leaves the kernel default.
	CC string
	// ECN enables ECN negotiation (net.ipv4.tcp_ecn=1). DCTCP needs it and turns it on regardless.
	ECN bool
	// Progress, if set, hears how many hosts are set up so far, every 64 and at the end (a thousand
	// hosts take a while: each gets a neighbour entry for every other). Calls come one at a time.
	Progress func(done, total int) `json:"-"`
}

// Available reports whether the running kernel offers congestion control cc, with an error saying
// what to do when it does not (dctcp is often a module, or not built at all).
func Available(cc string) error {
	if cc == "" {
		return nil
	}
	avail, err := availableCCs()
	if err != nil {
		return err
	}
	if slices.Contains(avail, cc) {
		return nil
	}
	// The list names only the algorithms built in or loaded: a kernel that has cc as a module (Debian's
	// tcp_dctcp) lists it once the module is loaded, which root may do. A socket's TCP_CONGESTION would
	// load it too, but only after this check has refused the lab.
	loadErr := exec.Command("modprobe", "-q", "tcp_"+cc).Run()
	if avail, err = availableCCs(); err != nil {
		return err
	}
	if slices.Contains(avail, cc) {
		return nil
	}
	why := "no module tcp_" + cc
	if loadErr != nil {
		why = fmt.Sprintf("modprobe tcp_%s: %v", cc, loadErr)
	}
	return fmt.Errorf("host.cc: congestion control %q is not available in this kernel %s (available: %s; %s); "+
		"use a kernel built with it (CONFIG_TCP_CONG_%s), such as Debian's in the Vagrant VM (docs/vm.md)",
		cc, kernelRelease(), strings.Join(avail, " "), why, strings.ToUpper(cc))
}

func availableCCs() ([]string, error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil {
		return nil, fmt.Errorf("host.cc: cannot list the kernel's congestion controls: %w", err)
	}
	return strings.Fields(string(b)), nil
}

func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "(release unknown)"
	}
	return strings.TrimSpace(string(b))
}

// Setup configures every host in hosts; all hosts are told about each other. It changes only the
// hosts' own namespaces, which the lab made.
func Setup(l *nslink.Lab, hosts []Host, cfg Config) error { return SetupAmong(l, hosts, hosts, cfg) }

// SetupAmong configures the hosts in hosts, each told about every host in all: a machine's share of a
// lab over several machines, whose hosts reach the others' too.
func SetupAmong(l *nslink.Lab, hosts, all []Host, cfg Config) error {
	if err := Available(cfg.CC); err != nil {
		return err
	}
	seen := map[int]string{}
	for _, h := range hosts {
		if h.Index < 0 || h.Index >= wire.MaxHosts {
			return fmt.Errorf("host %s: index %d outside the 198.18.0.0/15 plan (0..%d)", h.Device, h.Index, wire.MaxHosts-1)
		}
		if d, dup := seen[h.Index]; dup {
			return fmt.Errorf("hosts %s and %s both have index %d", d, h.Device, h.Index)
		}
		seen[h.Index] = h.Device
	}
	// Hosts are set up in parallel: each is its own namespace, reached through its own netlink handle
	// and its own locked thread (Lab.Do), and the work is mostly waiting on the kernel (a neighbour entry
	// for every other host: a million netlink round trips for a thousand hosts, 4m45s one after the
	// other on this machine for fat-tree k=16).
	errs := make([]error, len(hosts))
	var next, done atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	var progressMu sync.Mutex // Progress is called one at a time
	for range min(len(hosts), 4*runtime.NumCPU()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(hosts) {
					return
				}
				h := hosts[i]
				err := setupAddr(l, h, all)
				if err == nil {
					err = setupSysctls(l, h.Device, cfg)
				}
				if err != nil {
					errs[i] = fmt.Errorf("kernel host %s: %w", h.Device, err)
					failed.Store(true)
					return
				}
				if n := done.Add(1); cfg.Progress != nil && (n%64 == 0 || int(n) == len(hosts)) {
					progressMu.Lock()
					cfg.Progress(int(n), len(hosts))
					progressMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err // the first failing host's, in order
		}
	}
	return nil
}

// prefix is the whole lab's on-link network: every host is one hop away at layer 3, the switches are
// invisible to the kernel, as in a flat L2 fabric.
const prefixLen = 15

func setupAddr(l *nslink.Lab, h Host, all []Host) error {
	nl, err := l.Handle(h.Device)
	if err != nil {
		return err
	}
	defer nl.Close()
	ifn := nslink.PortName(h.Port)
	if h.Ifname != "" {
		ifn = h.Ifname
	}
	link, err := nl.LinkByName(ifn)
	if err != nil {
		return fmt.Errorf("%s: %w", ifn, err)
	}
	mac := wire.HostMAC(h.Index)
	if !bytesEqual(link.Attrs().HardwareAddr, mac) {
		// The switch forwards the kernel's bytes unmodified, so the frame must already carry the final
		// host's MAC as destination and ours as source; veth needs to be down to change its address.
		if err := nl.LinkSetDown(link); err != nil {
			return fmt.Errorf("%s down: %w", ifn, err)
		}
		if err := nl.LinkSetHardwareAddr(link, mac); err != nil {
			return fmt.Errorf("%s mac %s: %w", ifn, mac, err)
		}
		if err := nl.LinkSetUp(link); err != nil {
			return fmt.Errorf("%s up: %w", ifn, err)
		}
	}
	ip := wire.HostIP(h.Index).AsSlice()
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: net.CIDRMask(prefixLen, 32)}}
	// The /15 address installs the on-link route to the whole lab through this port.
	if err := nl.AddrReplace(link, addr); err != nil {
		return fmt.Errorf("%s address %s: %w", ifn, addr.IPNet, err)
	}
	for _, o := range all {
		if o.Index == h.Index {
			continue
		}
		n := &netlink.Neigh{LinkIndex: link.Attrs().Index, Family: unix.AF_INET, State: netlink.NUD_PERMANENT,
			IP: wire.HostIP(o.Index).AsSlice(), HardwareAddr: wire.HostMAC(o.Index)}
		if err := nl.NeighSet(n); err != nil {
			return fmt.Errorf("%s neighbour %s: %w", ifn, n.IP, err)
		}
	}
	return nil
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// setupSysctls writes the namespace's TCP sysctls. /proc/sys/net resolves to the namespace of the thread
// that opens it, so the writes happen inside Do.
func setupSysctls(l *nslink.Lab, device string, cfg Config) error {
	ecn := "2" // kernel default: accept ECN when the peer asks, never ask
	if cfg.ECN || cfg.CC == "dctcp" {
		ecn = "1"
	}
	kv := [][2]string{
		{"net/ipv4/tcp_ecn", ecn},
		// Each flow starts from the same state: no cwnd/ssthresh cached from the previous flow to a host.
		{"net/ipv4/tcp_no_metrics_save", "1"},
	}
	return l.Do(device, func() error {
		var errs []error
		for _, e := range kv {
			if err := os.WriteFile("/proc/sys/"+e[0], []byte(e[1]), 0); err != nil {
				errs = append(errs, fmt.Errorf("sysctl %s=%s: %w", strings.ReplaceAll(e[0], "/", "."), e[1], err))
			}
		}
		if cfg.CC != "" {
			// A namespace other than the root one may only default to algorithms the root namespace's
			// tcp_allowed_congestion_control lists (EPERM otherwise), and that list is not ours to change.
			// Run sets the algorithm on every socket it makes (TCP_CONGESTION, allowed for root), so the
			// namespace default is a convenience for other programs run in the namespace.
			err := os.WriteFile("/proc/sys/net/ipv4/tcp_congestion_control", []byte(cfg.CC), 0)
			if err != nil && !errors.Is(err, unix.EPERM) {
				errs = append(errs, fmt.Errorf("sysctl net.ipv4.tcp_congestion_control=%s: %w", cfg.CC, err))
			}
		}
		return errors.Join(errs...)
	})
}
