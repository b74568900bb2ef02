// Package smoke_test is the first suite to run on a new machine: it proves the netns backend builds
// topologies whose every link carries frames both ways and nothing else, and that teardown (also after
// a killed or interrupted `lab up`) leaves nothing behind. Needs root.
package smoke_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/fabriclab/fabriclab/suites/internal/labbin"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestSmoke(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Smoke suite", Label("smoke"))
}

// labBin is the lab command built from this tree in BeforeSuite, for the specs that drive it as a user
// would (and kill it).
var labBin string

// runTag makes this run's lab names unique, so a leftover lab from a crashed earlier run (which `lab
// down --all` would clean) never collides with this one.
var runTag = fmt.Sprintf("%04x", os.Getpid()&0xffff)

func labName(prefix string) string { return "sm" + prefix + "-" + runTag }

var _ = BeforeSuite(func() {
	if os.Geteuid() != 0 {
		AbortSuite("the smoke suite needs root: it creates network namespaces and veth pairs. " +
			"Run it as root: sudo bash scripts/test.sh, or sudo ginkgo --label-filter=smoke ./suites/smoke")
	}
	var err error
	labBin, err = labbin.Path(GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
})
