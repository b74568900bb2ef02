package report

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabriclab/fabriclab/bounded"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/records"
)

// Files lab run adds to a run directory beside WriteRunDir's.
const (
	QueuesFile        = "queues.csv" // queue samples (when the run sampled queues)
	ScheduleFile      = "flow.txt"   // the flow schedule in HPCC's flow.txt format
	HTSimScheduleFile = "flow.cm"    // the same schedule as an htsim connection matrix, dependencies included
	SpecFile          = "spec.yaml"  // the resolved spec
)

// WriteQueuesCSV writes queue samples: at_s,device,name,port,queue,bytes (time order, then device:
// beforeAt; queue -1 is the whole port).
func WriteQueuesCSV(w io.Writer, log *records.Log, meta Meta) error {
	ss := append([]records.QueueSample(nil), log.Samples...)
	sort.SliceStable(ss, func(i, j int) bool { return beforeAt(ss[i].At, ss[j].At, ss[i].Device, ss[j].Device) })
	cw := csv.NewWriter(w)
	cw.Write([]string{"at_s", "device", "name", "port", "queue", "bytes"})
	for _, s := range ss {
		cw.Write([]string{ftoa(meta.seconds(s.At)), strconv.Itoa(int(s.Device)), meta.deviceName(int(s.Device)),
			strconv.Itoa(int(s.Port)), strconv.Itoa(int(s.Queue)), strconv.Itoa(int(s.Bytes))})
	}
	cw.Flush()
	return cw.Error()
}

// Sample is one queue sample read back from queues.csv.
type Sample struct {
	AtS         float64
	Device      int
	Port, Queue int
	Bytes       int64
	DeviceName  string
}

// PauseEvent is one row of pfc.csv read back.
type PauseEvent struct {
	AtS    float64
	Device int
	Port   int
	Queue  int
	Pause  bool
	Sent   bool
}

// DropEvent is one row of drops.csv read back.
type DropEvent struct {
	AtS      float64
	Device   int
	Port     int
	Lossless bool
}

// Expected is a published number a spec declares (spec `expect:`), as the report reads it back from the
// run directory's spec.yaml.
type Expected struct {
	Value  float64 `yaml:"value"`
	Unit   string  `yaml:"unit"`
	Source string  `yaml:"source"`
	Note   string  `yaml:"note"`
}

// Run is a run directory read back for reports and comparisons.
type Run struct {
	Dir     string
	Name    string // the spec's name (the directory's base name if no spec.yaml)
	Summary *Summary
	Rows    []FlowRow
	Samples []Sample     // nil if the run did not sample queues
	FCT     []FCTLine    // fct.txt, nil if absent: what HPCC's scripts read
	Links   []LinkSample // links.csv, nil if absent (virtual runs meter their links)
	FlowRx  []FlowRate   // flow_rate.csv, nil if absent
	Graph   *topo.Graph  // topology.json, nil if absent
	Ports   []PortPeak   // ports.csv, nil if absent
	Expect  map[string]Expected
	Scheme  string // "flow_control/transport" from the spec, for labels
	// Seed and Set place a run of a tree (manifest.json): cross-run expect: forms pair runs by them.
	Seed int64
	Set  []Setting
	Tree string // the run tree it was read from, when lab report keeps trees apart

	metersLoaded bool // LoadMeters has run (Links, FlowRx, Graph, Ports)
}

// LoadRun reads a run directory: summary.json and flows.csv (required), queues.csv, spec.yaml and the
// meters (LoadMeters) when present. pfc.csv and drops.csv are not read here but streamed by the figures
// that need them (EachPause, EachDrop): they are a run's largest files (a go-back-N run of the main job
// logs 48 MB of drops), and a tree's report held every run's in memory at once (547 MB).
func LoadRun(dir string) (*Run, error) { return loadRun(dir, true) }

