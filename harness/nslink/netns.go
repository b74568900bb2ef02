// Package nslink is fabriclab's real substrate: it brings a topology graph up as one Linux network
// namespace per device (named fl-<lab>-<device>) and one veth pair per link, with the interface on
// port i of a device named p<i> inside that device's namespace.
//
// Safety rules, in order of importance:
//   - Every namespace and link is written to /run/fabriclab/<lab>/state.json (fsynced) before it is
//     made. Down deletes exactly what that file lists and nothing else; DownAll only touches labs with a
//     state file. A name that already exists and is not in our state file is an error, never a deletion.
//   - No OS thread that has been moved into a lab namespace ever runs other goroutines: namespaces are
//     created on throwaway locked threads, configured through netlink handles and ioctl sockets opened
//     inside them, and Do runs its function on a dedicated locked thread that is discarded if it cannot
//     be switched back.
//
// It also keeps the rest of a lab's lifecycle that the state file records: VXLAN links to other
// machines (vxlan.go), the processes a lab starts and Down ends (procs.go), a relay host's kernel port
// (kernelport.go). It knows nothing of agents' frames or protocol (portio, lockstep).
package nslink

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"sync"
	"time"

	cnins "github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// Defaults for Options.
const (
	DefaultMTU = 1500
	// DefaultTxQueueLen is small on purpose: queues must build in the engines' egress queues, never in
	// the kernel. veths default to the noqueue qdisc, so this bounds nothing until someone attaches a
	// qdisc (tbf/htb exist here), and then it keeps the kernel's share to a handful of frames.
	DefaultTxQueueLen = 16
	// MaxMTU is the largest MTU accepted (veth's maximum is 65535; 9000-byte jumbo frames are the
	// measured sweet spot for a Go forwarder).
	MaxMTU = 65535
	// MinMTU is the IPv4 minimum; the kernel rejects less on veth.
	MinMTU = 68
)

// ErrNotRoot is returned when the process cannot create namespaces.
var ErrNotRoot = errors.New("the netns backend needs root (it creates network namespaces and veth pairs): run it as root, e.g. with sudo")

// Options tune a lab's bring-up. The zero value means defaults.
type Options struct {
	MTU        int // every veth end; 0 means DefaultMTU
	TxQueueLen int // every veth end; 0 means DefaultTxQueueLen, negative means the kernel default
	// KeepOffloads leaves the kernel's default veth offloads on (checksum, TSO, GSO) for experiments
	// that use PACKET_VNET_HDR and account GSO frames themselves. Default: off, see setOffloadsOff.
	KeepOffloads bool
	// KeepIPv6 leaves IPv6 enabled in the lab's namespaces. Default: disabled, so no DAD, router
	// solicitations or MLD reports appear on the links.
	KeepIPv6 bool
	// Workers bounds the bring-up worker pool; 0 means 4 per CPU (the work is mostly waiting on the
	// kernel, and namespace creation runs in parallel there).
	Workers int
	// Progress, if set, is called after each phase with a short description.
	Progress func(phase string, done, total int, elapsed time.Duration)
	// Nodes, if set, are the only nodes made here (one machine's part of a lab over several, whose
	// node and link indices stay the whole graph's); links with both ends among them are veths.
	Nodes []int
	// VXLAN are this machine's ends of links to other machines (vxlan.go).
	VXLAN []VXLANLink
	// Hold keeps the lab's lock when Up returns, until Release (or Remove): a caller that goes on
	// bringing the lab up (kernel hosts, agents) is not raced by a `lab down` from another process,
	// which says the lab is busy instead of removing its namespaces from under it.
	Hold bool
	// Outlives: the lab stays up after the process that brings it up exits (lab up). Otherwise the lab
	// is that process's (a run's) and lab status calls it dead once the process is gone.
	Outlives bool

	hosted map[int]bool
}

// hosts reports whether node i is made here.
func (o *Options) hosts(i int) bool { return o.Nodes == nil || o.hosted[i] }

// Lab is a lab that is up (or was found in a state file by Open).
type Lab struct {
	Name       string
	Graph      *topo.Graph // nil when opened from a state file
	MTU        int
	TxQueueLen int
	State      *State
	ns         map[string]NSEntry // device name -> namespace
	lock       *labLock           // held from Up with Options.Hold until Release
}

