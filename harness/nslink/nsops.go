package nslink

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// nsfsMagic is the filesystem type of a namespace file (NSFS_MAGIC): a bind-mounted namespace shows it,
// a plain leftover file does not.
const nsfsMagic = 0x6e736673

// nsConn is what bring-up keeps for a namespace it just made: a file descriptor naming the namespace (for
// IFLA_NET_NS_FD), a netlink handle and an ioctl socket both opened inside it, so configuring the
// namespace afterwards needs no thread switching at all.
type nsConn struct {
	fd   vnetns.NsHandle
	nl   *netlink.Handle
	sock int
	ino  uint64
}

func (c *nsConn) close() {
	if c == nil {
		return
	}
	if c.nl != nil {
		c.nl.Close()
	}
	if c.sock > 0 {
		unix.Close(c.sock)
	}
	if c.fd.IsOpen() {
		c.fd.Close()
	}
}

// ensureNetnsDir makes NetnsDir a shared mount point, as `ip netns add` does, so namespace mounts
// made here propagate to other mount namespaces (e.g. a later `ip netns exec` or a container) instead
// of being invisible to them.
func ensureNetnsDir() error {
	if err := os.MkdirAll(NetnsDir, 0o755); err != nil {
		return err
	}
	err := unix.Mount("", NetnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) {
		// Not a mount point yet: bind it onto itself, then mark it shared.
		if err := unix.Mount(NetnsDir, NetnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mount %s: %w", NetnsDir, err)
		}
		err = unix.Mount("", NetnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	}
	if err != nil {
		return fmt.Errorf("make %s a shared mount: %w", NetnsDir, err)
	}
	return nil
}

// createNS makes the named namespace at NetnsDir/name and returns handles into it.
//
// The work runs on a fresh goroutine locked to its OS thread, which unshares into the new namespace and
// is never unlocked: when the goroutine returns, Go throws the thread away, so no other goroutine can
// ever be scheduled on a thread left in the wrong namespace (the hazard behind netns.NewNamed, which
// moves the calling thread). Everything that must be opened from inside (netlink socket, ioctl socket,
// sysctls) is done on that thread before it exits; sockets keep their namespace afterwards.
//
// The main thread is the exception: Go parks it instead of throwing it away, and a parked thread keeps
// its namespace alive after the lab removed it (a process that builds labs one after another, a sweep,
// or a test binary, whose main goroutine mostly waits and leaves the main thread to run others). So
// on the main thread the goroutine goes back to the namespace it started in and unlocks (leaveNS).
//
// mark (the lab's marker, see State.Token) is set as the alias of the namespace's loopback before the
// namespace is mounted, and written into the placeholder file before that: a name the state file lists
// without an inode (a crash before it was recorded) is then deleted only if it carries the mark.
func createNS(name string, ipv6Off bool, mark string) (*nsConn, error) {
	type result struct {
		c   *nsConn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // unlocked on the main thread only: see above
		back, err := leaveNS()
		var c *nsConn
		if err == nil {
			c, err = createNSLocked(name, ipv6Off, mark)
			if berr := back(); berr != nil && err == nil {
				c.close()
				c, err = nil, fmt.Errorf("namespace %s: %w", name, berr)
			}
		}
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// leaveNS prepares the locked calling thread to enter another namespace and returns what to call once
// done there: on the main thread, which Go would park holding that namespace, it goes back to the
// thread's namespace now and unlocks; on any other, nothing (the thread ends with its goroutine).
func leaveNS() (back func() error, err error) {
	if unix.Gettid() != unix.Getpid() {
		return func() error { return nil }, nil
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("main thread's namespace: %w", err)
	}
	return func() error {
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			// Still locked: parked in the new namespace, which then outlives its lab; said, not hidden.
			return fmt.Errorf("the main thread cannot go back to its namespace: %w", err)
		}
		runtime.UnlockOSThread()
		return nil
	}, nil
}

func createNSLocked(name string, ipv6Off bool, mark string) (c *nsConn, err error) {
	path := filepath.Join(NetnsDir, name)
	// The placeholder the namespace is mounted on appears under its name already holding the mark (an
	// unnamed O_TMPFILE, written, then linked in), so a crash never leaves an unmarked file of ours; the
	// link fails like O_EXCL when anything is at the name: someone else's, never reused.
	tf, err := unix.Open(NetnsDir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return nil, fmt.Errorf("placeholder for %s: %w", name, err)
	}
	_, err = unix.Write(tf, []byte(mark+"\n"))
	if err == nil {
		err = unix.Linkat(tf, "", unix.AT_FDCWD, path, unix.AT_EMPTY_PATH)
		if errors.Is(err, unix.ENOENT) {
			// Before Linux 6.10, linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH and says ENOENT
			// without it (a Docker container's agent server on Debian bookworm's 6.1: the cluster
			// suite in the VM); linking the descriptor's /proc path needs no capability (linkat(2)).
			err = unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", tf), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
		}
	}
	unix.Close(tf)
	if err != nil {
		if errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("namespace %s already exists and is not this lab's: refusing to touch it", name)
		}
		return nil, fmt.Errorf("placeholder for %s: %w", name, err)
	}
	var werr error
	mounted := false
	defer func() {
		if err != nil {
			if mounted {
				unix.Unmount(path, unix.MNT_DETACH)
			}
			os.Remove(path)
			c.close()
			c = nil
		}
	}()
	if werr != nil {
		return nil, werr
	}
	if err = unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("unshare netns for %s: %w", name, err)
	}
	c = &nsConn{fd: -1, sock: -1}
	if c.nl, err = netlink.NewHandle(); err != nil {
		return c, fmt.Errorf("netlink handle in %s: %w", name, err)
	}
	lo, err := c.nl.LinkByName("lo")
	if err == nil {
		err = c.nl.LinkSetAlias(lo, mark)
	}
	if err != nil {
		return c, fmt.Errorf("marking %s as this lab's: %w", name, err)
	}
	self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
	if err = unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
		return c, fmt.Errorf("bind-mount namespace %s: %w", name, err)
	}
	mounted = true
	var st unix.Stat_t
	if err = unix.Stat(path, &st); err != nil {
		return c, err
	}
	c.ino = st.Ino
	if ipv6Off {
		// Set before any veth exists, so they are born without IPv6: no link-local address, no DAD, no
		// router solicitations on the wire. Missing IPv6 support (no /proc/sys/net/ipv6) is fine.
		for _, k := range []string{"default", "all"} {
			p := "/proc/sys/net/ipv6/conf/" + k + "/disable_ipv6"
			if werr := os.WriteFile(p, []byte("1"), 0); werr != nil && !errors.Is(werr, os.ErrNotExist) {
				return c, fmt.Errorf("%s in %s: %w", p, name, werr)
			}
		}
	}
	fd, err := unix.Open(self, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return c, err
	}
	c.fd = vnetns.NsHandle(fd)
	// The ethtool ioctl acts on the namespace of the socket it is issued on, whatever thread issues it.
	if c.sock, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
		return c, fmt.Errorf("ioctl socket in %s: %w", name, err)
	}
	// Loopback up: agents in the namespace may talk to themselves; it carries nothing onto the fabric.
	err = c.nl.LinkSetUp(lo)
	if err != nil {
		return c, fmt.Errorf("lo up in %s: %w", name, err)
	}
	return c, nil
}

