package fib

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestTableSharesSets(t *testing.T) {
	up := []uint8{2, 3}
	tb := Of([]uint8{0}, []uint8{1}, up, up, nil, up)
	if len(tb.Sets) != 4 || len(tb.Idx) != 6 {
		t.Fatalf("sets %v idx %v: want the empty set, {0}, {1} and {2,3} once each", tb.Sets, tb.Idx)
	}
	for d, want := range [][]uint8{{0}, {1}, up, up, nil, up} {
		if got := tb.Ports(d); string(got) != string(want) {
			t.Fatalf("Ports(%d) = %v, want %v", d, got, want)
		}
	}
	if tb.Ports(-1) != nil || tb.Ports(6) != nil {
		t.Fatal("a destination outside the table has a route")
	}
	up[0] = 9 // the table took its own copy
	if tb.Ports(2)[0] != 2 {
		t.Fatal("Of kept the caller's slice")
	}
}

func TestWithLeavesTheOriginal(t *testing.T) {
	tb := Of([]uint8{0}, []uint8{1})
	w, err := tb.With(3, []uint8{1})
	if err != nil {
		t.Fatal(err)
	}
	if tb.Len() != 2 || string(tb.Ports(1)) != "\x01" {
		t.Fatalf("With changed its receiver: %+v", tb)
	}
	if w.Len() != 4 || len(w.Ports(2)) != 0 || string(w.Ports(3)) != "\x01" || len(w.Sets) != len(tb.Sets) {
		t.Fatalf("With(3, {1}) = %+v: want h2 unrouted and h3 on the existing set {1}", w)
	}
	if w, _ = tb.With(0, []uint8{4, 5}); string(w.Ports(0)) != "\x04\x05" || len(w.Sets) != len(tb.Sets)+1 || tb.Equal(w) {
		t.Fatalf("With(0, {4,5}) = %+v", w)
	}
}

func TestEqualIgnoresNumbering(t *testing.T) {
	a := Of([]uint8{0}, []uint8{1}, nil)
	b := Of(nil, []uint8{1}, []uint8{0}) // sets interned in another order
	b, _ = b.With(0, []uint8{0})
	b, _ = b.With(2, nil)
	if !a.Equal(b) || a.Equal(Of([]uint8{0}, []uint8{1})) || a.Equal(Of([]uint8{0}, []uint8{0}, nil)) {
		t.Fatal("Equal compares the numbering, not the routes")
	}
	if c := a.Clone(); !a.Equal(c) || &c.Idx[0] == &a.Idx[0] {
		t.Fatal("Clone shares the index or differs")
	}
}

func TestCheck(t *testing.T) {
	if err := Of([]uint8{0}, []uint8{1, 2}).Check("fib", 3); err != nil {
		t.Fatal(err)
	}
	if err := Of([]uint8{0}, []uint8{1, 3}).Check("fib", 3); err == nil || !strings.Contains(err.Error(), "fib[1]: port 3") {
		t.Fatalf("port past the device: %v", err)
	}
	bad := Table{Sets: []PortSet{nil}, Idx: []uint16{0, 1}}
	if err := bad.Check("fib", 3); err == nil || !strings.Contains(err.Error(), "fib.idx[1]") {
		t.Fatalf("index past the sets: %v", err)
	}
}

func TestBuilderRefusesPastMaxSets(t *testing.T) {
	b := NewBuilder(MaxSets)
	for d := 1; d < MaxSets; d++ {
		if err := b.Set(d, []uint8{uint8(d), uint8(d >> 8)}); err != nil {
			t.Fatalf("set %d of %d: %v", d, MaxSets, err)
		}
	}
	if err := b.Set(0, []uint8{7}); err == nil {
		t.Fatal("a table took more sets than its index can name")
	}
}

func TestJSONIsNumbers(t *testing.T) {
	tb := Of([]uint8{0}, nil, []uint8{1, 2})
	b, err := json.Marshal(tb)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"sets":[[],[0],[1,2]],"idx":[1,0,2]}` {
		t.Fatalf("JSON %s", b)
	}
	var back Table
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tb, back) {
		t.Fatalf("round trip %+v -> %+v", tb, back)
	}
	if err := json.Unmarshal([]byte(`{"sets":[[256]],"idx":[0]}`), &back); err == nil {
		t.Fatal("port 256 accepted")
	}
}
