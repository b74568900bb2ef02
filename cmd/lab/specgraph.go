package main

import (
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// `lab up SPEC.yaml` brings up the spec's topology. The whole lab is built (and so the whole spec
// checked) first: a bad spec is refused before any namespace exists.
func init() {
	loadSpecGraph = func(path string) (*topo.Graph, string, error) {
		s, err := spec.Load(path)
		if err != nil {
			return nil, "", err
		}
		l, err := buildLab(s)
		if err != nil {
			return nil, "", err
		}
		return l.Graph, s.Name, nil
	}
}
