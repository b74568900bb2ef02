package virtual_test

import (
	"testing"

	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
)

// buildLab parses a spec and builds its lab for the virtual backend, whatever backend the spec names
// (the tests here run it on this backend only).
func buildLab(t *testing.T, yaml string) *lab.Lab {
	t.Helper()
	s, err := spec.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	s.Backend = "virtual"
	l, err := lab.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
