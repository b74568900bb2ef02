// Package fib is the forwarding table the router computes (lab/route) and the engines read (switchsw,
// nodes): per destination host, the set of equal-cost egress ports toward it.
//
// A device has few distinct port sets (a fat-tree edge switch: its uplinks, and one port per local
// host), so a Table keeps each distinct set once and a 2-byte index per destination. As one []uint8
// per (device, destination), a fat-tree k=12 lab held 10.6 MB of slice headers in its route tables and
// 2.5 MB more in the switch configs; the index form is 0.5 MB, shared by the tables and the devices.
package fib

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// MaxSets is the most distinct port sets one table can hold, the empty set included: the reach of a
// uint16 index. A device has at most one set per destination and rarely more than a few dozen.
const MaxSets = math.MaxUint16 + 1

// Table maps destination host d to its egress ports Sets[Idx[d]], in the order they were given. A
// destination past the end of Idx has no route. Tables are shared between the router and the devices
// built from it, so they are never changed in place: a new route is a new Table.
type Table struct {
	// Sets holds each distinct set once; a table built here has the empty set first.
	Sets []PortSet `json:"sets"`
	Idx  []uint16  `json:"idx"`
}

// Ports is the set toward host dst, empty when dst has no route.
func (t Table) Ports(dst int) []uint8 {
	if dst < 0 || dst >= len(t.Idx) {
		return nil
	}
	return t.Sets[t.Idx[dst]]
}

// Len is the number of destinations the table covers.
func (t Table) Len() int { return len(t.Idx) }

// Equal reports whether t and u route every destination to the same ports, however their sets are
// numbered.
func (t Table) Equal(u Table) bool {
	if len(t.Idx) != len(u.Idx) {
		return false
	}
	for d := range t.Idx {
		if string(t.Ports(d)) != string(u.Ports(d)) {
			return false
		}
	}
	return true
}

// Clone copies the index, so that keeping one device's table does not keep the router's tables for
// every device that share its backing array. The sets themselves are never written and stay shared.
func (t Table) Clone() Table {
	if t.Idx == nil {
		return Table{}
	}
	out := Table{Sets: make([]PortSet, len(t.Sets)), Idx: make([]uint16, len(t.Idx))}
	copy(out.Sets, t.Sets)
	copy(out.Idx, t.Idx)
	return out
}

// With is a copy of t that routes dst to ports instead (t itself is shared, so it is left alone); dst
// may lie past t's end, the destinations between having no route.
func (t Table) With(dst int, ports []uint8) (Table, error) {
	if dst < 0 {
		return Table{}, fmt.Errorf("fib: destination %d", dst)
	}
	out := Table{Sets: append([]PortSet(nil), t.Sets...), Idx: make([]uint16, max(len(t.Idx), dst+1))}
	copy(out.Idx, t.Idx)
	if len(out.Sets) == 0 {
		out.Sets = []PortSet{nil}
	}
	i := slices.IndexFunc(out.Sets, func(s PortSet) bool { return string(s) == string(ports) })
	if i < 0 {
		if len(out.Sets) == MaxSets {
			return Table{}, fmt.Errorf("fib: more than %d distinct port sets", MaxSets)
		}
		i = len(out.Sets)
		out.Sets = append(out.Sets, append(PortSet(nil), ports...))
	}
	out.Idx[dst] = uint16(i)
	return out, nil
}

// Check reports the first entry that is not a set of the device's ports (0 .. ports-1), for a table that
// arrived from outside (JSON, a hand-made config); field names it in the error.
func (t Table) Check(field string, ports int) error {
	for i, set := range t.Sets {
		for _, p := range set {
			if int(p) >= ports {
				for d, j := range t.Idx {
					if int(j) == i {
						return fmt.Errorf("%s[%d]: port %d out of range (%d ports)", field, d, p, ports)
					}
				}
				return fmt.Errorf("%s.sets[%d]: port %d out of range (%d ports)", field, i, p, ports)
			}
		}
	}
	for d, i := range t.Idx {
		if int(i) >= len(t.Sets) {
			return fmt.Errorf("%s.idx[%d]: set %d of %d", field, d, i, len(t.Sets))
		}
	}
	return nil
}

// Builder makes a Table destination by destination, storing each distinct set once.
type Builder struct {
	t     Table
	known map[string]uint16
}

// NewBuilder starts a table for n destinations, every one without a route.
func NewBuilder(n int) *Builder { return NewBuilderInto(make([]uint16, n)) }

// NewBuilderInto is NewBuilder writing the index into idx (zeroed by the caller), so that a router
// building a table for every device can take all the indices from one allocation.
func NewBuilderInto(idx []uint16) *Builder {
	return &Builder{t: Table{Sets: []PortSet{nil}, Idx: idx}, known: map[string]uint16{"": 0}}
}

// Set routes dst to ports (copied if new to the table).
func (b *Builder) Set(dst int, ports []uint8) error {
	i, ok := b.known[string(ports)]
	if !ok {
		if len(b.t.Sets) == MaxSets {
			return fmt.Errorf("fib: more than %d distinct port sets", MaxSets)
		}
		i = uint16(len(b.t.Sets))
		b.known[string(ports)] = i
		b.t.Sets = append(b.t.Sets, append(PortSet(nil), ports...))
	}
	b.t.Idx[dst] = i
	return nil
}

// Table is the table built so far.
func (b *Builder) Table() Table { return b.t }

// FromSets builds the table that routes destination d to sets[d].
func FromSets(sets [][]uint8) (Table, error) {
	b := NewBuilder(len(sets))
	for d, s := range sets {
		if err := b.Set(d, s); err != nil {
			return Table{}, err
		}
	}
	return b.Table(), nil
}

// Of is FromSets for a table written out in code (tests, benchmarks), which cannot reach MaxSets; it
// panics if it does.
func Of(sets ...[]uint8) Table {
	t, err := FromSets(sets)
	if err != nil {
		panic(err)
	}
	return t
}

// PortSet is a set of egress ports. It is a byte slice for compactness but reads and writes JSON as a
// list of numbers, not base64, so agent configs stay legible.
type PortSet []uint8

// MarshalJSON writes the ports as numbers.
func (s PortSet) MarshalJSON() ([]byte, error) {
	ints := make([]int, len(s))
	for i, p := range s {
		ints[i] = int(p)
	}
	return json.Marshal(ints)
}

// UnmarshalJSON reads a list of port numbers.
func (s *PortSet) UnmarshalJSON(b []byte) error {
	var ints []int
	if err := json.Unmarshal(b, &ints); err != nil {
		return err
	}
	var out PortSet // nil for [], as the tables here hold the empty set
	if len(ints) > 0 {
		out = make(PortSet, len(ints))
	}
	for i, p := range ints {
		if p < 0 || p > 255 {
			return fmt.Errorf("port %d out of range 0..255", p)
		}
		out[i] = uint8(p)
	}
	*s = out
	return nil
}
