package report

import (
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// row builds one line of a run file in place, for the files with a row per record (links.csv of a
// fat-tree k=4 run has 20k rows): numbers are appended straight into the line, where encoding/csv needs
// a string per field. Through encoding/csv and fmt the run files were 8% of a k=4 run's CPU. Fields are
// quoted exactly as encoding/csv quotes them, so the files are unchanged.
type row struct {
	b   []byte
	sep byte // ',' for CSV, ' ' for HPCC's text files
	n   int  // fields so far on this line
}

func (r *row) next() {
	if r.n > 0 {
		r.b = append(r.b, r.sep)
	}
	r.n++
}

func (r *row) float(v float64) { r.next(); r.b = strconv.AppendFloat(r.b, v, 'g', -1, 64) }
func (r *row) int(v int64)     { r.next(); r.b = strconv.AppendInt(r.b, v, 10) }
func (r *row) uint(v uint64)   { r.next(); r.b = strconv.AppendUint(r.b, v, 10) }
func (r *row) bool(v bool)     { r.next(); r.b = strconv.AppendBool(r.b, v) }

// str appends a text field, quoted where encoding/csv would quote it (a CSV row only: the text files
// hold numbers).
func (r *row) str(s string) {
	r.next()
	if !needsQuotes(s) {
		r.b = append(r.b, s...)
		return
	}
	r.b = append(r.b, '"')
	r.b = append(r.b, strings.ReplaceAll(s, `"`, `""`)...)
	r.b = append(r.b, '"')
}

// needsQuotes is encoding/csv's rule (Writer.fieldNeedsQuotes) for the ',' delimiter.
func needsQuotes(s string) bool {
	if s == "" {
		return false
	}
	if s == `\.` || strings.ContainsAny(s, ",\"\r\n") {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r)
}

// end finishes the line and writes it.
func (r *row) end(w io.Writer) error {
	r.b = append(r.b, '\n')
	_, err := w.Write(r.b)
	r.b, r.n = r.b[:0], 0
	return err
}