// nsIno returns the inode of the namespace mounted at NetnsDir/name, or 0 if nothing namespace-like is
// mounted there.
func nsIno(name string) (uint64, error) {
	path := filepath.Join(NetnsDir, name)
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return 0, nil
		}
		return 0, err
	}
	if sfs.Type != nsfsMagic {
		return 0, nil
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// nsMarked says whether the namespace mounted at NetnsDir/name carries mark as its loopback's alias.
func nsMarked(name, mark string) bool {
	fd, err := unix.Open(filepath.Join(NetnsDir, name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return fdMarked(fd, mark)
}

// fdMarked says whether the namespace open at fd carries mark as its loopback's alias.
func fdMarked(fd int, mark string) bool {
	h, err := netlink.NewHandleAt(vnetns.NsHandle(fd))
	if err != nil {
		return false
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	return err == nil && lo.Attrs().Alias == mark
}

// fileMarked says whether path is a small regular file (not a link, not a mount) holding exactly mark:
// the placeholder createNS writes before it mounts a namespace over it.
func fileMarked(path, mark string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 512)
	n, _ := f.Read(b)
	return n == len(mark)+1 && string(b[:n]) == mark+"\n"
}

// deleteNS unmounts and removes the namespace file. The kernel destroys the namespace, and with it
// every veth end inside (which takes the peer end with it), once no process holds it open.
//
// Only a namespace verifiably this lab's is touched: one marked with the lab's mark (its loopback's
// alias, set when it was made) and, when an inode was recorded, with that inode. The mark is checked even
// when the inode matches: a state file is only a file, and one naming a foreign namespace's inode (edited,
// or copied from another lab) must not get that namespace deleted. Anything else at the name (someone
// else's namespace, made after ours was gone or in the crash window) is left alone, and the returned note
// says so; err is for failures to remove what is ours.
func deleteNS(name string, wantIno uint64, mark string) (note string, err error) {
	path := filepath.Join(NetnsDir, name)
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Sprintf("%s is a symbolic link, never one of this lab's namespaces: left alone", path), nil
	}
	ino, err := nsIno(name)
	if err != nil {
		return "", err
	}
	if ino != 0 {
		switch {
		case wantIno != 0 && ino != wantIno:
			return fmt.Sprintf("namespace %s is not the one this lab made (inode %d, recorded %d): left alone", name, ino, wantIno), nil
		case mark == "" || !nsMarked(name, mark):
			return fmt.Sprintf("namespace %s does not carry this lab's mark: someone else's, left alone", name), nil
		}
		if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return "", fmt.Errorf("unmount %s: %w", path, err)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		return "", nil
	}
	// Nothing mounted: absent, or the placeholder createNS made right before a crash (ours only if it
	// holds our mark).
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || mark == "" || !fileMarked(path, mark) {
		return fmt.Sprintf("%s is not a namespace this lab made (no mark): left alone", path), nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return "", nil
}

// ethtool ioctl commands and the feature string set (linux/ethtool.h).
const (
	ethtoolGSTRINGS  = 0x1b
	ethtoolGSSETINFO = 0x37
	ethtoolGFEATURES = 0x3a
	ethtoolSFEATURES = 0x3b
	ethSSFeatures    = 4
	ethGStringLen    = 32
)

// ethtoolBuf issues an ethtool ioctl whose argument is buf (a C struct laid out by the caller).
func ethtoolBuf(sock int, ifname string, buf []byte) error {
	var ifr ifreqData
	copy(ifr.name[:unix.IFNAMSIZ-1], ifname)
	ifr.data = unsafe.Pointer(&buf[0])
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(sock), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(buf)
	if errno != 0 {
		return errno
	}
	return nil
}

type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

var ne = binary.NativeEndian

// featureNames returns the kernel's feature names in bit order (the same for every device).
func featureNames(sock int, ifname string) ([]string, error) {
	info := make([]byte, 20) // cmd, reserved, u64 sset_mask, u32 data[1]
	ne.PutUint32(info[0:], ethtoolGSSETINFO)
	ne.PutUint64(info[8:], 1<<ethSSFeatures)
	if err := ethtoolBuf(sock, ifname, info); err != nil {
		return nil, fmt.Errorf("ETHTOOL_GSSET_INFO: %w", err)
	}
	if ne.Uint64(info[8:])&(1<<ethSSFeatures) == 0 {
		return nil, errors.New("kernel has no feature string set")
	}
	n := int(ne.Uint32(info[16:]))
	gs := make([]byte, 12+n*ethGStringLen)
	ne.PutUint32(gs[0:], ethtoolGSTRINGS)
	ne.PutUint32(gs[4:], ethSSFeatures)
	ne.PutUint32(gs[8:], uint32(n))
	if err := ethtoolBuf(sock, ifname, gs); err != nil {
		return nil, fmt.Errorf("ETHTOOL_GSTRINGS: %w", err)
	}
	names := make([]string, n)
	for i := range names {
		b := gs[12+i*ethGStringLen : 12+(i+1)*ethGStringLen]
		if j := bytes.IndexByte(b, 0); j >= 0 {
			b = b[:j]
		}
		names[i] = string(b)
	}
	return names, nil
}

// offFeature says which features the backend turns off: every tx checksum offload, every
// segmentation offload (TSO in all its flavours, including ones newer than the legacy ethtool calls
// know, e.g. tx-tcp-accecn-segmentation on 6.18, plus UDP/tunnel/SCTP segmentation and GSO itself),
// GSO lists and every receive-side coalescing (GRO, LRO, GRO lists, UDP GRO forwarding).
func offFeature(name string) bool {
	return strings.HasPrefix(name, "tx-checksum-") || strings.HasSuffix(name, "-segmentation") ||
		name == "tx-gso-list" || name == "rx-gro" || name == "rx-lro" || name == "rx-gro-hw" ||
		name == "rx-gro-list" || name == "rx-udp-gro-forwarding"
}

type featureSet struct {
	names []string
	off   []bool
}

var (
	featOnce sync.Once
	feats    *featureSet
	featErr  error
)

func features(sock int, ifname string) (*featureSet, error) {
	featOnce.Do(func() {
		names, err := featureNames(sock, ifname)
		if err != nil {
			featErr = err
			return
		}
		fs := &featureSet{names: names, off: make([]bool, len(names))}
		for i, n := range names {
			fs.off[i] = offFeature(n)
		}
		feats = fs
	})
	return feats, featErr
}

// getActive returns the active feature bits of ifname.
func getActive(sock int, ifname string, n int) ([]bool, error) {
	blocks := (n + 31) / 32
	buf := make([]byte, 8+16*blocks)
	ne.PutUint32(buf[0:], ethtoolGFEATURES)
	ne.PutUint32(buf[4:], uint32(blocks))
	if err := ethtoolBuf(sock, ifname, buf); err != nil {
		return nil, fmt.Errorf("ETHTOOL_GFEATURES on %s: %w", ifname, err)
	}
	act := make([]bool, n)
	for i := range act {
		active := ne.Uint32(buf[8+16*(i/32)+8:])
		act[i] = active&(1<<(i%32)) != 0
	}
	return act, nil
}

// setOffloadsOff turns off, on one interface, the features offFeature selects, in one
// ETHTOOL_SFEATURES call (what `ethtool -K` does). Why: a userspace forwarder must see each frame as
// it would be on a wire. With tx checksum offload on, kernel TCP hands veth frames with partial
// checksums and a forwarder relays them with bad checksums (TcpInCsumErrors); with TSO/GSO on, a
// "frame" can be a 64 KB super-frame, breaking per-frame queue, pacing and pause accounting; GRO would
// merge received frames behind the engines' back. The ioctl is issued from Go on a socket opened in
// the namespace: no ethtool binary, no process per interface.
func setOffloadsOff(sock int, ifname string) error {
	fs, err := features(sock, ifname)
	if err != nil {
		return fmt.Errorf("ethtool features of %s: %w", ifname, err)
	}
	blocks := (len(fs.names) + 31) / 32
	buf := make([]byte, 8+8*blocks)
	ne.PutUint32(buf[0:], ethtoolSFEATURES)
	ne.PutUint32(buf[4:], uint32(blocks))
	for i, off := range fs.off {
		if off {
			o := 8 + 8*(i/32)
			ne.PutUint32(buf[o:], ne.Uint32(buf[o:])|1<<(i%32)) // valid; requested stays 0
		}
	}
	if err := ethtoolBuf(sock, ifname, buf); err != nil {
		return fmt.Errorf("ETHTOOL_SFEATURES on %s: %w", ifname, err)
	}
	return nil
}

// Offloads is the offload state of one interface, as the backend sees it.
type Offloads struct {
	TxChecksum bool     // any tx-checksum-* feature active
	TSO        bool     // any tx-tcp*-segmentation active
	GSO        bool     // tx-generic-segmentation
	GRO        bool     // rx-gro
	On         []string // every feature the backend turns off that is nevertheless active
}

func getOffloads(sock int, ifname string) (Offloads, error) {
	var o Offloads
	fs, err := features(sock, ifname)
	if err != nil {
		return o, err
	}
	act, err := getActive(sock, ifname, len(fs.names))
	if err != nil {
		return o, err
	}
	for i, n := range fs.names {
		if !act[i] {
			continue
		}
		switch {
		case strings.HasPrefix(n, "tx-checksum-"):
			o.TxChecksum = true
		case strings.HasPrefix(n, "tx-tcp") && strings.HasSuffix(n, "-segmentation"):
			o.TSO = true
		case n == "tx-generic-segmentation":
			o.GSO = true
		case n == "rx-gro":
			o.GRO = true
		}
		if fs.off[i] {
			o.On = append(o.On, n)
		}
	}
	return o, nil
}
