package spec

import (
	"fmt"
	"reflect"
	"regexp"

	"go.yaml.in/yaml/v3"
)

// A field the file gives as zero (0, 0s, 0B, "") or as an empty list is not the same as a field left
// out, but the Go types cannot tell them apart once decoded, and ApplyDefaults fills every zero field:
// `dilation: 0` used to run at the default D = 1, `link.delay: 0s` at 1 us, `lossless_priorities: 0`
// with 1. So the decoder notes every explicit zero (with where it sits, so it can be read again after
// ApplyDefaults) and finish refuses, naming the field and line:
//   - before defaults, the zeros and empty lists that are never valid (zeroRefused, emptyRefused);
//   - after defaults, every other explicit zero that ApplyDefaults replaced: a zero the spec accepted
//     would otherwise not act. A zero that stays zero is a real zero (e.g. switch.headroom: 0) and runs.

type explicitZero struct {
	path, text string
	line       int
	v          reflect.Value // the decoded field itself (addressable), read again after ApplyDefaults
	empty      bool          // an empty list
}

func (d *decoder) noteZero(n *yaml.Node, v reflect.Value, path string) {
	if v.CanAddr() && v.IsZero() {
		d.zeros = append(d.zeros, explicitZero{path: path, text: n.Value, line: n.Line, v: v})
	}
}

var indexRE = regexp.MustCompile(`\[\d+\]`)

// zeroRefused: explicit zeros refused whatever the defaults do (dilation: an absent one may mean "the
// backend decides", but 0 is never a time dilation; priorities: 0 stays 0 outside pfcstar and would
// quietly mean one).
var zeroRefused = map[string]string{
	"dilation":          "0 is not a time dilation: want 1 to 1e6 (omit the field for the backend's default)",
	"switch.priorities": "0 is not in 1..8 (omit the field for the default: 1, pfcstar 2)",
}

// emptyRefused: explicit empty lists refused (an absent list means something else: all hosts, no
// workload).
var emptyRefused = map[string]string{
	"workload":         "an empty list: no workload runs nothing (leave workload: out of a spec meant only for lab up)",
	"workload[].hosts": "an empty list would mean every host: name the hosts taking part, or omit the field for all",
	"workload[].list":  "an empty list of flows: give at least one flow",
}

// checkExplicitZeros returns the refusals: before ApplyDefaults (after false) the never-valid ones,
// after it (after true) the zeros ApplyDefaults replaced.
func (s *Spec) checkExplicitZeros(after bool) Errors {
	var errs Errors
	for _, z := range s.zeros {
		key := indexRE.ReplaceAllString(z.path, "[]")
		var msg string
		switch {
		case !after && z.empty:
			msg = emptyRefused[key]
		case !after:
			if m, ok := zeroRefused[key]; ok {
				msg = fmt.Sprintf("%q: %s", z.text, m)
			}
		case z.empty:
		case !z.v.IsZero():
			if _, refused := zeroRefused[key]; !refused {
				msg = fmt.Sprintf("%q is not a valid value here (it would silently become the default, %v): give a valid one, or omit the field for the default",
					z.text, z.v.Interface())
			}
		}
		if msg != "" {
			errs = append(errs, &FieldError{Field: z.path, Line: z.line, Msg: msg})
		}
	}
	return errs
}
