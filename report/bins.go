package report

import (
	"fmt"
	"io"
	"sort"
)

// Bin is one row of HPCC's slowdown-per-size table.
type Bin struct {
	Pct     float64 // lower edge of the bin as a fraction of flows (0, 0.05, 0.10, ...), HPCC's first column
	MaxSize int64   // largest flow size in the bin (bytes): the x value papers plot
	Count   int
	Avg     float64
	P50     float64
	P95     float64
	P99     float64
}

// BinSlowdown reproduces HPCC's analysis/fct_analysis.py table: completed flows with a slowdown, sorted by
// size (ties by ID), cut into nbins equal-count bins (bin i holds sorted[i*N/nbins : (i+1)*N/nbins],
// integer division, as the script does; nbins <= 0 means 20, i.e. 5-percentile bins). Each bin reports its
// largest size and the mean and nearest-rank median/p95/p99 slowdown. Empty bins (fewer flows than bins)
// are left out. Unlike the script, the last flow is not dropped.
func BinSlowdown(rows []FlowRow, nbins int) []Bin {
	if nbins <= 0 {
		nbins = 20
	}
	var fs []FlowRow
	for _, r := range rows {
		if r.Completed && r.Slowdown > 0 {
			fs = append(fs, r)
		}
	}
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Size != fs[j].Size {
			return fs[i].Size < fs[j].Size
		}
		return fs[i].ID < fs[j].ID
	})
	n := len(fs)
	var bins []Bin
	for i := 0; i < nbins; i++ {
		lo, hi := i*n/nbins, (i+1)*n/nbins
		if lo == hi {
			continue
		}
		sd := make([]float64, 0, hi-lo)
		for _, r := range fs[lo:hi] {
			sd = append(sd, r.Slowdown)
		}
		st := NewStats(sd)
		bins = append(bins, Bin{
			Pct: float64(i) / float64(nbins), MaxSize: fs[hi-1].Size, Count: hi - lo,
			Avg: st.Avg, P50: st.P50, P95: st.P95, P99: st.P99,
		})
	}
	return bins
}

// WriteBins writes the table the way fct_analysis.py prints one CC's columns ("%.3f %d\t%.3f %.3f %.3f":
// bin edge, max size, median, p95, p99 slowdown), followed by the count, so HPCC plotting scripts can read
// the first five columns.
func WriteBins(w io.Writer, bins []Bin) error {
	for _, b := range bins {
		if _, err := fmt.Fprintf(w, "%.3f %d\t%.3f %.3f %.3f\t%d\n", b.Pct, b.MaxSize, b.P50, b.P95, b.P99, b.Count); err != nil {
			return err
		}
	}
	return nil
}
