package report

import (
	"fmt"
	"math"
)

// Bucket is the flows whose size is in [Min, Max) (Max 0: no upper bound), summarized as NetBench does
// (expander thesis §4.2): FCT mean and percentiles, slowdown, and mean per-flow throughput size*8/FCT.
type Bucket struct {
	Name        string
	Min, Max    int64
	Flows       FlowCounts
	FCT         Stats
	Slowdown    Stats
	GoodputBps  float64 // mean over completed flows of size*8/FCT
	Retransmits int64
}

// NetBenchBuckets are NetBench's analysis buckets: all flows, short (< 100 KB), long (>= 100 KB), and
// >= 1 MB and >= 10 MB among the long ones.
var NetBenchBuckets = []Bucket{
	{Name: "all"},
	{Name: "<100KB", Max: 100_000},
	{Name: ">=100KB", Min: 100_000},
	{Name: ">=1MB", Min: 1_000_000},
	{Name: ">=10MB", Min: 10_000_000},
}

// SizeBuckets summarizes rows into each of the given buckets (NetBenchBuckets if nil). A flow counts in
// every bucket whose range holds its size, so buckets may overlap, as NetBench's do.
func SizeBuckets(rows []FlowRow, buckets []Bucket) []Bucket {
	if buckets == nil {
		buckets = NetBenchBuckets
	}
	out := make([]Bucket, len(buckets))
	for i, b := range buckets {
		var fct, sd, gp []float64
		b.Flows, b.Retransmits = FlowCounts{}, 0
		for _, r := range rows {
			if r.Size < b.Min || (b.Max > 0 && r.Size >= b.Max) {
				continue
			}
			b.Flows.Total++
			b.Retransmits += r.Retransmits
			if !r.Completed {
				continue
			}
			b.Flows.Completed++
			fct = append(fct, r.FCTS)
			if r.Slowdown > 0 {
				sd = append(sd, r.Slowdown)
			}
			if r.FCTS > 0 {
				gp = append(gp, float64(r.Size)*8/r.FCTS)
			}
		}
		b.FCT, b.Slowdown, b.GoodputBps = NewStats(fct), NewStats(sd), NewStats(gp).Avg
		out[i] = b
	}
	return out
}

// BucketName writes a size range the way the tables show it.
func BucketName(min, max int64) string {
	switch {
	case max == 0 && min == 0:
		return "all"
	case max == 0:
		return ">=" + shortBytes(min)
	case min == 0:
		return "<" + shortBytes(max)
	}
	return shortBytes(min) + "-" + shortBytes(max)
}

func shortBytes(b int64) string {
	for _, u := range []struct {
		n    float64
		name string
	}{{1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}} {
		if float64(b) >= u.n {
			v := float64(b) / u.n
			if v == math.Trunc(v) {
				return fmt.Sprintf("%.0f%s", v, u.name)
			}
			return fmt.Sprintf("%.3g%s", v, u.name)
		}
	}
	return fmt.Sprintf("%dB", b)
}
