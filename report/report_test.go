package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/records"
)

const us = clock.Microsecond

func TestPercentileNearestRank(t *testing.T) {
	v := make([]float64, 100)
	for i := range v {
		v[i] = float64(i + 1)
	}
	for _, c := range []struct{ p, want float64 }{
		{0.5, 50}, {0.95, 95}, {0.99, 99}, {0.999, 100}, {0, 1}, {1, 100}, {0.01, 1}, {0.011, 2},
	} {
		if got := Percentile(v, c.p); got != c.want {
			t.Errorf("p%g of 1..100 = %g, want %g", c.p*100, got, c.want)
		}
	}
	if Percentile(nil, 0.5) != 0 {
		t.Error("empty percentile not 0")
	}
	s := NewStats([]float64{3, 1, 2})
	if s.Avg != 2 || s.P50 != 2 || s.P99 != 3 || s.Max != 3 || s.Count != 3 {
		t.Errorf("stats %+v", s)
	}
	// 10 values: p95 = rank ceil(9.5) = 10, p50 = rank 5.
	s = NewStats([]float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1})
	if s.P50 != 5 || s.P95 != 10 {
		t.Errorf("stats of 1..10 %+v", s)
	}
}

func TestSlowdownFloor(t *testing.T) {
	if Slowdown(2, 1) != 2 || Slowdown(0.5, 1) != 1 || Slowdown(1, 0) != 0 {
		t.Error("slowdown")
	}
}

