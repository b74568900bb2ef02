package routing_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
)

func TestRouting(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Routing suite (static analyses, LP bounds, virtual backend)")
}

// fabric parses spec y, builds its lab and the virtual fabric for it, failing the spec (with the YAML)
// on any error.
func fabric(y string) (*lab.Lab, *virtual.Fabric) {
	GinkgoHelper()
	sp, err := spec.Parse([]byte(y))
	Expect(err).NotTo(HaveOccurred(), y)
	l, err := lab.Build(sp)
	Expect(err).NotTo(HaveOccurred(), y)
	f, err := virtual.New(l)
	Expect(err).NotTo(HaveOccurred())
	return l, f
}
