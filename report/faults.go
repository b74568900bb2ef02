package report

import (
	"encoding/csv"
	"io"
	"strconv"

	"github.com/fabriclab/fabriclab/records"
)

// FaultsFile lists the cable faults a run applied (a spec's faults:), when and how many switch tables
// each recomputed.
const FaultsFile = "faults.csv"

// WriteFaultsCSV writes faults.csv.
func WriteFaultsCSV(w io.Writer, log *records.Log, meta Meta) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"at_s", "link", "state", "tables_changed"})
	for _, f := range log.Faults {
		cw.Write([]string{ftoa(meta.seconds(f.At)), f.Link, f.State, strconv.Itoa(f.Reroutes)})
	}
	cw.Flush()
	return cw.Error()
}
