package nslink

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// VXLANOverhead is what a VXLAN link adds to each frame on its underlay (IPv4 20 + UDP 8 + VXLAN 8 +
// the inner Ethernet header 14): the kernel gives a VXLAN device its underlay's MTU minus this, so a
// lab of MTU m needs an underlay of at least m + 50.
const VXLANOverhead = 50

// VXLANLink is one end of a link between machines: port Port of node Node (this machine's end of graph
// link Link) is a kernel VXLAN device instead of a veth. It is created through netlink from the
// namespace that holds the underlay interface (the process's own) straight into the device's namespace,
// so its UDP socket lives in the underlay namespace (the link-netns) and the device in the lab's.
type VXLANLink struct {
	Link     int    `json:"link"`
	Node     int    `json:"node"`
	Port     int    `json:"port"`
	VNI      int    `json:"vni"`
	Local    string `json:"local"`  // this machine's underlay IPv4 address
	Remote   string `json:"remote"` // the other machine's
	DstPort  int    `json:"dst_port"`
	Underlay string `json:"underlay"` // the underlay interface's name in the process's namespace
}

// VXLANEntry records a VXLAN link in the state file (LinkEntry.VXLAN); its one end is LinkEntry.A.
type VXLANEntry struct {
	VNI      int    `json:"vni"`
	Local    string `json:"local"`
	Remote   string `json:"remote"`
	DstPort  int    `json:"dst_port"`
	Underlay string `json:"underlay"`
}

// Check refuses a VXLAN link the kernel would refuse or that could reach outside the lab's own
// tunnel: a VNI out of 1..2^24-1, a port out of range, addresses that are not unicast IPv4.
func (v VXLANLink) Check() error {
	return VXLANEntry{VNI: v.VNI, Local: v.Local, Remote: v.Remote, DstPort: v.DstPort, Underlay: v.Underlay}.check()
}

func (v VXLANEntry) check() error {
	if v.VNI < 1 || v.VNI > 1<<24-1 {
		return fmt.Errorf("vxlan: VNI %d is not in 1..%d", v.VNI, 1<<24-1)
	}
	if v.DstPort < 1 || v.DstPort > 65535 {
		return fmt.Errorf("vxlan: port %d is not in 1..65535", v.DstPort)
	}
	for _, a := range []string{v.Local, v.Remote} {
		ip := net.ParseIP(a)
		if ip == nil || ip.To4() == nil || ip.IsUnspecified() || ip.IsMulticast() {
			return fmt.Errorf("vxlan: %q is not a unicast IPv4 address", a)
		}
	}
	if v.Underlay == "" || len(v.Underlay) > 15 {
		return fmt.Errorf("vxlan: underlay interface %q", v.Underlay)
	}
	return nil
}

// Underlay finds the interface holding ip in the process's namespace and its MTU.
func Underlay(ip string) (name string, mtu int, err error) {
	want := net.ParseIP(ip)
	if want == nil {
		return "", 0, fmt.Errorf("underlay %q is not an IP address", ip)
	}
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return "", 0, err
	}
	for _, a := range addrs {
		if a.IP.Equal(want) {
			l, err := netlink.LinkByIndex(a.LinkIndex)
			if err != nil {
				return "", 0, err
			}
			return l.Attrs().Name, l.Attrs().MTU, nil
		}
	}
	return "", 0, fmt.Errorf("underlay %s: no interface in this namespace has that address", ip)
}

// CheckUnderlayMTU refuses a lab whose frames would not fit the underlay once wrapped in VXLAN.
func CheckUnderlayMTU(machine string, underlayMTU, labMTU int) error {
	if underlayMTU < labMTU+VXLANOverhead {
		return fmt.Errorf("machine %s: underlay MTU %d is below the lab's MTU %d + %d of VXLAN headers: raise the underlay's MTU "+
			"(Docker: network option com.docker.network.driver.mtu=%d) or lower the spec's host.mtu (the lab's MTU follows it: "+
			"host.mtu plus headers, source route and the 16-byte lockstep stamp, or host.mtu itself for kernel hosts); nothing was made",
			machine, underlayMTU, labMTU, VXLANOverhead, labMTU+VXLANOverhead)
	}
	return nil
}

// makeVXLAN creates v's device, named after its port, in namespace c.
func makeVXLAN(h *netlink.Handle, c *nsConn, v VXLANLink, mtu, txq int) error {
	under, err := h.LinkByName(v.Underlay)
	if err != nil {
		return fmt.Errorf("vxlan link %d: underlay %s: %w", v.Link, v.Underlay, err)
	}
	if under.Attrs().MTU < mtu+VXLANOverhead {
		return CheckUnderlayMTU("this", under.Attrs().MTU, mtu)
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = PortName(v.Port)
	attrs.MTU = mtu
	attrs.TxQLen = txq
	attrs.Namespace = netlink.NsFd(int(c.fd))
	dev := &netlink.Vxlan{LinkAttrs: attrs, VxlanId: v.VNI, VtepDevIndex: under.Attrs().Index,
		SrcAddr: net.ParseIP(v.Local).To4(), Group: net.ParseIP(v.Remote).To4(), Port: v.DstPort,
		// No learning and no miss notifications: every frame goes to the one remote end.
		Learning: false}
	if err := h.LinkAdd(dev); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("vxlan link %d: VNI %d on port %d is in use in this machine's underlay namespace (another lab? give the cluster file another vxlan.vni_base): %w", v.Link, v.VNI, v.DstPort, err)
		}
		return fmt.Errorf("vxlan link %d (VNI %d to %s): %w", v.Link, v.VNI, v.Remote, err)
	}
	return nil
}