// Release drops the lab's lock that Up kept for Options.Hold: from then on `lab down` may remove it.
func (l *Lab) Release() {
	l.lock.unlock()
	l.lock = nil
}

// Remove takes down a lab made with Options.Hold whose bring-up failed, under the lock Up kept, then
// drops the lock. Without a held lock it is Down.
func (l *Lab) Remove() error {
	if l.lock == nil {
		return Down(l.Name)
	}
	defer l.Release()
	_, err := downLocked(l.Name)
	return err
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
var deviceRE = regexp.MustCompile(`^[a-z0-9]+$`)

// MaxNameLen bounds lab names so namespace names stay short and readable.
const MaxNameLen = 16

// ValidateName checks a lab name: 1-16 characters of [a-z0-9-], not starting or ending with '-'.
func ValidateName(name string) error {
	if len(name) == 0 || len(name) > MaxNameLen || !nameRE.MatchString(name) {
		return fmt.Errorf("invalid lab name %q: use 1-%d characters of a-z, 0-9 and '-', not starting or ending with '-'", name, MaxNameLen)
	}
	return nil
}

// NSName is the namespace name of a device in a lab.
func NSName(lab, device string) string { return "fl-" + lab + "-" + device }

// PortName is the interface name of port i inside a device's namespace.
func PortName(port int) string { return fmt.Sprintf("p%d", port) }

// CheckRoot refuses (ErrNotRoot) unless this process runs as root.
func CheckRoot() error {
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	return nil
}

// WrapPerm gives a permission error ErrNotRoot's advice.
func WrapPerm(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w (%v)", ErrNotRoot, err)
	}
	return err
}

// ErrBusy is the error (errors.Is) of a Down or Up refused because another process holds the lab's lock:
// it is bringing the lab up or down.
var ErrBusy = errors.New("lab busy")

type busyError string

func (e busyError) Error() string {
	return fmt.Sprintf("lab %q is busy: another process is bringing it up or down (interrupt it with Ctrl-C; it cleans up after itself)", string(e))
}

func (e busyError) Is(target error) bool { return target == ErrBusy }

// labLock holds the lab's lock file. Up holds it for the whole bring-up so a concurrent Down cannot
// race it; the kernel drops it if the process dies (even by SIGKILL), so a crashed lab is never stuck.
type labLock struct{ f *os.File }

func lockLab(lab string, wait bool) (*labLock, error) {
	if err := os.MkdirAll(stateDir(lab), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(stateDir(lab), "lock"), os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_EX
	if !wait {
		how |= unix.LOCK_NB
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, busyError(lab)
		}
		return nil, err
	}
	return &labLock{f}, nil
}

func (l *labLock) unlock() {
	if l != nil && l.f != nil {
		unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
		l.f.Close()
	}
}

