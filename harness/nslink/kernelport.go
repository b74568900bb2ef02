package nslink

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// KernelIf and RelayPort name a relay host's kernel interface and the port its relay engine reads it
// through: a veth pair inside the host's namespace. In a server-centric fabric (NDC, BCube) a host
// forwards; in a live lab its ports belong to a Go relay engine (a switch with one more port, toward
// the kernel), and the kernel, an ordinary host behind it, sends and receives on KernelIf.
const (
	KernelIf  = "eth0"
	RelayPort = "k0"
)

// AddKernelPort makes the KernelIf-RelayPort veth pair inside device's namespace, up, at mtu, offloads
// off (see setOffloadsOff). It goes with the namespace.
func (l *Lab) AddKernelPort(device string, mtu int) error {
	nh, err := l.Handle(device)
	if err != nil {
		return err
	}
	defer nh.Close()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: RelayPort, MTU: mtu, TxQLen: DefaultTxQueueLen}, PeerName: KernelIf}
	if err := nh.LinkAdd(v); err != nil {
		return fmt.Errorf("%s: veth %s-%s: %w", device, RelayPort, KernelIf, err)
	}
	for _, n := range []string{RelayPort, KernelIf} {
		lk, err := nh.LinkByName(n)
		if err != nil {
			return err
		}
		if err := nh.LinkSetMTU(lk, mtu); err != nil {
			return err
		}
		if err := nh.LinkSetUp(lk); err != nil {
			return err
		}
	}
	return l.Do(device, func() error {
		sock, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(sock)
		for _, n := range []string{RelayPort, KernelIf} {
			if err := setOffloadsOff(sock, n); err != nil {
				return err
			}
		}
		return nil
	})
}
