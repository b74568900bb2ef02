package workloads_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The workloads suite runs every workload kind end to end on the virtual backend: spec -> lab ->
// engines -> records -> report, and checks the schedule reached the engines with its shape intact.
//
//	ginkgo --label-filter=workloads ./suites/workloads
func TestWorkloads(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Workloads suite (virtual backend)")
}
