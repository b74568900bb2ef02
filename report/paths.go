package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/fabriclab/fabriclab/records"
)

// PathSpread is how flows with several candidate paths (multipath routings, adaptive path selection)
// used them: the bytes each candidate index carried over all flows, and per flow how many paths carried
// any bytes and the largest path's share. It is what shows a KSP-8 run really used 8 paths.
type PathSpread struct {
	Flows       int     `json:"flows"`          // flows with candidates
	Candidates  float64 `json:"candidates_avg"` // candidate paths per flow
	Used        float64 `json:"used_avg"`       // paths that carried bytes, per flow
	MaxShare    float64 `json:"max_share_avg"`  // the busiest path's share of a flow's bytes
	BytesByPath []int64 `json:"bytes_by_path"`  // payload bytes by candidate index, summed over flows
}

func pathSpread(flows []records.Flow) *PathSpread {
	// Floating-point sums depend on their order, and the log's flow order need not repeat from run to run
	// (max_share_avg moved in its last digit between two runs of one seed): add in flow-ID order.
	byID := make([]*records.Flow, len(flows))
	for i := range flows {
		byID[i] = &flows[i]
	}
	sort.SliceStable(byID, func(i, j int) bool { return byID[i].ID < byID[j].ID })
	var ps PathSpread
	for _, f := range byID {
		if len(f.PathBytes) == 0 {
			continue
		}
		ps.Flows++
		ps.Candidates += float64(len(f.PathBytes))
		var tot, top int64
		used := 0
		for i, b := range f.PathBytes {
			if i >= len(ps.BytesByPath) {
				ps.BytesByPath = append(ps.BytesByPath, make([]int64, i+1-len(ps.BytesByPath))...)
			}
			ps.BytesByPath[i] += b
			tot += b
			top = max(top, b)
			if b > 0 {
				used++
			}
		}
		ps.Used += float64(used)
		if tot > 0 {
			ps.MaxShare += float64(top) / float64(tot)
		}
	}
	if ps.Flows == 0 {
		return nil
	}
	n := float64(ps.Flows)
	ps.Candidates /= n
	ps.Used /= n
	ps.MaxShare /= n
	return &ps
}

func (s *Summary) pathsRow() string {
	if s.Paths == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f of %.2f (top %.0f%%)", s.Paths.Used, s.Paths.Candidates, 100*s.Paths.MaxShare)
}

// PathsFile is paths.csv: flow,path,bytes for every candidate path of every flow that had several
// (written only when some flow had).
const PathsFile = "paths.csv"

// WritePathsCSV writes paths.csv, flows in ID order.
func WritePathsCSV(w io.Writer, log *records.Log) error {
	fs := append([]records.Flow(nil), log.Flows...)
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].ID < fs[j].ID })
	cw := csv.NewWriter(w)
	cw.Write([]string{"flow", "path", "bytes"})
	for _, f := range fs {
		for i, b := range f.PathBytes {
			cw.Write([]string{strconv.FormatUint(uint64(f.ID), 10), strconv.Itoa(i), strconv.FormatInt(b, 10)})
		}
	}
	cw.Flush()
	return cw.Error()
}
