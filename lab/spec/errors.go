package spec

import (
	"fmt"
	"sort"
	"strings"
)

// FieldError is one problem with a spec, naming the field by its YAML path ("switch.xoff",
// "workload[1].senders"). Line is 0 for specs built in Go; File is set by Load.
type FieldError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		fmt.Fprintf(&b, "%s: ", e.File)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in a spec. Parse, Load and Validate return it (as error) when non-empty.
type Errors []*FieldError

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As reach each *FieldError.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Fields lists the field paths with problems, in order.
func (es Errors) Fields() []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Field
	}
	return out
}

// Has reports whether some problem names field exactly.
func (es Errors) Has(field string) bool {
	for _, e := range es {
		if e.Field == field {
			return true
		}
	}
	return false
}

// merge appends the validation errors whose field (or an enclosing one) has no decoding error
// already: a value that failed to decode is zero, and validating that zero would report it twice.
func (es Errors) merge(more Errors) Errors {
	reported := map[string]bool{}
	for _, e := range es {
		reported[e.Field] = true
	}
	for _, e := range more {
		dup := false
		for p := e.Field; p != ""; p = parent(p) {
			if reported[p] {
				dup = true
				break
			}
		}
		if !dup {
			es = append(es, e)
		}
	}
	return es
}

// sort orders errors by line, so a long report reads top to bottom like the file.
func (es Errors) sort() {
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
}

// parent strips the last path element: "a.b[2].c" -> "a.b[2]" -> "a.b" -> "a" -> "".
func parent(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// lineOf finds the line of the closest enclosing field that came from YAML.
func (s *Spec) lineOf(field string) int {
	for p := field; p != ""; p = parent(p) {
		if l, ok := s.lines[p]; ok {
			return l
		}
	}
	return 0
}
