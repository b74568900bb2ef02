package report

import (
	"math"
	"sort"

	"github.com/fabriclab/fabriclab/records"
)

// FlowRow is one flow in paper units: a line of flows.csv, and what BinSlowdown and later analyses work
// on (so a run directory read back with ReadRunDir analyses exactly like a fresh log).
type FlowRow struct {
	ID           uint32
	Src, Dst     int // host indices
	SPort, DPort uint16
	Class        string
	Size         int64   // bytes
	StartS       float64 // paper seconds
	FinishS      float64 // 0 if not completed
	FCTS         float64 // 0 if not completed
	IdealS       float64 // standalone FCT; 0 if the engine gave none
	Slowdown     float64 // max(FCT/Ideal, 1); 0 if not completed or no ideal
	Completed    bool
	Retransmits  int64
	Delivered    int64 // bytes acknowledged by the finish or the run's end (records.Flow.Delivered)
}

// Slowdown is HPCC's slowdown: fct/ideal floored at 1; 0 (unknown) when ideal <= 0.
func Slowdown(fct, ideal float64) float64 {
	if ideal <= 0 {
		return 0
	}
	return math.Max(fct/ideal, 1)
}

// Rows converts the log's flows to paper units, ordered by flow ID (logs merged from many devices come in
// no particular order). The log is expected to hold one record per flow.
func Rows(log *records.Log, meta Meta) []FlowRow {
	rows := make([]FlowRow, 0, len(log.Flows))
	for _, f := range log.Flows {
		r := FlowRow{
			ID: f.ID, Src: int(f.Src), Dst: int(f.Dst), SPort: f.SPort, DPort: f.DPort, Class: f.Class,
			Size: f.Size, StartS: meta.seconds(f.Start), IdealS: meta.seconds(f.Ideal),
			Completed: f.Completed, Retransmits: f.Retransmits, Delivered: f.Delivered,
		}
		if f.Completed {
			r.Delivered = f.Size
			r.FinishS = meta.seconds(f.Finish)
			r.FCTS = meta.seconds(f.FCT())
			// The ratio is taken in engine units: exact, and independent of D.
			r.Slowdown = Slowdown(float64(f.FCT()), float64(f.Ideal))
		}
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	return rows
}
