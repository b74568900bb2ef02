package portfc_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The PortFC paper's claims (PortFC paper §V) on the virtual backend at the paper's parameters. Fast specs
// are labelled smoke too. Run them all, and print the claims table, with
//
//	ginkgo --label-filter=portfc ./suites/portfc
//
// The table is also written to $PORTFC_CLAIMS (default: portfc-claims.txt in the system temp dir).
func TestPortFC(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "PortFC claims suite (virtual backend)")
}

var _ = AfterSuite(func() {
	if len(claims.rows) == 0 {
		return
	}
	table := claims.String()
	fmt.Fprint(GinkgoWriter, table)
	AddReportEntry("PortFC claims", table)
	out := os.Getenv("PORTFC_CLAIMS")
	if out == "" {
		out = filepath.Join(os.TempDir(), "portfc-claims.txt")
	}
	Expect(os.WriteFile(out, []byte(table), 0o644)).To(Succeed())
	fmt.Printf("\n%s\n(claims table written to %s)\n", table, out)
})