// Up brings graph g up as lab name. On any error, or when ctx is cancelled (Ctrl-C), it removes
// everything it made before returning. A lab with the same name must not exist.
func Up(ctx context.Context, name string, g *topo.Graph, opts Options) (*Lab, error) {
	if err := CheckRoot(); err != nil {
		return nil, err
	}
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if g == nil || len(g.Nodes) == 0 {
		return nil, errors.New("empty topology")
	}
	if opts.MTU == 0 {
		opts.MTU = DefaultMTU
	}
	if opts.MTU < MinMTU || opts.MTU > MaxMTU {
		return nil, fmt.Errorf("mtu %d out of range [%d, %d]", opts.MTU, MinMTU, MaxMTU)
	}
	if opts.TxQueueLen == 0 {
		opts.TxQueueLen = DefaultTxQueueLen
	}
	if opts.Workers <= 0 {
		opts.Workers = 4 * runtime.NumCPU()
	}
	if err := opts.checkPart(g); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, n := range g.Nodes {
		if !deviceRE.MatchString(n.Name) || len(n.Name) > 32 {
			return nil, fmt.Errorf("device name %q cannot name a namespace (use [a-z0-9]+)", n.Name)
		}
		if seen[n.Name] {
			return nil, fmt.Errorf("duplicate device name %q", n.Name)
		}
		seen[n.Name] = true
	}
	for i, l := range g.Links {
		if l.A.Node < 0 || l.A.Node >= len(g.Nodes) || l.B.Node < 0 || l.B.Node >= len(g.Nodes) {
			return nil, fmt.Errorf("link %d joins a node that does not exist", i)
		}
	}

	if _, err := os.Stat(statePath(name)); err == nil {
		return nil, fmt.Errorf("lab %q already exists (%s): bring it down first with `lab down %s`", name, statePath(name), name)
	}
	// Refuse before creating anything if a name we need is taken by someone else.
	for i, n := range g.Nodes {
		if !opts.hosts(i) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(NetnsDir, NSName(name, n.Name))); err == nil {
			return nil, fmt.Errorf("namespace %s already exists and is not part of any lab state: refusing to touch it (pick another lab name)", NSName(name, n.Name))
		}
	}
	if err := os.MkdirAll(StateRoot, 0o755); err != nil {
		return nil, WrapPerm(err)
	}
	lk, err := lockLab(name, false)
	if err != nil {
		return nil, WrapPerm(err)
	}
	defer func() { lk.unlock() }() // nil when handed to the lab (Options.Hold)
	// Re-check under the lock: another Up of the same name may have won the race.
	if _, err := os.Stat(statePath(name)); err == nil {
		return nil, fmt.Errorf("lab %q already exists (%s)", name, statePath(name))
	}
	if err := ensureNetnsDir(); err != nil {
		return nil, WrapPerm(err)
	}

	token, err := NewToken()
	if err != nil {
		return nil, err
	}
	pidStart, err := procStartTime(os.Getpid())
	if err != nil {
		return nil, err
	}
	rec := &recorder{st: State{Lab: name, PID: os.Getpid(), PIDStart: pidStart, BoundToPID: !opts.Outlives,
		Created: time.Now().UTC(), Family: g.Family, MTU: opts.MTU, TxQueueLen: opts.TxQueueLen, Token: token,
		Namespaces: []NSEntry{}, Links: []LinkEntry{}}}
	if err := rec.update(func(*State) {}); err != nil {
		return nil, err
	}
	lab, err := bringUp(ctx, name, g, opts, rec)
	if err != nil {
		// Clean up everything the state file lists; the file was written before each object.
		if _, derr := downLocked(name); derr != nil {
			err = errors.Join(err, fmt.Errorf("cleanup after failed bring-up: %w", derr))
		}
		return nil, WrapPerm(err)
	}
	if opts.Hold {
		lab.lock, lk = lk, nil
	}
	return lab, nil
}

// bringUp makes the lab in three phases, each timed for opts.Progress: namespaces, veth pairs, then
// every port's offloads and link state.
func bringUp(ctx context.Context, name string, g *topo.Graph, opts Options, rec *recorder) (*Lab, error) {
	progress := func(phase string, total int, t0 time.Time) {
		if opts.Progress != nil {
			opts.Progress(phase, total, total, time.Since(t0))
		}
	}
	conns := make([]*nsConn, len(g.Nodes))
	defer func() {
		for _, c := range conns {
			c.close()
		}
	}()
	t0 := time.Now()
	if err := makeNamespaces(ctx, name, g, opts, rec, conns); err != nil {
		return nil, err
	}
	progress("namespaces", len(g.Nodes), t0)
	t1 := time.Now()
	if err := makeVeths(ctx, name, g, opts, rec, conns); err != nil {
		return nil, err
	}
	progress("links", len(g.Links), t1)
	t2 := time.Now()
	if err := configurePorts(ctx, name, g, opts, conns); err != nil {
		return nil, err
	}
	progress("configure", len(g.Nodes), t2)
	if err := rec.update(func(s *State) { s.Complete = true }); err != nil {
		return nil, err
	}
	st := rec.st
	return newLab(&st, g), nil
}

