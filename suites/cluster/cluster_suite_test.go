// Package cluster_test runs labs over several machines as a user would: agent servers in Docker
// containers built from this tree (each container a machine, its eth0 the underlay), `lab run SPEC
// --cluster FILE` on this host as the coordinator. Needs root and a Docker engine (nothing is pulled:
// the image is FROM scratch). Every container and network it makes is named fabriclab-tNNNN-... (or
// $FABRICLAB_SUITE_PREFIX-tNNNN-..., so that suites run side by side on one engine by different people
// are told apart) and removed at the end; every network is a /24 of 198.18.0.0/15 (netCreate).
package cluster_test

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/suites/internal/labbin"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestCluster(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Cluster suite", Label("cluster"))
}

var (
	labBin, dir, image string
	tag                = fmt.Sprintf("%s-t%04x", cmp.Or(os.Getenv("FABRICLAB_SUITE_PREFIX"), "fabriclab"), os.Getpid()&0xffff)
	netName, smallNet  = tag + "-net", tag + "-small"
	made               []string // containers
	ips                = map[string]string{}
)

func docker(args ...string) (string, error) {
	out, err := exec.Command("docker", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func mustDocker(args ...string) string {
	out, err := docker(args...)
	Expect(err).NotTo(HaveOccurred(), "docker %s:\n%s", strings.Join(args, " "), out)
	return out
}

// What a container needs to make namespaces without --privileged (which asks for every capability,
// more than a nested Docker such as CI's can give): the capabilities the agent uses, no seccomp or
// AppArmor filter on mount/unshare/setns (the agent remounts the container's read-only /proc/sys
// writable for the namespaces' sysctls), and /run on tmpfs as on a host (namespaces are mounted under
// /run/netns). The same as deploy/compose's.
var caps = []string{"--cap-add", "NET_ADMIN", "--cap-add", "SYS_ADMIN", "--cap-add", "NET_RAW", "--cap-add", "SYS_NICE",
	"--security-opt", "apparmor=unconfined", "--security-opt", "seccomp=unconfined",
	"--tmpfs", "/run"}

// netCreate makes Docker network name with MTU mtu on a /24 of 198.19.0.0/16 (198.18.0.0/15, the
// benchmarking range, as every network of the project's: Docker's own pool is private ranges, 172.17/16
// on), the first one Docker does not refuse as overlapping another network, starting at one the pid
// picks so that suites run side by side seldom try the same. The lab's hosts count up from 198.18.0.1
// inside their namespaces; the networks take the top half of 198.19.0.0/16.
func netCreate(name string, mtu int) {
	var outs []string
	for try := 0; try < 32; try++ {
		third := 128 + (os.Getpid()*2+try)%127
		out, err := docker("network", "create", "--subnet", fmt.Sprintf("198.19.%d.0/24", third),
			"-o", fmt.Sprintf("com.docker.network.driver.mtu=%d", mtu), name)
		if err == nil {
			return
		}
		outs = append(outs, out)
	}
	Fail("Docker network " + name + ": no free /24 in 198.19.128.0/17:\n" + strings.Join(outs, "\n"))
}

// calDir holds this host's agent calibration (netns.CalibrationPath), which the machines read as
// their own: they are containers on this host's kernel and CPUs, so its calibration is theirs (the
// key it holds for says so, and a machine whose key differs measures its own). Without it every
// machine would measure again, one after another: minutes on a slow machine (a VM under emulation).
var calDir = filepath.Dir(netns.CalibrationPath())

// startAgent starts machine name on network nw; extra flags go to `lab agent serve`.
func startAgent(name, nw string, extra ...string) {
	c := tag + "-" + name
	args := append([]string{"run", "-d", "--name", c, "--network", nw}, caps...)
	Expect(os.MkdirAll(calDir, 0o755)).To(Succeed())
	args = append(args, "-v", calDir+":/run/fabriclab-calibration:ro",
		"-e", "FABRICLAB_CALIBRATION=/run/fabriclab-calibration/"+filepath.Base(netns.CalibrationPath()))
	args = append(args, "-v", filepath.Join(dir, "secret.key")+":/run/secrets/fabriclab:ro", image,
		"agent", "serve", "--listen", ":7070", "--secret", "/run/secrets/fabriclab", "--underlay", "auto", "--name", name)
	args = append(args, extra...)
	mustDocker(args...)
	made = append(made, c)
	ip := mustDocker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", c)
	ips[name] = ip
	Eventually(func() string { out, _ := docker("logs", c); return out }, 10*time.Second, 100*time.Millisecond).Should(ContainSubstring("listening"))
}

// clusterFile writes a cluster file naming machines (by their container's address) and returns its path.
func clusterFile(name, secret string, machines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "secret: %s\nmachines:\n", secret)
	for _, m := range machines {
		fmt.Fprintf(&b, "  - {name: %s, control: \"%s:7070\", underlay: %s}\n", m, ips[m], ips[m])
	}
	p := filepath.Join(dir, name+".yaml")
	Expect(os.WriteFile(p, []byte(b.String()), 0o644)).To(Succeed())
	return p
}

// nothingOn says machine m has no lab left (its agent server's `lab status` inside the container) and
// holds nothing of one (bareMachine).
func nothingOn(m string) {
	Eventually(func() string { out, _ := docker("exec", tag+"-"+m, "/lab", "status"); return out }, 10*time.Second, 200*time.Millisecond).
		Should(Equal("no labs"), "machine %s still has a lab", m)
	bareMachine(m)
}

var _ = BeforeSuite(func() {
	if os.Geteuid() != 0 {
		AbortSuite("the cluster suite needs root: run it as root (sudo bash scripts/test.sh cluster)")
	}
	if _, err := docker("info"); err != nil {
		AbortSuite("the cluster suite needs a Docker engine: " + err.Error())
	}
	dir = GinkgoT().TempDir()
	var err error
	labBin, err = labbin.Path(dir)
	Expect(err).NotTo(HaveOccurred())
	root, err := filepath.Abs("../..")
	Expect(err).NotTo(HaveOccurred())
	// --tools: this host's ping and iperf3 in the image too, for lab pingall and lab iperf on live labs.
	out, err := exec.Command("bash", filepath.Join(root, "scripts/image.sh"), "--tools", tag).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "scripts/image.sh:\n%s", out)
	image = "fabriclab/lab:" + tag
	DeferCleanup(func() { docker("rmi", "-f", image) })
	Expect(os.WriteFile(filepath.Join(dir, "secret.key"), []byte("cluster-suite-secret-0123456789abcdef\n"), 0o600)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(dir, "wrong.key"), []byte("not-the-cluster-secret-0123456789abc\n"), 0o600)).To(Succeed())
	// Jumbo frames on the machines' network (the lab's links need theirs + 50); 1500 on the other.
	netCreate(netName, 9000)
	netCreate(smallNet, 1500)
	DeferCleanup(func() {
		for _, c := range made {
			docker("rm", "-f", c)
		}
		docker("network", "rm", netName)
		docker("network", "rm", smallNet)
	})
	for _, m := range []string{"m1", "m2", "m3"} {
		startAgent(m, netName)
	}
})
