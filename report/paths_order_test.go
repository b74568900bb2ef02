package report

import (
	"testing"

	"github.com/fabriclab/fabriclab/records"
)

// The spread's averages are sums of floats: the same flows in another order must give the same bits.
func TestPathSpreadIndependentOfFlowOrder(t *testing.T) {
	var fs []records.Flow
	for i := 0; i < 200; i++ {
		fs = append(fs, records.Flow{ID: uint32(i), PathBytes: []int64{int64(1 + i*7%13), int64(3 + i*11%17), int64(i % 5)}})
	}
	a := pathSpread(fs)
	rev := make([]records.Flow, len(fs))
	for i := range fs {
		rev[len(fs)-1-i] = fs[i]
	}
	b := pathSpread(rev)
	if a.MaxShare != b.MaxShare || a.Used != b.Used || a.Candidates != b.Candidates {
		t.Fatalf("order changed the spread: %+v vs %+v", a, b)
	}
}