// checkPart checks a part's Nodes and VXLAN against g: every VXLAN end is a hosted node's port whose
// peer is not hosted here, and every link leaving the part has its VXLAN end (a port left without its
// device would leave the engine writing into nothing).
func (o *Options) checkPart(g *topo.Graph) error {
	if o.Nodes == nil {
		if len(o.VXLAN) > 0 {
			return errors.New("vxlan links need Options.Nodes: a whole lab on one machine has none")
		}
		return nil
	}
	o.hosted = map[int]bool{}
	for _, n := range o.Nodes {
		if n < 0 || n >= len(g.Nodes) {
			return fmt.Errorf("node %d is not in the topology", n)
		}
		o.hosted[n] = true
	}
	seen := map[int]bool{}
	for _, v := range o.VXLAN {
		if err := v.Check(); err != nil {
			return fmt.Errorf("link %d: %w", v.Link, err)
		}
		if v.Link < 0 || v.Link >= len(g.Links) || seen[v.Link] {
			return fmt.Errorf("vxlan link %d is not a link of the topology, or given twice", v.Link)
		}
		seen[v.Link] = true
		l := g.Links[v.Link]
		near, far := l.A, l.B
		if far.Node == v.Node && far.Port == v.Port {
			near, far = far, near
		}
		if near.Node != v.Node || near.Port != v.Port || !o.hosted[near.Node] || o.hosted[far.Node] {
			return fmt.Errorf("vxlan link %d: %d:p%d is not this machine's end of a link to another machine", v.Link, v.Node, v.Port)
		}
	}
	for i, l := range g.Links {
		if o.hosted[l.A.Node] != o.hosted[l.B.Node] && !seen[i] {
			return fmt.Errorf("link %d leaves this machine's part but has no vxlan end", i)
		}
	}
	return nil
}

// linkEntries are the state file's entries for a bring-up: the veths (and their graph link indices),
// then the VXLAN ends.
func linkEntries(name string, g *topo.Graph, o *Options) (veth []LinkEntry, vx []LinkEntry, idx []int) {
	for i, l := range g.Links {
		if !o.hosts(l.A.Node) || !o.hosts(l.B.Node) {
			continue
		}
		veth = append(veth, LinkEntry{Index: i,
			A: LinkEnd{NS: NSName(name, g.Nodes[l.A.Node].Name), Ifname: PortName(l.A.Port)},
			B: LinkEnd{NS: NSName(name, g.Nodes[l.B.Node].Name), Ifname: PortName(l.B.Port)}})
		idx = append(idx, i)
	}
	for _, v := range o.VXLAN {
		vx = append(vx, LinkEntry{Index: v.Link,
			A:     LinkEnd{NS: NSName(name, g.Nodes[v.Node].Name), Ifname: PortName(v.Port)},
			VXLAN: &VXLANEntry{VNI: v.VNI, Local: v.Local, Remote: v.Remote, DstPort: v.DstPort, Underlay: v.Underlay}})
	}
	return veth, vx, idx
}

// makeVXLANs creates every VXLAN end, from the process's own (the underlay's) namespace.
func makeVXLANs(conns []*nsConn, o *Options) error {
	if len(o.VXLAN) == 0 {
		return nil
	}
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer h.Close()
	mtu, txq := o.MTU, o.TxQueueLen
	for _, v := range o.VXLAN {
		if err := makeVXLAN(h, conns[v.Node], v, mtu, txq); err != nil {
			return err
		}
	}
	return nil
}

// AutoUnderlay is the one non-loopback IPv4 address of the process's namespace (a container's or a
// pod's eth0): `lab agent serve --underlay auto`. Several addresses are ambiguous and refused.
func AutoUnderlay() (string, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return "", err
	}
	var found []string
	for _, a := range addrs {
		if !a.IP.IsLoopback() && a.IP.IsGlobalUnicast() {
			found = append(found, a.IP.String())
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("--underlay auto: this namespace has %d IPv4 addresses %v, not one: name the underlay's", len(found), found)
	}
	return found[0], nil
}

// deleteVXLANs removes the lab's VXLAN devices the state file lists, each only if it is still a VXLAN
// of the recorded VNI, before Down unmounts the namespaces: the kernel frees a namespace (and
// unregisters its devices) asynchronously once the last reference goes, and until then the VNI stays
// taken in the underlay namespace, so the next lab over the same machines could not have it.
func deleteVXLANs(st *State) error {
	l := newLab(st, nil)
	var errs []error
	for _, k := range st.Links {
		if k.VXLAN == nil {
			continue
		}
		dev := ""
		for _, e := range st.Namespaces {
			if e.Name == k.A.NS {
				dev = e.Device
			}
		}
		h, err := l.Handle(dev)
		if err != nil {
			continue // the namespace is gone, and the device with it
		}
		if link, err := h.LinkByName(k.A.Ifname); err == nil {
			if v, ok := link.(*netlink.Vxlan); ok && v.VxlanId == k.VXLAN.VNI {
				if err := h.LinkDel(link); err != nil {
					errs = append(errs, fmt.Errorf("vxlan %s:%s: %w", k.A.NS, k.A.Ifname, err))
				}
			}
		}
		h.Close()
	}
	return errors.Join(errs...)
}