// makeNamespaces is bring-up's phase 1: one namespace per device, in parallel (the kernel creates
// network namespaces concurrently); conns[i] is device i's once made.
func makeNamespaces(ctx context.Context, name string, g *topo.Graph, opts Options, rec *recorder, conns []*nsConn) error {
	// The state file lists the whole batch before any is made, then records each one's inode once made
	// and forgets the ones never made. One write per batch instead of one per object: a state write
	// (marshal, fsync, rename, directory fsync) costs more than creating a namespace here (0.6-0.9 ms
	// against ~0.4 ms), and listing a batch up front is as safe: Down skips names that do not exist.
	if err := rec.update(func(s *State) {
		for i, n := range g.Nodes {
			if opts.hosts(i) {
				s.Namespaces = append(s.Namespaces, NSEntry{Name: NSName(name, n.Name), Device: n.Name})
			}
		}
	}); err != nil {
		return err
	}
	err := parallel(ctx, len(g.Nodes), opts.Workers, func() (func(), error) { return func() {}, nil },
		func(i int) error {
			if !opts.hosts(i) {
				return nil
			}
			c, err := createNS(NSName(name, g.Nodes[i].Name), !opts.KeepIPv6, rec.st.Mark())
			if err != nil {
				return err
			}
			conns[i] = c
			return nil
		})
	// Record what exists. A name whose creation failed or never ran is dropped: nothing of ours is there
	// (creation is O_EXCL and undoes itself), and the name may be someone else's.
	if uerr := rec.update(func(s *State) {
		s.Namespaces = s.Namespaces[:0]
		for i, n := range g.Nodes {
			if conns[i] != nil {
				s.Namespaces = append(s.Namespaces, NSEntry{Name: NSName(name, n.Name), Device: n.Name, Ino: conns[i].ino})
			}
		}
	}); uerr != nil {
		return errors.Join(err, uerr)
	}
	return err
}

// makeVeths is bring-up's phase 2: the veth pairs, each end born in its namespace (IFLA_NET_NS_FD on
// both ends), so no interface ever appears in the caller's namespace and names need only be unique per
// device.
func makeVeths(ctx context.Context, name string, g *topo.Graph, opts Options, rec *recorder, conns []*nsConn) error {
	// Made one at a time: every RTM_NEWLINK takes RTNL, and on this 2-CPU VM 128 veths took 32-44 ms
	// from one worker against 52-85 ms from 2-8 workers contending for it.
	ents, vents, veths := linkEntries(name, g, &opts)
	// Listed as a batch before any is made, like the namespaces. Links live inside our namespaces
	// and die with them (a VXLAN device too: its UDP socket is the underlay namespace's, shared, and
	// goes with its last device), so this record is for Status and people, not for teardown.
	if err := rec.update(func(s *State) { s.Links = append(append(s.Links, ents...), vents...) }); err != nil {
		return err
	}
	const linkWorkers = 1
	handles := make(chan *netlink.Handle, linkWorkers)
	err := parallel(ctx, len(veths), linkWorkers,
		func() (func(), error) {
			h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
			if err != nil {
				return nil, err
			}
			handles <- h
			return func() {}, nil
		},
		func(i int) error {
			h := <-handles
			defer func() { handles <- h }()
			ent := ents[i]
			l := g.Links[veths[i]]
			a, b := conns[l.A.Node], conns[l.B.Node]
			attrs := netlink.NewLinkAttrs()
			attrs.Name = ent.A.Ifname
			attrs.MTU = opts.MTU
			attrs.TxQLen = opts.TxQueueLen
			attrs.Namespace = netlink.NsFd(int(a.fd))
			v := &netlink.Veth{LinkAttrs: attrs, PeerName: ent.B.Ifname, PeerNamespace: netlink.NsFd(int(b.fd)),
				PeerMTU: uint32(opts.MTU), PeerTxQLen: opts.TxQueueLen}
			if err := h.LinkAdd(v); err != nil {
				return fmt.Errorf("veth %s:%s <-> %s:%s: %w", ent.A.NS, ent.A.Ifname, ent.B.NS, ent.B.Ifname, err)
			}
			return nil
		})
	if err == nil {
		err = makeVXLANs(conns, &opts)
	}
	close(handles)
	for h := range handles {
		h.Close()
	}
	return err
}

// configurePorts is bring-up's phase 3: per namespace, offloads off (unless kept) then every port up.
// It runs through the handles opened inside each namespace, so any goroutine may do it.
func configurePorts(ctx context.Context, name string, g *topo.Graph, opts Options, conns []*nsConn) error {
	return parallel(ctx, len(g.Nodes), opts.Workers, func() (func(), error) { return func() {}, nil },
		func(i int) error {
			c := conns[i]
			if c == nil {
				return nil // another machine's
			}
			for p := range g.Nodes[i].Ports {
				ifn := PortName(p)
				link, err := c.nl.LinkByName(ifn)
				if err != nil {
					return fmt.Errorf("%s %s: %w", NSName(name, g.Nodes[i].Name), ifn, err)
				}
				if !opts.KeepOffloads {
					if err := setOffloadsOff(c.sock, ifn); err != nil {
						return fmt.Errorf("%s: %w", NSName(name, g.Nodes[i].Name), err)
					}
				}
				if err := c.nl.LinkSetUp(link); err != nil {
					return fmt.Errorf("%s %s up: %w", NSName(name, g.Nodes[i].Name), ifn, err)
				}
			}
			return nil
		})
}

