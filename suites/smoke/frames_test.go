package smoke_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// smokeEtherType is IEEE 802 "local experimental" EtherType 2: nothing else on the machine sends it, so
// every frame our sockets see is one of ours.
const smokeEtherType = 0x88B5

// portSock is an AF_PACKET socket bound to one port of one device.
type portSock struct {
	device string
	node   int
	port   int
	fd     int
	mac    net.HardwareAddr
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// openPortSockets opens one raw socket per port of every device, inside the device's namespace. The
// socket keeps its namespace after Do returns, so the test reads and writes from any goroutine.
func openPortSockets(lab *nslink.Lab, g *topo.Graph) ([]*portSock, error) {
	var socks []*portSock
	for ni, n := range g.Nodes {
		for p := range n.Ports {
			ps := &portSock{device: n.Name, node: ni, port: p, fd: -1}
			err := lab.Do(n.Name, func() error {
				ifi, err := net.InterfaceByName(nslink.PortName(p))
				if err != nil {
					return err
				}
				ps.mac = ifi.HardwareAddr
				fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, int(htons(smokeEtherType)))
				if err != nil {
					return err
				}
				ps.fd = fd
				// Our own transmissions would otherwise loop back to this socket as PACKET_OUTGOING.
				if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
					return err
				}
				return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(smokeEtherType), Ifindex: ifi.Index})
			})
			if ps.fd >= 0 {
				socks = append(socks, ps)
			}
			if err != nil {
				closeSockets(socks)
				return nil, fmt.Errorf("%s p%d: %w", n.Name, p, err)
			}
		}
	}
	return socks, nil
}

func closeSockets(socks []*portSock) {
	for _, s := range socks {
		unix.Close(s.fd)
	}
}

// delivery is where a frame was expected or seen.
type delivery struct {
	device string
	port   int
}

// exchange sends one broadcast frame with a unique payload from each end of every link, then reads
// every port socket until all expected frames have arrived (or the deadline passes) plus a short
// grace period for strays. It returns, per payload, every place it was received.
func exchange(labName string, g *topo.Graph, socks []*portSock, timeout time.Duration) (expect map[string]delivery, got map[string][]delivery, err error) {
	bySock := map[[2]int]*portSock{}
	for _, s := range socks {
		bySock[[2]int{s.node, s.port}] = s
	}
	expect = map[string]delivery{}
	got = map[string][]delivery{}
	for li, l := range g.Links {
		for dir, ends := range [][2]topo.End{{l.A, l.B}, {l.B, l.A}} {
			from, to := ends[0], ends[1]
			s := bySock[[2]int{from.Node, from.Port}]
			payload := fmt.Sprintf("fabriclab smoke %s link %d dir %d from %s:p%d nonce %d",
				labName, li, dir, g.Nodes[from.Node].Name, from.Port, time.Now().UnixNano())
			expect[payload] = delivery{g.Nodes[to.Node].Name, to.Port}
			var f bytes.Buffer
			f.Write([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
			f.Write(s.mac)
			binary.Write(&f, binary.BigEndian, uint16(smokeEtherType))
			f.WriteString(payload)
			for f.Len() < 60 { // minimum Ethernet frame without FCS
				f.WriteByte(0)
			}
			if _, err := unix.Write(s.fd, f.Bytes()); err != nil {
				return nil, nil, fmt.Errorf("send on %s:p%d: %w", g.Nodes[from.Node].Name, from.Port, err)
			}
		}
	}
	pfds := make([]unix.PollFd, len(socks))
	for i, s := range socks {
		pfds[i] = unix.PollFd{Fd: int32(s.fd), Events: unix.POLLIN}
	}
	buf := make([]byte, 65536)
	received := 0
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if received >= len(expect) {
			// Everything arrived: keep listening briefly so a frame delivered twice or to a wrong port
			// is caught too.
			if grace := 100 * time.Millisecond; left > grace {
				deadline = time.Now().Add(grace)
				left = grace
			}
		}
		if left <= 0 {
			return expect, got, nil
		}
		n, err := unix.Poll(pfds, int(left/time.Millisecond)+1)
		if err != nil && err != unix.EINTR {
			return nil, nil, err
		}
		if n <= 0 {
			continue
		}
		for i := range pfds {
			if pfds[i].Revents&unix.POLLIN == 0 {
				continue
			}
			for {
				m, _, err := unix.Recvfrom(socks[i].fd, buf, 0)
				if err != nil {
					break // EAGAIN: drained
				}
				if m < 14 {
					continue
				}
				p := string(bytes.TrimRight(buf[14:m], "\x00"))
				got[p] = append(got[p], delivery{socks[i].device, socks[i].port})
				if _, ok := expect[p]; ok && len(got[p]) == 1 {
					received++
				}
			}
		}
	}
}