// loadRun is LoadRun, with the link and flow meters (links.csv, flow_rate.csv: the largest files of a
// run) read only if meters is set; LoadMeters reads them later.
func loadRun(dir string, meters bool) (*Run, error) {
	s, rows, err := ReadRunDir(dir)
	if err != nil {
		return nil, err
	}
	r := &Run{Dir: dir, Name: filepath.Base(filepath.Clean(dir)), Summary: s, Rows: rows}
	fillGoodput(s, rows)
	if b, err := bounded.ReadFile(filepath.Join(dir, SpecFile), bounded.Spec); err == nil {
		var sp struct {
			Name   string              `yaml:"name"`
			Seed   int64               `yaml:"seed"`
			Expect map[string]Expected `yaml:"expect"`
			Switch struct {
				FlowControl string `yaml:"flow_control"`
			} `yaml:"switch"`
			Host struct {
				Transport string `yaml:"transport"`
			} `yaml:"host"`
		}
		if err := yaml.Unmarshal(b, &sp); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, SpecFile), err)
		}
		if sp.Name != "" {
			r.Name = sp.Name
		}
		r.Expect = sp.Expect
		r.Seed = sp.Seed
		r.Scheme = sp.Switch.FlowControl + "/" + sp.Host.Transport
	}
	if f, err := bounded.Open(filepath.Join(dir, QueuesFile)); err == nil {
		defer f.Close()
		if r.Samples, err = readSamples(bounded.Reader(f, f.Name(), bounded.RunFile)); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, QueuesFile), err)
		}
	}
	if meters {
		if err := r.LoadMeters(); err != nil {
			return nil, err
		}
	}
	if f, err := bounded.Open(filepath.Join(dir, FCTFile)); err == nil {
		defer f.Close()
		if r.FCT, err = ReadFCT(bounded.Reader(f, f.Name(), bounded.RunFile)); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, FCTFile), err)
		}
	}
	return r, nil
}

// readTable calls each for every row of the CSV table rd, by header name. Rows are read one at a time
// into one record (each must not keep p past its call; the strings it takes are its own), so a table
// of any length streams in constant memory.
func readTable(rd io.Reader, each func(p *rowParser) error) error {
	cr := csv.NewReader(rd)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return fmt.Errorf("header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	p := &rowParser{col: col}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		p.rec, p.err = rec, nil
		if err := each(p); err != nil {
			return err
		}
		if p.err != nil {
			return fmt.Errorf("line %d: %w", line, p.err)
		}
	}
}

// EachPause streams pfc.csv's rows to f in file order (the time order they were logged in); a run
// without the file has none.
func (r *Run) EachPause(f func(PauseEvent)) error {
	return r.eachRow(PauseFile, func(p *rowParser) error {
		f(PauseEvent{AtS: p.float("at_s"), Device: int(p.int("device")), Port: int(p.int("port")), Queue: int(p.int("queue")), Pause: p.bool("pause"), Sent: p.bool("sent")})
		return nil
	})
}

// EachDrop streams drops.csv's rows to f in file order (time order); a run without the file has none.
func (r *Run) EachDrop(f func(DropEvent)) error {
	return r.eachRow(DropsFile, func(p *rowParser) error {
		f(DropEvent{AtS: p.float("at_s"), Device: int(p.int("device")), Port: int(p.int("port")), Lossless: p.bool("lossless")})
		return nil
	})
}

// eachRow streams the rows of the run's file name through each, one row in memory at a time. A file
// that cannot be opened is no rows, as LoadRun treats the optional files; a malformed row is an error
// naming the file and line. Only the fields each reads are parsed: rowParser converts on demand.
func (r *Run) eachRow(name string, each func(p *rowParser) error) error {
	f, err := bounded.Open(filepath.Join(r.Dir, name))
	if err != nil {
		return nil
	}
	defer f.Close()
	if err := readTable(bufio.NewReaderSize(bounded.Reader(f, f.Name(), bounded.RunFile), 1<<16), each); err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	return nil
}

