// Package kernel_test checks kernel-stack hosts: real Linux TCP between host namespaces through the Go
// switches of the agent `lab run` uses (one process, or two in lockstep), ECN marking of kernel frames,
// and the substrate benchmark behind `lab bench`. Needs root.
//
// Run: sudo ginkgo --no-color --label-filter=kernel ./suites/kernel   (the fast specs are also smoke)
package kernel_test

import (
	"fmt"
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	_ "github.com/fabriclab/fabriclab/harness/netns/agent" // the backend re-executes the suite's binary as its agents
)

func TestKernel(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Kernel hosts suite", Label("kernel"))
}

var runTag = fmt.Sprintf("%04x", os.Getpid()&0xffff)

func labName(prefix string) string { return "kh" + prefix + "-" + runTag }

var _ = BeforeSuite(func() {
	if os.Geteuid() != 0 {
		AbortSuite("the kernel suite needs root: it creates network namespaces, veth pairs and AF_PACKET sockets. " +
			"Run it as root: sudo ginkgo --label-filter=kernel ./suites/kernel")
	}
})
