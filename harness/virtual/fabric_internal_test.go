package virtual

import (
	"testing"

	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
)

// newFabricOf builds the lab of spec yaml and its fabric, failing the test on any error.
func newFabricOf(t testing.TB, yaml string) (*lab.Lab, *Fabric) {
	t.Helper()
	s, err := spec.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(l)
	if err != nil {
		t.Fatal(err)
	}
	return l, f
}

// FabricOf is newFabricOf for the package's external tests (virtual_test).
var FabricOf = newFabricOf
