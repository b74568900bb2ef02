package pins_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Pins: small deterministic scenarios on the virtual backend, one mechanism each, whose numbers are
// recorded in testdata/<scenario>.json. The suite fails, with a readable diff, when the current build
// does not reproduce them exactly (the virtual backend repeats a spec bit for bit). After an intended
// change of behaviour, re-record and let the diff of testdata/ go through review:
//
//	PINS_UPDATE=1 ginkgo ./suites/pins
func TestPins(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Engine pins suite (virtual backend, recorded baselines)")
}
