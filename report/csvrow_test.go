package report

import (
	"bytes"
	"encoding/csv"
	"math"
	"strconv"
	"testing"
)

// The run files written by row must be what encoding/csv wrote before, byte for byte: field quoting,
// number formats and line ends.
func TestRowMatchesEncodingCSV(t *testing.T) {
	texts := []string{"", "s0", "h12", "a,b", `say "hi"`, " lead", "\tTab", "\u00a0nbsp", "line\nbreak", `\.`, "cr\r", "ü", "x y"}
	nums := []float64{0, 1e-05, 0.22006399999999998, -3.5, 1e21, math.SmallestNonzeroFloat64, 123456789}
	var got, want bytes.Buffer
	cw := csv.NewWriter(&want)
	r := row{sep: ','}
	for i, s := range texts {
		v := nums[i%len(nums)]
		r.str(s)
		r.float(v)
		r.int(int64(-i))
		r.uint(uint64(i))
		r.bool(i%2 == 0)
		if err := r.end(&got); err != nil {
			t.Fatal(err)
		}
		cw.Write([]string{s, strconv.FormatFloat(v, 'g', -1, 64), strconv.Itoa(-i), strconv.Itoa(i), strconv.FormatBool(i%2 == 0)})
	}
	cw.Flush()
	if got.String() != want.String() {
		t.Fatalf("row wrote\n%q\nencoding/csv\n%q", got.String(), want.String())
	}
}

func FuzzRowQuoting(f *testing.F) {
	for _, s := range []string{"s0", "a,b", " x", "\"", "\u3000y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got, want bytes.Buffer
		r := row{sep: ','}
		r.str(s)
		r.str(s)
		r.end(&got)
		cw := csv.NewWriter(&want)
		cw.Write([]string{s, s})
		cw.Flush()
		if got.String() != want.String() {
			t.Fatalf("%q: row %q, encoding/csv %q", s, got.String(), want.String())
		}
	})
}