func readSamples(rd io.Reader) ([]Sample, error) {
	out := []Sample{}
	err := readTable(rd, func(p *rowParser) error {
		out = append(out, Sample{AtS: p.float("at_s"), Device: int(p.int("device")), DeviceName: p.str("name"),
			Port: int(p.int("port")), Queue: int(p.int("queue")), Bytes: p.int("bytes")})
		return nil
	})
	return out, err
}

// Metric looks up a measured number by the name an `expect:` entry uses: a MetricDefs name (old
// aliases included), or class.<class>.<name> per workload class for the names that exist per class.
func (r *Run) Metric(name string) (float64, bool) {
	return SummaryMetric(r.Summary, name)
}

// SummaryMetric is Run.Metric on a summary alone (suites that summarize in process use it).
func SummaryMetric(s *Summary, name string) (float64, bool) {
	if rest, ok := strings.CutPrefix(name, "class."); ok {
		cls, m, ok := strings.Cut(rest, ".")
		if !ok || !classMetrics[m] {
			return 0, false
		}
		c, ok := s.Classes[cls]
		if !ok {
			return 0, false
		}
		if m == "throughput_bps" { // the older name, read as written (summaries built in Go set only it)
			return c.ThroughputBps, true
		}
		return statMetric(m, c.Flows, c.FCT, c.Slowdown, c.Goodput)
	}
	switch name {
	case "flows_scheduled":
		// 0 means unknown (summaries written before the field): not measured rather than zero.
		return float64(s.Flows.Scheduled), s.Flows.Scheduled > 0
	case "throughput_bps": // older names, read as written
		return s.ThroughputBps, true
	case "avg_flow_goodput_bps":
		return s.AvgFlowGoodputBps, true
	case "window_goodput_bps":
		// Absent (0, omitted from summary.json) when the spec set no measure_from: not measured, so not
		// a "0 ±0" row in the aggregate.
		return s.WindowGoodputBps, s.WindowGoodputBps > 0
	case "reordered":
		return float64(s.Reordered), true
	case "drops_lossless":
		return float64(s.Drops.Lossless), true
	case "drops_lossy":
		return float64(s.Drops.Lossy), true
	case "retransmissions":
		return float64(s.Retransmissions), true
	case "pauses_sent":
		return float64(s.Pauses.Sent), true
	case "ecn_marks":
		return float64(s.ECNMarks), true
	case "nic_queue_peak_bytes":
		return float64(s.NIC.PeakBytes), true
	case "cnps":
		return float64(s.CNPs), true
	case "nic_drops":
		return float64(s.NIC.Drops), true
	case "deadlocks":
		if s.Deadlock.Detected {
			return 1, true
		}
		return 0, true
	case "violations":
		return float64(len(s.Violations)), true
	}
	return statMetric(name, s.Flows, s.FCT, s.Slowdown, s.Goodput)
}

func statMetric(name string, fl FlowCounts, fct, sd Stats, g Goodput) (float64, bool) {
	switch name {
	case "flows_total":
		return float64(fl.Total), true
	case "flows_completed":
		return float64(fl.Completed), true
	case "flows_completed_fraction":
		if fl.Total == 0 {
			return 0, true
		}
		return float64(fl.Completed) / float64(fl.Total), true
	case "fct_avg_s":
		return fct.Avg, true
	case "fct_p50_s":
		return fct.P50, true
	case "fct_p95_s":
		return fct.P95, true
	case "fct_p99_s":
		return fct.P99, true
	case "fct_p999_s":
		return fct.P999, true
	case "slowdown_avg":
		return sd.Avg, true
	case "slowdown_p50":
		return sd.P50, true
	case "slowdown_p99":
		return sd.P99, true
	case "goodput_per_flow_all_bps":
		return g.PerFlowAllBps, true
	case "goodput_per_flow_completed_bps":
		return g.PerFlowCompletedBps, true
	case "goodput_aggregate_bps":
		return g.AggregateBps, true
	case "goodput_aggregate_completed_bps":
		return g.AggregateCompletedBps, true
	case "delivered_bytes":
		return float64(g.DeliveredBytes), true
	}
	return 0, false
}
