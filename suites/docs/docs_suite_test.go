// Package docs_test runs the commands of the documentation, so a page whose command breaks fails the
// suite. Every fenced sh/bash block of README.md and docs/*.md runs, in page order, in a scratch copy
// of the tree made for that page (each page stands alone), with the lab names the page gives
// (`--name ft`) rewritten to names unique to this run, `sudo` run directly in a root shell, and a
// time bound per block; a block the page shows output for (a fenced block after it marked
// `<!-- docs-test: output -->`) must print it. A block preceded by `<!-- docs-test: skip REASON -->` is
// illustrative and never runs (a skip without a reason fails); `<!-- docs-test: slow -->` runs only
// under the docs-slow label (live labs, clusters, long reproductions).
//
//	bash scripts/test.sh smoke        # the fast blocks (CI)
//	bash scripts/test.sh docs-slow    # every block that runs, slow ones too, page by page
//
// Needs root: the pages' commands make namespaces.
package docs_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/fabriclab/fabriclab/suites/internal/labbin"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestDocs(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Docs suite (the documentation's commands)", Label("docs"))
}

// runTag makes this run's lab names unique: two runs of the suite, or a reader's lab of the page's
// name, never collide.
var runTag = fmt.Sprintf("%04x", os.Getpid()&0xffff)

// labBin is the lab command built from this tree, used to take down what a page left up.
var labBin string

var _ = BeforeSuite(func() {
	// -trimpath when built here, as the pages' own builds run (blockEnv): the build cache then serves
	// every scratch copy of the tree, which without it compiles every package again (the directory is
	// in the key). The test command's shared binary (labbin.Env) serves as well: it only takes down labs.
	var err error
	labBin, err = labbin.Path(GinkgoT().TempDir(), "-trimpath")
	Expect(err).NotTo(HaveOccurred())
})
