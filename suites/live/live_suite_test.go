// Package live_test drives live labs as a user would: `lab up`, `lab exec` with ping and Debian's
// iperf3, `lab inspect --json`, `lab link`, `lab down`, through the lab binary built from this tree.
// Needs root, ping and iperf3 (scripts/provision.sh installs them).
package live_test

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/fabriclab/fabriclab/suites/internal/labbin"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestLive(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Live lab suite", Label("live"))
}

var labBin string

var runTag = fmt.Sprintf("%04x", os.Getpid()&0xffff)

func labName(prefix string) string { return "lv" + prefix + "-" + runTag }

var _ = BeforeSuite(func() {
	if os.Geteuid() != 0 {
		AbortSuite("the live suite needs root: it creates network namespaces. Run it as root: sudo bash scripts/test.sh live")
	}
	for _, tool := range []string{"ip", "ping", "iperf3"} {
		if _, err := exec.LookPath(tool); err != nil {
			AbortSuite(tool + " is missing: run sudo bash scripts/provision.sh")
		}
	}
	var err error
	labBin, err = labbin.Path(GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
})
