package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
func createNS(name string, ipv6Off bool) (*nsConn, error) {
	type result struct {
		c   *nsConn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked on purpose: see above
		c, err := createNSLocked(name, ipv6Off)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

func createNSLocked(name string, ipv6Off bool) (c *nsConn, err error) {
	path := filepath.Join(NetnsDir, name)
	// O_EXCL: a namespace (or any file) already at this name is someone else's; never reuse it.
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("namespace %s already exists and is not this lab's: refusing to touch it", name)
		}
		return nil, err
	}
	f.Close()
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
	if err = unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("unshare netns for %s: %w", name, err)
	}
	self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
	if err = unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
		return nil, fmt.Errorf("bind-mount namespace %s: %w", name, err)
	}
	mounted = true
	c = &nsConn{fd: -1, sock: -1}
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
	if c.nl, err = netlink.NewHandle(); err != nil {
		return c, fmt.Errorf("netlink handle in %s: %w", name, err)
	}
	// The ethtool ioctl acts on the namespace of the socket it is issued on, whatever thread issues it.
	if c.sock, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
		return c, fmt.Errorf("ioctl socket in %s: %w", name, err)
	}
	// Loopback up: agents in the namespace may talk to themselves; it carries nothing onto the fabric.
	lo, err := c.nl.LinkByName("lo")
	if err == nil {
		err = c.nl.LinkSetUp(lo)
	}
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

// deleteNS unmounts and removes the namespace file. The kernel destroys the namespace, and with it
// every veth end inside (which takes the peer end with it), once no process holds it open.
// wantIno guards against deleting a namespace that is not the one we made: if the name now refers to
// a different namespace (ours vanished and someone reused the name), it is left alone.
func deleteNS(name string, wantIno uint64) error {
	path := filepath.Join(NetnsDir, name)
	ino, err := nsIno(name)
	if err != nil {
		return err
	}
	if ino != 0 && wantIno != 0 && ino != wantIno {
		return fmt.Errorf("namespace %s is not the one this lab made (inode %d, recorded %d): left alone", name, ino, wantIno)
	}
	if ino != 0 {
		if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount %s: %w", path, err)
		}
	}
	// The file may exist unmounted: created by us (O_EXCL) right before a crash.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Legacy ethtool commands (linux/ethtool.h). The kernel maps each onto its feature mask (STXCSUM clears
// every tx checksum feature, STSO every TSO flavour), so four calls give a deliberate state.
const (
	ethtoolGTXCSUM = 0x16
	ethtoolSTXCSUM = 0x17
	ethtoolGTSO    = 0x1e
	ethtoolSTSO    = 0x1f
	ethtoolGGSO    = 0x23
	ethtoolSGSO    = 0x24
	ethtoolGGRO    = 0x2b
	ethtoolSGRO    = 0x2c
)

type ethtoolValue struct {
	cmd  uint32
	data uint32
}

type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

func ethtoolCmd(sock int, ifname string, cmd, data uint32) (uint32, error) {
	v := &ethtoolValue{cmd: cmd, data: data}
	var ifr ifreqData
	copy(ifr.name[:unix.IFNAMSIZ-1], ifname)
	ifr.data = unsafe.Pointer(v)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(sock), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(v)
	if errno != 0 {
		return 0, errno
	}
	return v.data, nil
}

// Offloads is the state of the offloads the backend sets on every veth end.
type Offloads struct {
	TxChecksum, TSO, GSO, GRO bool
}

// setOffloadsOff turns off GRO, GSO, TSO and tx checksumming on one interface, in that order (TSO
// depends on checksumming; GSO/GRO are independent software features). Why: a userspace forwarder
// must see each frame as it would be on a wire. With tx checksum offload on, kernel TCP hands veth
// frames with partial checksums and a forwarder relays them with bad checksums (TcpInCsumErrors); with
// TSO/GSO on, a "frame" can be a 64 KB super-frame, breaking per-frame queue, pacing and pause
// accounting. GRO is off by default on veth here; it is cleared anyway so a later kernel default
// cannot merge frames behind the engines' back.
func setOffloadsOff(sock int, ifname string) error {
	for _, c := range []struct {
		cmd  uint32
		what string
	}{{ethtoolSGRO, "gro"}, {ethtoolSGSO, "gso"}, {ethtoolSTSO, "tso"}, {ethtoolSTXCSUM, "tx-checksumming"}} {
		if _, err := ethtoolCmd(sock, ifname, c.cmd, 0); err != nil {
			return fmt.Errorf("ethtool %s off on %s: %w", c.what, ifname, err)
		}
	}
	return nil
}

func getOffloads(sock int, ifname string) (Offloads, error) {
	var o Offloads
	for _, c := range []struct {
		cmd uint32
		dst *bool
	}{{ethtoolGTXCSUM, &o.TxChecksum}, {ethtoolGTSO, &o.TSO}, {ethtoolGGSO, &o.GSO}, {ethtoolGGRO, &o.GRO}} {
		v, err := ethtoolCmd(sock, ifname, c.cmd, 0)
		if err != nil {
			return o, fmt.Errorf("ethtool get on %s: %w", ifname, err)
		}
		*c.dst = v != 0
	}
	return o, nil
}
