package interop_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The interop suite runs the field's own tools on fabriclab's outputs: HPCC's fct_analysis.py arithmetic
// (a Python 3 transcription driving the script's real awk | sort pipeline) on fct.txt, and tshark (Debian's
// Wireshark) with fabriclab's Lua dissector on the captures of a PortFC run, plus the RoCEv2 ICRC computed
// in Python from the standard. Needs python3, mawk, sort, tshark and mergecap (scripts/provision.sh).
//
//	bash scripts/test.sh interop
func TestInterop(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Interop suite (HPCC scripts, tshark)")
}
