package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// seedRunDir is a run directory the repo's own writer made (sampleLog through WriteRunDir).
func seedRunDir(f *testing.F) map[string][]byte {
	dir := filepath.Join(f.TempDir(), "run")
	if _, err := WriteRunDir(dir, sampleLog(), Meta{Dilation: 1000, Graph: twoNodes()}); err != nil {
		f.Fatal(err)
	}
	files := map[string][]byte{}
	for _, n := range []string{SummaryFile, FlowsFile, PauseFile, QueuesFile} {
		b, _ := os.ReadFile(filepath.Join(dir, n)) // queues.csv is absent: the seed has none
		files[n] = b
	}
	if len(files[FlowsFile]) == 0 || len(files[SummaryFile]) == 0 {
		f.Fatalf("seed run directory %s lacks its files", dir)
	}
	return files
}

// FuzzReadFlowsCSV: rows are finite and in range, and writing and reading them again gives the same rows.
func FuzzReadFlowsCSV(f *testing.F) {
	f.Add(seedRunDir(f)[FlowsFile])
	f.Add([]byte("id,src,dst,class,size,start_s,finish_s,fct_s,ideal_s,slowdown,completed,retransmits\n1,h0,h-1,x,1,nan,0,0,0,0,true,0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := ReadFlowsCSV(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, r := range rows {
			for _, v := range []float64{r.StartS, r.FinishS, r.FCTS, r.IdealS, r.Slowdown} {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("row %d: %v accepted", r.ID, v)
				}
			}
			if r.Src < 0 || r.Dst < 0 {
				t.Fatalf("row %d: hosts %d, %d", r.ID, r.Src, r.Dst)
			}
		}
		var b bytes.Buffer
		if err := WriteFlowsCSV(&b, rows); err != nil {
			t.Fatal(err)
		}
		back, err := ReadFlowsCSV(&b)
		if err != nil {
			t.Fatalf("written rows do not read back: %v", err)
		}
		if len(rows) == 0 && len(back) == 0 {
			return
		}
		if !reflect.DeepEqual(rows, back) {
			t.Fatalf("round trip differs:\n%+v\n%+v", rows, back)
		}
	})
}

// FuzzLoadRun is `lab report` on a run directory whose files are fuzzed: summary.json, flows.csv,
// pauses.csv and queues.csv. No panic, and the tables render.
func FuzzLoadRun(f *testing.F) {
	seed := seedRunDir(f)
	f.Add(seed[SummaryFile], seed[FlowsFile], seed[PauseFile], seed[QueuesFile])
	f.Add([]byte(`{"flows":{"total":-1}}`), seed[FlowsFile], []byte("at_s,device\nnan,1\n"), []byte("at_s,device,port\n1,-5,99999999999\n"))
	f.Fuzz(func(t *testing.T, summary, flows, pauses, queues []byte) {
		dir := t.TempDir()
		for n, b := range map[string][]byte{SummaryFile: summary, FlowsFile: flows, PauseFile: pauses, QueuesFile: queues} {
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r, err := LoadRun(dir)
		if err != nil {
			return
		}
		runs := []*Run{r}
		for _, tb := range []Table{Compare(runs), BucketTable(runs), BinTable(runs), Expectations(runs)} {
			var b bytes.Buffer
			if err := tb.WriteText(&b); err != nil {
				t.Fatal(err)
			}
		}
	})
}