// sampleLog: D = 1000. Engine times are dilated: 1000 engine us = 1 paper us.
func sampleLog() *records.Log {
	return &records.Log{
		Flows: []records.Flow{
			// 1 MB, paper start 1us, FCT 100us, ideal 50us -> slowdown 2.
			{ID: 2, Src: 0, Dst: 3, SPort: 10000, DPort: 4791, Size: 1_000_000, Start: 1000 * us, Finish: 101000 * us,
				Ideal: 50000 * us, Completed: true, Retransmits: 3, Class: "flows"},
			// Faster than its ideal (rounding in the engine): floored at 1.
			{ID: 1, Src: 1, Dst: 2, SPort: 10001, DPort: 4791, Size: 1000, Start: 0, Finish: 2000 * us,
				Ideal: 3000 * us, Completed: true, Class: "incast"},
			// Not completed.
			{ID: 3, Src: 2, Dst: 0, Size: 5000, Start: 5000 * us, Ideal: 1000 * us, Class: "incast", Delivered: 2000},
			// No ideal: no slowdown.
			{ID: 4, Src: 3, Dst: 1, SPort: 7, DPort: 8, Size: 4000, Start: 2000 * us, Finish: 6000 * us, Completed: true},
		},
		Pauses: []records.Pause{
			{At: 7000 * us, Device: 4, Kind: records.Switch, Port: 1, Queue: 3, On: true, Sent: true},
			{At: 7500 * us, Device: 1, Kind: records.Host, Port: 0, Queue: 3, On: true, Sent: false},
			{At: 9000 * us, Device: 4, Kind: records.Switch, Port: 1, Queue: 3, On: false, Sent: true},
			{At: 9500 * us, Device: 1, Kind: records.Host, Port: 0, Queue: 3, On: false, Sent: false},
		},
		Drops: []records.Drop{
			{At: 3000 * us, Device: 4, Port: 2, Flow: 2, Lossless: true, Reason: "headroom"},
			{At: 4000 * us, Device: 4, Port: 2, Flow: 2, Reason: "buffer"},
			{At: 4500 * us, Device: 5, Port: 0, Flow: 1, Reason: "buffer"},
		},
		Counters: []records.Counters{
			{Device: 4, ECNMarked: 5, CNPsSent: 2, Retransmits: 1},
			{Device: 5, ECNMarked: 1},
		},
		Violations: []string{"lossless drop at s0 port 2 (headroom)"},
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func TestSummarizeDilation(t *testing.T) {
	meta := Meta{Dilation: 1000, Duration: 200000 * us,
		Deadlock: DeadlockVerdict{Detected: true, Cycle: []string{"s0:1", "s1:0"}, At: 150000 * us},
		Fidelity: &Fidelity{Faithful: false, Reason: "agent lag 40us > 10% of a frame"}}
	s := Summarize(sampleLog(), meta)
	if s.Flows != (FlowCounts{Total: 4, Completed: 3}) {
		t.Errorf("flows %+v", s.Flows)
	}
	// FCTs in paper seconds: 100us, 2us, 4us.
	if s.FCT.Count != 3 || !near(s.FCT.P50, 4e-6) || !near(s.FCT.P99, 100e-6) || !near(s.FCT.Avg, 106e-6/3) {
		t.Errorf("fct %+v", s.FCT)
	}
	// Slowdowns: 2 and 1 (floored); flow 4 has no ideal.
	if s.Slowdown.Count != 2 || s.Slowdown.Avg != 1.5 || s.Slowdown.P50 != 1 || s.Slowdown.P99 != 2 {
		t.Errorf("slowdown %+v", s.Slowdown)
	}
	// Aggregate goodput: (1e6 + 1000 + 4000) bytes * 8 over [0, 101us].
	if want := 1_005_000 * 8 / 101e-6; !near(s.ThroughputBps, want) {
		t.Errorf("throughput %g, want %g", s.ThroughputBps, want)
	}
	if want := (1e6*8/100e-6 + 1000*8/2e-6 + 4000*8/4e-6) / 3; !near(s.AvgFlowGoodputBps, want) {
		t.Errorf("avg goodput %g, want %g", s.AvgFlowGoodputBps, want)
	}
	if s.Drops.Lossless != 1 || s.Drops.Lossy != 2 || s.Drops.ByReason["buffer"] != 2 {
		t.Errorf("drops %+v", s.Drops)
	}
	if s.Pauses != (Pauses{Sent: 1, Received: 1, ResumesSent: 1, ResumesReceived: 1}) {
		t.Errorf("pauses %+v", s.Pauses)
	}
	if s.Retransmissions != 3 || s.ECNMarks != 6 || s.CNPs != 2 {
		t.Errorf("retx %d ecn %d cnp %d", s.Retransmissions, s.ECNMarks, s.CNPs)
	}
	if !s.Deadlock.Detected || !near(s.Deadlock.AtS, 150e-6) || len(s.Deadlock.Cycle) != 2 {
		t.Errorf("deadlock %+v", s.Deadlock)
	}
	if s.Fidelity.Faithful || !strings.Contains(s.Fidelity.Reason, "lag") {
		t.Errorf("fidelity %+v", s.Fidelity)
	}
	if !near(s.DurationS, 200e-6) || s.Dilation != 1000 {
		t.Errorf("duration %g dilation %g", s.DurationS, s.Dilation)
	}
	inc := s.Classes["incast"]
	if inc.Flows != (FlowCounts{Total: 2, Completed: 1}) || !near(inc.FCT.P50, 2e-6) {
		t.Errorf("incast class %+v", inc)
	}
	if _, ok := s.Classes["default"]; !ok {
		t.Errorf("classes %v", s.Classes)
	}
	if len(s.Violations) != 1 {
		t.Errorf("violations %v", s.Violations)
	}
	// No monitor: faithful, said so; no deadlock: cycle is [] not null.
	s = Summarize(&records.Log{}, Meta{})
	if !s.Fidelity.Faithful || s.Fidelity.Reason != "not monitored" || s.Dilation != 1 {
		t.Errorf("defaults %+v", s)
	}
	b, _ := json.Marshal(s)
	if !strings.Contains(string(b), `"cycle":[]`) {
		t.Errorf("empty cycle: %s", b)
	}
}

func TestRetransmissionsNotDoubleCounted(t *testing.T) {
	log := &records.Log{
		Flows:    []records.Flow{{ID: 1, Retransmits: 2}},
		Counters: []records.Counters{{Retransmits: 5}},
	}
	if r := Summarize(log, Meta{}).Retransmissions; r != 5 {
		t.Errorf("retransmissions %d, want 5 (device count is larger)", r)
	}
}

func TestFCTFormat(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFCT(&buf, sampleLog(), Meta{Dilation: 1000}); err != nil {
		t.Fatal(err)
	}
	// Completion order: flow 1 (finishes at paper 2us), flow 4 (6us), flow 2 (101us). h0 = 198.18.0.1.
	// dport is the HPCC class: 200 incast, 100 anything else.
	want := "c6120002 c6120003 10001 200 1000 0 2000 3000\n" +
		"c6120004 c6120002 7 100 4000 2000 4000 0\n" +
		"c6120001 c6120004 10000 100 1000000 1000 100000 50000\n"
	if buf.String() != want {
		t.Errorf("fct.txt:\n%s\nwant:\n%s", buf.String(), want)
	}
	// The address helper matches the lab convention, including the carry into the third octet.
	if HostIP(0).String() != "198.18.0.1" || HostIP(255).String() != "198.18.1.0" {
		t.Errorf("HostIP %v %v", HostIP(0), HostIP(255))
	}
	// Sub-nanosecond engine times round to the nearest paper ns.
	buf.Reset()
	log := &records.Log{Flows: []records.Flow{{Src: 0, Dst: 1, Size: 1, Start: 1499, Finish: 1499 + 84480, Ideal: 84500, Completed: true}}}
	WriteFCT(&buf, log, Meta{})
	if buf.String() != "c6120001 c6120002 0 100 1 1 84 85\n" {
		t.Errorf("rounded line %q", buf.String())
	}
}

// twoNodes: h0 port 0 <-> s0 port 0.
func twoNodes() *topo.Graph {
	b := topo.NewBuilder("test", nil, 100e9, us)
	h, s := b.AddHost(), b.AddSwitch()
	b.Connect(h, s)
	return b.G
}

func TestPFCFormat(t *testing.T) {
	var buf bytes.Buffer
	if err := WritePFC(&buf, sampleLog(), Meta{Dilation: 1000}); err != nil {
		t.Fatal(err)
	}
	// Only received records (HPCC traces at the receiver), if_index = port + 1.
	want := "7500 1 0 1 1\n9500 1 0 1 0\n"
	if buf.String() != want {
		t.Errorf("pfc.txt %q, want %q", buf.String(), want)
	}
	// Only sent records logged: derived at the peer when the graph is known, nothing otherwise.
	g := twoNodes()
	sent := &records.Log{Pauses: []records.Pause{
		{At: 3 * us, Device: 1, Kind: records.Switch, Port: 0, On: true, Sent: true},
		{At: 1 * us, Device: 0, Kind: records.Host, Port: 0, On: false, Sent: true},
	}}
	buf.Reset()
	if err := WritePFC(&buf, sent, Meta{Graph: g}); err != nil {
		t.Fatal(err)
	}
	if want := "1000 1 1 1 0\n3000 0 0 1 1\n"; buf.String() != want {
		t.Errorf("derived pfc.txt %q, want %q", buf.String(), want)
	}
	buf.Reset()
	WritePFC(&buf, sent, Meta{})
	if buf.Len() != 0 {
		t.Errorf("pfc.txt without graph %q", buf.String())
	}
}

func fctLine(size, fct, standalone int64, dport int) FCTLine {
	return FCTLine{DPort: dport, Size: strconv.FormatInt(size, 10), FCTNs: fct, StandaloneNs: standalone}
}

func TestHPCCBins(t *testing.T) {
	// 101 normal flows of sizes 1..101, slowdown = size; one incast flow and one finishing past the
	// time limit (both dropped by the filter); the largest flow is dropped as the script's [:-2] does.
	var ls []FCTLine
	for i := int64(101); i >= 1; i-- {
		ls = append(ls, fctLine(i, i*1000, 1000, 100))
	}
	ls = append(ls, fctLine(50, 9000, 1000, 200))
	late := fctLine(50, 9000, 1000, 100)
	late.StartNs = 3_000_000_000 - 9000
	ls = append(ls, late)
	bins, err := HPCCBins(ls, HPCCBinOptions{})
	if err != nil || len(bins) != 20 {
		t.Fatalf("%d bins, %v", len(bins), err)
	}
	b0, b19 := bins[0], bins[19]
	// Bin 0: sizes 1..5, sorted slowdowns 1..5: p50 = a[int(5*0.5)] = a[2] = 3, p99 = a[4] = 5.
	if b0.Pct != 0 || b0.MaxSize != 5 || b0.Count != 5 || b0.P50 != 3 || b0.P99 != 5 {
		t.Errorf("bin 0 %+v", b0)
	}
	if b19.Pct != 0.95 || b19.MaxSize != 100 || b19.Count != 5 || b19.P95 != 100 {
		t.Errorf("bin 19 %+v", b19)
	}
	// Below 1 prints as 1; awk's %.6g rounds (slowdown 1.23456789 -> 1.23457); ties in size go by the
	// printed line, byte order ("1.5 7" < "12 7" < "2 7"), and the last of them is the one dropped.
	ls = []FCTLine{fctLine(7, 2000, 1000, 100), fctLine(7, 12000, 1000, 100), fctLine(7, 1500, 1000, 100),
		fctLine(3, 500, 1000, 100), fctLine(5, 1234567890, 1000000000, 100)}
	bins, err = HPCCBins(ls, HPCCBinOptions{Step: 25})
	if err != nil {
		t.Fatal(err)
	}
	got := []float64{}
	for _, b := range bins {
		got = append(got, b.P50)
	}
	if want := []float64{1, 1.23457, 1.5, 12}; !reflect.DeepEqual(got, want) {
		t.Errorf("p50 per 25%% bin %v, want %v (the flow with slowdown 2 is the dropped last line)", got, want)
	}
	// Too few flows: the script stops with IndexError; we say so and keep the bins that exist.
	if bins, err := HPCCBins(ls[:3], HPCCBinOptions{}); err == nil || len(bins) != 2 {
		t.Errorf("3 flows: %d bins, %v", len(bins), err)
	}
	var buf bytes.Buffer
	WriteBins(&buf, bins[:1])
	if buf.String() != "0.000 3\t1.000 1.000 1.000\t1\n" {
		t.Errorf("bins text %q", buf.String())
	}
}

func TestRunDirRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	g := twoNodes()
	meta := Meta{Dilation: 1000, Graph: g}
	s, err := WriteRunDir(dir, sampleLog(), meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{SummaryFile, FCTFile, PFCFile, FlowsFile, DropsFile, PauseFile, BinsFile, ViolationsFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	// summary.json carries the contract's keys (docs/architecture.md §Contracts).
	raw, _ := os.ReadFile(filepath.Join(dir, SummaryFile))
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for key, sub := range map[string][]string{
		"flows": {"total", "completed"}, "fct_s": {"avg", "p50", "p95", "p99", "p999"},
		"slowdown": {"avg", "p50", "p99"}, "throughput_bps": nil, "drops": {"lossless", "lossy"},
		"retransmissions": nil, "pauses": {"sent", "received"}, "deadlock": {"detected", "cycle", "at_s"},
		"fidelity": {"faithful", "reason"},
	} {
		v, ok := m[key]
		if !ok {
			t.Errorf("summary.json lacks %q", key)
			continue
		}
		for _, k := range sub {
			if _, ok := v.(map[string]any)[k]; !ok {
				t.Errorf("summary.json lacks %s.%s", key, k)
			}
		}
	}
	s2, rows, err := ReadRunDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, s2) {
		t.Errorf("summary round trip:\n%+v\n%+v", s, s2)
	}
	if want := Rows(sampleLog(), meta); !reflect.DeepEqual(rows, want) {
		t.Errorf("rows round trip:\n%+v\n%+v", rows, want)
	}
	csvText, _ := os.ReadFile(filepath.Join(dir, FlowsFile))
	lines := strings.Split(strings.TrimSpace(string(csvText)), "\n")
	if lines[0] != "id,src,dst,class,size,start_s,finish_s,fct_s,ideal_s,slowdown,completed,retransmits,sport,dport,delivered" {
		t.Errorf("header %q", lines[0])
	}
	if lines[3] != "3,h2,h0,incast,5000,5e-06,,,1e-06,,false,0,0,0,2000" {
		t.Errorf("incomplete flow row %q", lines[3])
	}
	if lines[4] != "4,h3,h1,,4000,2e-06,6e-06,4e-06,0,,true,0,7,8,4000" {
		t.Errorf("no-ideal flow row %q", lines[4])
	}
	drops, _ := os.ReadFile(filepath.Join(dir, DropsFile))
	if !strings.Contains(string(drops), "3e-06,4,,2,0,2,true,headroom") {
		t.Errorf("drops.csv %s", drops)
	}
	pc, _ := os.ReadFile(filepath.Join(dir, PauseFile))
	if !strings.Contains(string(pc), "7.5e-06,1,s0,host,0,3,true,false,0") {
		t.Errorf("pfc.csv %s", pc)
	}
	// A file without violations gets no violations.txt.
	dir2 := filepath.Join(t.TempDir(), "clean")
	if _, err := WriteRunDir(dir2, &records.Log{}, Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir2, ViolationsFile)); !os.IsNotExist(err) {
		t.Error("violations.txt written for a clean run")
	}
	if _, _, err := ReadRunDir(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("missing run dir read")
	}
}

func TestReadFlowsCSVErrors(t *testing.T) {
	if _, err := ReadFlowsCSV(strings.NewReader("id,src\n")); err == nil || !strings.Contains(err.Error(), "no column") {
		t.Errorf("missing column: %v", err)
	}
	text := strings.Join(flowsHeader, ",") + "\n1,x3,h0,,1,0,,,0,,false,0,0,0,0\n"
	if _, err := ReadFlowsCSV(strings.NewReader(text)); err == nil || !strings.Contains(err.Error(), "line 2: src") {
		t.Errorf("bad host: %v", err)
	}
}

// pfc.csv is in time order, ties in log order: a log in order is written as it is, a merged one
// (agents' logs one after another) sorted, and the log itself is left alone.
func TestPausesCSVOrder(t *testing.T) {
	inOrder := []records.Pause{{At: 1 * us, Device: 0}, {At: 2 * us, Device: 1}, {At: 2 * us, Device: 0}, {At: 3 * us, Device: 2}}
	merged := []records.Pause{{At: 2 * us, Device: 1}, {At: 3 * us, Device: 2}, {At: 1 * us, Device: 0}, {At: 2 * us, Device: 0}}
	var a, b bytes.Buffer
	if err := WritePausesCSV(&a, &records.Log{Pauses: inOrder}, Meta{}); err != nil {
		t.Fatal(err)
	}
	log := &records.Log{Pauses: append([]records.Pause(nil), merged...)}
	if err := WritePausesCSV(&b, log, Meta{}); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("merged log written\n%s\nin-order log\n%s", b.String(), a.String())
	}
	if !reflect.DeepEqual(log.Pauses, merged) {
		t.Error("writing pfc.csv reordered the log")
	}
}
