package report

import (
	"fmt"
	"io"
)

// Bin is one row of HPCC's slowdown-per-size table (HPCCBins).
type Bin struct {
	Pct     float64 // lower edge of the bin as a fraction of flows (0, 0.05, 0.10, ...), HPCC's first column
	MaxSize int64   // largest flow size in the bin (bytes): the x value papers plot
	Count   int
	Avg     float64
	P50     float64
	P95     float64
	P99     float64
}

// WriteBins writes the table the way fct_analysis.py prints one CC's columns ("%.3f %d\t%.3f %.3f %.3f":
// bin edge, max size, median, p95, p99 slowdown), followed by the count, so HPCC plotting scripts can read
// the first five columns. A run with too few flows for the script gets the bins that are not empty.
func WriteBins(w io.Writer, bins []Bin) error {
	for _, b := range bins {
		if _, err := fmt.Fprintf(w, "%.3f %d\t%.3f %.3f %.3f\t%d\n", b.Pct, b.MaxSize, b.P50, b.P95, b.P99, b.Count); err != nil {
			return err
		}
	}
	return nil
}
