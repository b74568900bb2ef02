package netns_test

import (
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	_ "github.com/fabriclab/fabriclab/harness/netns/agent" // this test binary re-executes itself as the agents
)

// The netns suite runs the engine specs on real frames between namespaces. Every spec needs root (it
// creates namespaces and veths). Run it with:
//
//	sudo ginkgo --label-filter=netns ./suites/netns
func TestNetns(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "netns backend suite (needs root)")
}

var _ = BeforeEach(func() {
	if os.Geteuid() != 0 {
		Skip("needs root: the netns backend creates network namespaces and veth pairs")
	}
})