// parallel runs fn(0..n-1) on up to workers goroutines, stopping dispatch at the first error or when
// ctx is done. setup runs once per worker before it starts.
func parallel(ctx context.Context, n, workers int, setup func() (func(), error), fn func(i int) error) error {
	if workers > n {
		workers = n
	}
	if workers < 1 {
		return ctx.Err()
	}
	var (
		mu    sync.Mutex
		first error
		next  int
		wg    sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
	}
	take := func() int {
		mu.Lock()
		defer mu.Unlock()
		if first != nil || next >= n {
			return -1
		}
		if err := ctx.Err(); err != nil {
			first = err
			return -1
		}
		i := next
		next++
		return i
	}
	for w := 0; w < workers; w++ {
		done, err := setup()
		if err != nil {
			fail(err)
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done()
			for i := take(); i >= 0; i = take() {
				if err := fn(i); err != nil {
					fail(err)
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func newLab(st *State, g *topo.Graph) *Lab {
	l := &Lab{Name: st.Lab, Graph: g, MTU: st.MTU, TxQueueLen: st.TxQueueLen, State: st, ns: map[string]NSEntry{}}
	for _, e := range st.Namespaces {
		l.ns[e.Device] = e
	}
	return l
}

// Open attaches to a lab that is up (e.g. one made by `lab up` in another process) through its state
// file. The returned Lab has no Graph.
func Open(name string) (*Lab, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	st, err := ReadState(name)
	if err != nil {
		return nil, err
	}
	return newLab(st, nil), nil
}

// Devices lists the lab's devices in state-file order.
func (l *Lab) Devices() []string {
	out := make([]string, 0, len(l.State.Namespaces))
	for _, e := range l.State.Namespaces {
		out = append(out, e.Device)
	}
	return out
}

// NSName is the namespace name of a device of this lab.
func (l *Lab) NSName(device string) string { return NSName(l.Name, device) }

// NSPath is the bind-mount path of a device's namespace (usable with setns, `ip netns exec`'s name is
// NSName).
func (l *Lab) NSPath(device string) string { return filepath.Join(NetnsDir, l.NSName(device)) }

// netNS opens a device's namespace and checks it is the one this lab made (its recorded inode, or the
// lab's mark when no inode was recorded), so Do and Handle never act on a namespace someone else mounted
// at the name. The caller closes it.
func (l *Lab) netNS(device string) (cnins.NetNS, error) {
	e, ok := l.ns[device]
	if !ok {
		return nil, fmt.Errorf("lab %s has no device %q", l.Name, device)
	}
	n, err := cnins.GetNS(l.NSPath(device))
	if err != nil {
		return nil, fmt.Errorf("open namespace of %s: %w", device, err)
	}
	// The checks read the namespace just opened, not the name again: what was checked is what is used.
	if e.Ino == 0 && (l.State.Mark() == "" || !fdMarked(int(n.Fd()), l.State.Mark())) {
		n.Close()
		return nil, fmt.Errorf("namespace %s has no recorded inode and is not marked as lab %s's", e.Name, l.Name)
	}
	if e.Ino != 0 {
		var st unix.Stat_t
		if err := unix.Fstat(int(n.Fd()), &st); err != nil || st.Ino != e.Ino {
			n.Close()
			return nil, fmt.Errorf("namespace %s is not the one lab %s made", l.NSName(device), l.Name)
		}
	}
	return n, nil
}

// NSFile opens device's namespace, checked as Do checks it, as a file a child process can enter
// (exec.Cmd.ExtraFiles, then setns): the namespace checked is the one entered, whatever is mounted at
// its name by then (the lab torn down and the name reused). The caller closes it.
func (l *Lab) NSFile(device string) (*os.File, error) {
	n, err := l.netNS(device)
	if err != nil {
		return nil, err
	}
	defer n.Close()
	fd, err := unix.FcntlInt(n.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("namespace of %s: %w", device, err)
	}
	return os.NewFile(uintptr(fd), l.NSPath(device)), nil
}

// Handle returns a netlink handle bound to a device's namespace. The caller closes it. Prefer this to
// Do for link and address work: it needs no thread switching.
func (l *Lab) Handle(device string) (*netlink.Handle, error) {
	n, err := l.netNS(device)
	if err != nil {
		return nil, err
	}
	defer n.Close()
	return netlink.NewHandleAt(vnetns.NsHandle(n.Fd()))
}

// Do runs fn in device's namespace, for work that must create something there (e.g. an AF_PACKET
// socket, which stays in the namespace after fn returns). The switching is containernetworking's
// pkg/ns: fn runs on a fresh goroutine locked to its thread, and a thread that cannot be switched back is
// discarded rather than returned to the scheduler. fn must not start goroutines expecting them to be in
// the namespace: they run on other threads, in the caller's namespace. A panic in fn is returned as an
// error, after the thread has been switched back.
func (l *Lab) Do(device string, fn func() error) error {
	n, err := l.netNS(device)
	if err != nil {
		return err
	}
	defer n.Close()
	return n.Do(func(cnins.NetNS) (ferr error) {
		defer func() {
			if r := recover(); r != nil {
				ferr = fmt.Errorf("panic in namespace %s: %v", l.NSName(device), r)
			}
		}()
		return fn()
	})
}

// Offloads reads the offload state of interface ifname in device's namespace.
func (l *Lab) Offloads(device, ifname string) (Offloads, error) {
	var sock int
	err := l.Do(device, func() error {
		var err error
		sock, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return Offloads{}, err
	}
	defer unix.Close(sock)
	return getOffloads(sock, ifname)
}

// Down removes lab name: exactly the namespaces its state file lists (their veths go with them), then
// the state directory. Anything not in the state file is never touched.
func Down(name string) error {
	_, err := DownNotes(name)
	return err
}

// DownNotes is Down, also returning what it left alone because it is not verifiably the lab's (a
// namespace of a listed name that someone else made): not an error, the lab is down.
func DownNotes(name string) ([]string, error) {
	if err := CheckRoot(); err != nil {
		return nil, err
	}
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if _, err := ReadState(name); err != nil {
		if errors.Is(err, ErrNoLab) {
			err = fmt.Errorf("%w: nothing of it is ours to remove", err) // so down removes nothing
		}
		return nil, err
	}
	lk, err := lockLab(name, false)
	if err != nil {
		return nil, err
	}
	defer lk.unlock()
	return downLocked(name)
}

func downLocked(name string) ([]string, error) {
	st, err := ReadState(name)
	if err != nil {
		return nil, err
	}
	// Agents first: they hold sockets in the namespaces (see backend_agents.go).
	if _, err := KillAgents(name); err != nil {
		return nil, fmt.Errorf("killing lab %s's agents: %w", name, err)
	}
	if err := deleteVXLANs(st); err != nil {
		return nil, fmt.Errorf("lab %s: %w", name, err)
	}
	var (
		mu    sync.Mutex
		errs  []error
		notes []string
	)
	mark := st.Mark()
	// Unmounting is cheap; the kernel tears the namespaces down asynchronously afterwards.
	parallel(context.Background(), len(st.Namespaces), 4*runtime.NumCPU(),
		func() (func(), error) { return func() {}, nil },
		func(i int) error {
			e := st.Namespaces[i]
			note, err := deleteNS(e.Name, e.Ino, mark)
			mu.Lock()
			if err != nil {
				errs = append(errs, err)
			}
			if note != "" {
				notes = append(notes, note)
			}
			mu.Unlock()
			return nil
		})
	sort.Strings(notes)
	if len(errs) > 0 {
		// Keep the state file so a retry knows what is ours.
		return notes, errors.Join(errs...)
	}
	// The lock file lives in the state directory; removing it while we hold the flock is fine (the
	// lock dies with the file), and a concurrent Up re-creates the directory.
	if err := os.RemoveAll(stateDir(name)); err != nil {
		return notes, err
	}
	return notes, nil
}

// DownAll brings down every lab that has a valid state file and returns their names and what was left
// alone (a lab another process is bringing up or down, ErrBusy, among them); a bad state file is
// reported in the error and skipped.
func DownAll() ([]string, []string, error) {
	if err := CheckRoot(); err != nil {
		return nil, nil, err
	}
	sts, errs := List()
	var names, notes []string
	for _, st := range sts {
		n, err := DownNotes(st.Lab)
		notes = append(notes, n...)
		if errors.Is(err, ErrBusy) {
			// Another process is bringing it up (or down): it is in that process's hands, not a leftover.
			notes = append(notes, fmt.Sprintf("lab %s left alone: another process is bringing it up or down", st.Lab))
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("lab %s: %w", st.Lab, err))
			continue
		}
		names = append(names, st.Lab)
	}
	return names, notes, errors.Join(errs...)
}

// NewToken is a lab's random token (State.Token).
func NewToken() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// LabStatus says whether a lab's objects exist.
type LabStatus struct {
	Lab      string `json:"lab"`
	Family   string `json:"family"`
	PID      int    `json:"pid"`       // the process that brought it up (lab up, or a run)
	PIDAlive bool   `json:"pid_alive"` // ... still runs (a finished lab up has exited: normal)
	// BoundToPID: the lab is PID's (a run's): PID gone (PIDAlive false) means it was killed.
	BoundToPID        bool     `json:"bound_to_pid"`
	Complete          bool     `json:"complete"` // bring-up finished
	Namespaces        int      `json:"namespaces"`
	NamespacesPresent int      `json:"namespaces_present"`
	Links             int      `json:"links"`
	LinksPresent      int      `json:"links_present"` // both ends exist
	Missing           []string `json:"missing,omitempty"`
	// Processes are the lab's recorded processes running now (a live lab's supervisor and agents, a
	// run's agents), each verified as the lab's (KillAgents' check). A live lab whose list is empty has
	// lost its supervisor: nothing forwards.
	Processes []int `json:"processes"`
	// Recorded is how many processes the lab recorded (running or not): a lab that recorded some and
	// has none running (its agent killed, its supervisor gone with it) forwards nothing.
	Recorded int `json:"recorded_processes"`
}

// ownerAlive says whether the process that brought the lab up still runs: its PID exists, is not a
// zombie, and (when the state file recorded it) has the start time recorded, so a later process that
// took the PID is not taken for it.
func ownerAlive(st *State) bool {
	if st.PID <= 0 || unix.Kill(st.PID, 0) != nil || procZombie(st.PID) {
		return false
	}
	if st.PIDStart == "" {
		return true // an older state file: the PID is all there is
	}
	now, err := procStartTime(st.PID)
	return err == nil && now == st.PIDStart
}

// Status reports every lab with a valid state file and how much of it exists; bad state files come back
// as errors, one each, without hiding the other labs.
func Status() ([]LabStatus, []error) {
	if err := CheckRoot(); err != nil {
		return nil, []error{err}
	}
	sts, errs := List()
	out := make([]LabStatus, 0, len(sts))
	for i := range sts {
		out = append(out, labStatus(&sts[i]))
	}
	return out, errs
}

func labStatus(st *State) LabStatus {
	s := LabStatus{Lab: st.Lab, Family: st.Family, PID: st.PID, Complete: st.Complete, BoundToPID: st.BoundToPID,
		Namespaces: len(st.Namespaces), Links: len(st.Links)}
	s.PIDAlive = ownerAlive(st)
	s.Processes, s.Recorded = labProcesses(st.Lab)
	l := newLab(st, nil)
	handles := map[string]*netlink.Handle{}
	defer func() {
		for _, h := range handles {
			h.Close()
		}
	}()
	for _, e := range st.Namespaces {
		ino, err := nsIno(e.Name)
		if err == nil && ino != 0 && (e.Ino == ino || e.Ino == 0 && st.Mark() != "" && nsMarked(e.Name, st.Mark())) {
			s.NamespacesPresent++
			if h, err := l.Handle(e.Device); err == nil {
				handles[e.Name] = h
			}
		} else {
			s.Missing = append(s.Missing, "namespace "+e.Name)
		}
	}
	has := func(end LinkEnd) bool {
		h := handles[end.NS]
		if h == nil {
			return false
		}
		_, err := h.LinkByName(end.Ifname)
		return err == nil
	}
	for _, k := range st.Links {
		if has(k.A) && (k.VXLAN != nil || has(k.B)) {
			s.LinksPresent++
		} else {
			s.Missing = append(s.Missing, fmt.Sprintf("link %s:%s-%s:%s", k.A.NS, k.A.Ifname, k.B.NS, k.B.Ifname))
		}
	}
	return s
}
