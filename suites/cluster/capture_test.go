package cluster_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// `lab capture` on a live lab over several machines: the switch's machine captures the port and streams
// the pcap back to the coordinator (this host), which writes it.

// edgePort is the switch port (DEVICE:pN) whose cable reaches host h, and the machine of that switch.
func edgePort(in liveInspect, h string) (string, string) {
	for _, d := range in.Devices {
		for _, p := range d.Ports {
			if p.Peer == h+":p0" {
				for _, m := range in.Machines {
					for _, dev := range m.Devices {
						if dev == d.Name {
							return fmt.Sprintf("%s:p%d", d.Name, p.Port), m.Name
						}
					}
				}
			}
		}
	}
	Fail("no switch port reaches " + h)
	return "", ""
}

// hostAddr is host h's 198.18.x address (lab inspect --json).
func hostAddr(in liveInspect, h string) string {
	for _, a := range in.Hosts {
		if a.Name == h {
			Expect(a.Address).To(HavePrefix("198.18."))
			return a.Address
		}
	}
	Fail("no address for " + h)
	return ""
}

// startCapture runs lab capture in the background and returns once the machine captures.
func startCapture(args ...string) (*exec.Cmd, *syncBuffer) {
	cmd := exec.Command(labBin, append([]string{"capture"}, args...)...)
	var buf syncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	Expect(cmd.Start()).To(Succeed())
	Eventually(buf.String, 15*time.Second, 50*time.Millisecond).Should(ContainSubstring("capturing"))
	return cmd, &buf
}

// waitCapture waits for a capture to exit and says its exit status was 0.
func waitCapture(cmd *exec.Cmd, out *syncBuffer) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	Eventually(done, 30*time.Second).Should(Receive(BeNil()), "lab capture: %s", out)
	GinkgoWriter.Printf("lab capture:\n%s\n", out)
}

// captureFiles lists the capture files machine m holds for lab name (in the lab's state directory).
func captureFiles(m, name string) []string {
	pid := mustDocker("inspect", "-f", "{{.State.Pid}}", tag+"-"+m)
	got, err := filepath.Glob(filepath.Join("/proc", pid, "root/run/fabriclab", name, "capture-*"))
	Expect(err).NotTo(HaveOccurred())
	return got
}

// between counts the frames of a pcap that carry IPv4 from a to b and from b to a, and the TCP payload
// bytes from a to b.
type between struct{ ab, ba, tcpAB int }

func pcapBetween(path, a, b string) between {
	f, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	Expect(err).NotTo(HaveOccurred(), "%s is no pcap", path)
	Expect(r.LinkType()).To(Equal(layers.LinkTypeEthernet))
	var c between
	frames := 0
	for {
		data, _, err := r.ReadPacketData()
		if err != nil {
			break
		}
		frames++
		pk := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
		ip, _ := pk.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if ip == nil {
			continue
		}
		switch {
		case ip.SrcIP.String() == a && ip.DstIP.String() == b:
			c.ab++
			if tcp, ok := pk.Layer(layers.LayerTypeTCP).(*layers.TCP); ok {
				c.tcpAB += len(tcp.Payload)
			}
		case ip.SrcIP.String() == b && ip.DstIP.String() == a:
			c.ba++
		}
	}
	GinkgoWriter.Printf("%s: %d frames, %d %s -> %s (%d TCP payload bytes), %d back\n", path, frames, c.ab, a, b, c.tcpAB, c.ba)
	return c
}

// captureRefusals: bad ports are refused naming them, before anything is captured.
func captureRefusals(name string) {
	for _, c := range []struct{ port, want string }{
		{"s99:p0", `lab ` + name + ` has no device "s99"`},
		{"s0:p9", "s0 has ports p0..p3"},
		{"s0", `want DEVICE:pN`},
		{"h0:p0", "capture a switch port"},
	} {
		out, err := lab("capture", name, c.port, "-w", filepath.Join(dir, "refused.pcap"), "--for", "1s")
		Expect(err).To(HaveOccurred(), "lab capture %s: %s", c.port, out)
		Expect(out).To(ContainSubstring(c.want), "lab capture %s", c.port)
	}
	_, err := os.Stat(filepath.Join(dir, "refused.pcap"))
	Expect(os.IsNotExist(err)).To(BeTrue(), "a refused capture wrote a file")
}

// portCapture is the capture column of a port in lab inspect --json ("" when not capturing).
func portCapture(name, port string) string {
	dev, p, _ := strings.Cut(port, ":")
	for _, d := range inspectLab(name).Devices {
		if d.Name != dev {
			continue
		}
		for _, pp := range d.Ports {
			if fmt.Sprintf("p%d", pp.Port) == p {
				return pp.Capture
			}
		}
	}
	Fail("no port " + port)
	return ""
}
