package report

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/fabriclab/fabriclab/bounded"
	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/records"
)

// File names inside a run directory (docs/architecture.md §Contracts).
const (
	SummaryFile    = "summary.json"
	FCTFile        = "fct.txt"
	PFCFile        = "pfc.txt"
	FlowsFile      = "flows.csv"
	DropsFile      = "drops.csv"
	PauseFile      = "pfc.csv"
	BinsFile       = "slowdown_bins.txt"
	ViolationsFile = "violations.txt"
)

// PFCIfIndexBase is added to a port index to give pfc.txt's if_index. In HPCC's ns-3 nodes device 0 is
// the loopback and the first link is device 1 (third.cc scans switch devices from 1), so port 0 is
// if_index 1 there; we keep that so scripts that map if_index to links need no change.
const PFCIfIndexBase = 1

// WriteRunDir writes the run's outputs into dir (created if needed) and returns the summary it wrote:
// summary.json, fct.txt, pfc.txt, flows.csv, drops.csv, pfc.csv (every pause/resume record, both
// directions, with queue and relay hops), slowdown_bins.txt, and violations.txt when there are any.
func WriteRunDir(dir string, log *records.Log, meta Meta) (*Summary, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := Summarize(log, meta)
	rows := Rows(log, meta)
	var fct bytes.Buffer
	if err := WriteFCT(&fct, log, meta); err != nil {
		return nil, err
	}
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{SummaryFile, func(w io.Writer) error {
			e := json.NewEncoder(w)
			e.SetIndent("", "  ")
			return e.Encode(s)
		}},
		{FCTFile, func(w io.Writer) error { _, err := w.Write(fct.Bytes()); return err }},
		{PFCFile, func(w io.Writer) error { return WritePFC(w, log, meta) }},
		{FlowsFile, func(w io.Writer) error { return WriteFlowsCSV(w, rows) }},
		{DropsFile, func(w io.Writer) error { return WriteDropsCSV(w, log, meta) }},
		{PauseFile, func(w io.Writer) error { return WritePausesCSV(w, log, meta) }},
		{PortsFile, func(w io.Writer) error { return WritePortsCSV(w, log, meta) }},
		{BinsFile, func(w io.Writer) error {
			// An error here only says the script itself would stop (too few flows); the table is still
			// the bins it would have printed.
			bins, _, _ := binsFromFCT(fct.Bytes())
			return WriteBins(w, bins)
		}},
	}
	if len(log.Violations) > 0 {
		files = append(files, struct {
			name  string
			write func(io.Writer) error
		}{ViolationsFile, func(w io.Writer) error {
			for _, v := range log.Violations {
				if _, err := fmt.Fprintln(w, v); err != nil {
					return err
				}
			}
			return nil
		}})
	}
	if len(log.Faults) > 0 {
		files = append(files, struct {
			name  string
			write func(io.Writer) error
		}{FaultsFile, func(w io.Writer) error { return WriteFaultsCSV(w, log, meta) }})
	}
	if len(log.Links) > 0 {
		files = append(files, struct {
			name  string
			write func(io.Writer) error
		}{LinksFile, func(w io.Writer) error { return WriteLinksCSV(w, log, meta) }}, struct {
			name  string
			write func(io.Writer) error
		}{FlowRateFile, func(w io.Writer) error { return WriteFlowRateCSV(w, log, meta) }})
	}
	if s.Paths != nil {
		files = append(files, struct {
			name  string
			write func(io.Writer) error
		}{PathsFile, func(w io.Writer) error { return WritePathsCSV(w, log) }})
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(dir, f.name), f.write); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return s, nil
}

// writeFile streams a run file to disk: a whole file in memory (links.csv of a fat-tree k=12 run is
// 11 MB) was the largest thing a finished run held.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 64<<10)
	err = write(w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteFCT writes completed flows in HPCC's fct.txt format, one per line in completion order (HPCC
// writes a line when a flow finishes):
//
//	sip dip sport dport size start_ns fct_ns standalone_fct_ns
//
// sip/dip are the IPv4 addresses as 8 lowercase hex digits (HPCC's "%08x"; h0 = 198.18.0.1 = c6120001),
// size in bytes, times in paper nanoseconds rounded to integers. dport is the flow's HPCC class
// (HPCCDPort: 200 incast, 100 otherwise), as in flow.txt, because fct_analysis.py selects flows by it;
// the frames' UDP port is RoCEv2's 4791 (flows.csv has it).
func WriteFCT(w io.Writer, log *records.Log, meta Meta) error {
	var fs []records.Flow
	for _, f := range log.Flows {
		if f.Completed {
			fs = append(fs, f)
		}
	}
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Finish != fs[j].Finish {
			return fs[i].Finish < fs[j].Finish
		}
		return fs[i].ID < fs[j].ID
	})
	bw := bufio.NewWriter(w)
	for _, f := range fs {
		sip, dip := meta.hostIP(int(f.Src)).As4(), meta.hostIP(int(f.Dst)).As4()
		fmt.Fprintf(bw, "%02x%02x%02x%02x %02x%02x%02x%02x %d %d %d %d %d %d\n",
			sip[0], sip[1], sip[2], sip[3], dip[0], dip[1], dip[2], dip[3], f.SPort, HPCCDPort(f.Class), f.Size,
			meta.nanos(f.Start), meta.nanos(f.FCT()), meta.nanos(f.Ideal))
	}
	return bw.Flush()
}

// WritePFC writes HPCC's pfc.txt: "time_ns node_id node_type if_index type", type 1 = pause, 0 = resume.
//
// HPCC traces a pause where it takes effect: at the device that RECEIVES the frame, on the interface it
// arrived on (QbbNetDevice::Receive fires the QbbPfc trace). So the lines are the Sent == false records.
// node_id is the graph node index, node_type 0 host / 1 switch, if_index the port + PFCIfIndexBase. If
// the engines logged only sent frames and meta.Graph is set, each sent record is turned into its
// receiver's view (the peer of the sending port), so pfc.txt is never silently empty. Lines are in time
// order.
func WritePFC(w io.Writer, log *records.Log, meta Meta) error {
	// 24 bytes a line, sized before it is filled: lines of ints grown by append allocated 21 MB for the
	// 4 MB a fat-tree k=12 incast writes, all of it after the run, on top of the run's heap.
	type line struct {
		at          int64
		node, iface int32
		kind, typ   uint8
	}
	received := 0
	for _, p := range log.Pauses {
		if !p.Sent {
			received++
		}
	}
	anyReceived := received > 0
	n := received
	if !anyReceived && meta.Graph != nil {
		n = len(log.Pauses)
	}
	ls := make([]line, 0, n)
	for _, p := range log.Pauses {
		typ := uint8(0)
		if p.On {
			typ = 1
		}
		switch {
		case !p.Sent:
			ls = append(ls, line{meta.nanos(p.At), p.Device, int32(p.Port) + PFCIfIndexBase, uint8(p.Kind), typ})
		case !anyReceived && meta.Graph != nil:
			g := meta.Graph
			if int(p.Device) >= len(g.Nodes) || int(p.Port) >= len(g.Nodes[p.Device].Ports) {
				return fmt.Errorf("pause record names device %d port %d, not in the topology", p.Device, p.Port)
			}
			peer := g.Peer(int(p.Device), int(p.Port))
			kind := uint8(records.Switch)
			if g.Nodes[peer.Node].Kind == topo.Host {
				kind = uint8(records.Host)
			}
			// Propagation delay is not added: the record is when the frame left, and HPCC users read
			// pfc.txt for counts and durations, not sub-microsecond offsets.
			ls = append(ls, line{meta.nanos(p.At), int32(peer.Node), int32(peer.Port + PFCIfIndexBase), kind, typ})
		}
	}
	sort.SliceStable(ls, func(i, j int) bool {
		a, b := ls[i], ls[j]
		if a.at != b.at {
			return a.at < b.at
		}
		if a.node != b.node {
			return a.node < b.node
		}
		return a.iface < b.iface
	})
	r := row{sep: ' '}
	for _, l := range ls {
		r.int(l.at)
		r.int(int64(l.node))
		r.int(int64(l.kind))
		r.int(int64(l.iface))
		r.int(int64(l.typ))
		if err := r.end(w); err != nil {
			return err
		}
	}
	return nil
}

var flowsHeader = []string{"id", "src", "dst", "class", "size", "start_s", "finish_s", "fct_s", "ideal_s",
	"slowdown", "completed", "retransmits", "sport", "dport", "delivered"}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// WriteFlowsCSV writes flows.csv: one row per flow, hosts as h<i>, times in paper seconds (shortest
// exact decimal), finish_s/fct_s/slowdown empty for incomplete flows, slowdown empty without an ideal.
func WriteFlowsCSV(w io.Writer, rows []FlowRow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(flowsHeader); err != nil {
		return err
	}
	for _, r := range rows {
		finish, fct, sd := "", "", ""
		if r.Completed {
			finish, fct = ftoa(r.FinishS), ftoa(r.FCTS)
			if r.Slowdown > 0 {
				sd = ftoa(r.Slowdown)
			}
		}
		rec := []string{strconv.FormatUint(uint64(r.ID), 10), "h" + strconv.Itoa(r.Src), "h" + strconv.Itoa(r.Dst),
			r.Class, strconv.FormatInt(r.Size, 10), ftoa(r.StartS), finish, fct, ftoa(r.IdealS), sd,
			strconv.FormatBool(r.Completed), strconv.FormatInt(r.Retransmits, 10),
			strconv.Itoa(int(r.SPort)), strconv.Itoa(int(r.DPort)), strconv.FormatInt(r.Delivered, 10)}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func (m Meta) deviceName(d int) string {
	if m.Graph != nil && d >= 0 && d < len(m.Graph.Nodes) {
		return m.Graph.Nodes[d].Name
	}
	return ""
}

// beforeAt is the order of every per-device record file (pfc.csv, drops.csv, queues.csv): time, then
// device index, then the order the device's engine logged them in (the sorts are stable). That is a total
// order over what a run measured, whatever the number of agents or machines whose logs were merged:
// a device's records all come from its one engine, so only records of different devices share a
// time, and the device index orders those (before, equal times came out in the order the logs were
// merged, which varies with the split: seen on pfc.csv over three machines). It is the record-file
// face of docs/architecture.md §Order of simultaneous events.
func beforeAt(at1, at2 clock.Time, dev1, dev2 int32) bool {
	if at1 != at2 {
		return at1 < at2
	}
	return dev1 < dev2
}

// WriteDropsCSV writes drops.csv: at_s,device,name,port,queue,flow,lossless,reason (time order, then
// device: beforeAt).
func WriteDropsCSV(w io.Writer, log *records.Log, meta Meta) error {
	ds := append([]records.Drop(nil), log.Drops...)
	sort.SliceStable(ds, func(i, j int) bool { return beforeAt(ds[i].At, ds[j].At, ds[i].Device, ds[j].Device) })
	cw := csv.NewWriter(w)
	cw.Write([]string{"at_s", "device", "name", "port", "queue", "flow", "lossless", "reason"})
	for _, d := range ds {
		cw.Write([]string{ftoa(meta.seconds(d.At)), strconv.Itoa(int(d.Device)), meta.deviceName(int(d.Device)),
			strconv.Itoa(int(d.Port)), strconv.Itoa(int(d.Queue)), strconv.FormatUint(uint64(d.Flow), 10),
			strconv.FormatBool(d.Lossless), d.Reason})
	}
	cw.Flush()
	return cw.Error()
}

// WritePausesCSV writes pfc.csv, every pause/resume record as logged (both directions):
// at_s,device,name,kind,port,queue,pause,sent,hops, in time order, then device (beforeAt). pfc.txt
// cannot carry the queue or PortFC's relay hops; this file does.
func WritePausesCSV(w io.Writer, log *records.Log, meta Meta) error {
	// A log already in that order needs no sorted copy (3.8 MB on a fat-tree k=12 incast).
	ps := log.Pauses
	before := func(i, j int) bool { return beforeAt(ps[i].At, ps[j].At, ps[i].Device, ps[j].Device) }
	if !sort.SliceIsSorted(ps, before) {
		ps = append([]records.Pause(nil), log.Pauses...)
		sort.SliceStable(ps, before)
	}
	if _, err := io.WriteString(w, "at_s,device,name,kind,port,queue,pause,sent,hops\n"); err != nil {
		return err
	}
	r := row{sep: ','}
	for _, p := range ps {
		kind := "switch"
		if p.Kind == records.Host {
			kind = "host"
		}
		r.float(meta.seconds(p.At))
		r.int(int64(p.Device))
		r.str(meta.deviceName(int(p.Device)))
		r.str(kind)
		r.int(int64(p.Port))
		r.int(int64(p.Queue))
		r.bool(p.On)
		r.bool(p.Sent)
		r.int(int64(p.Hops))
		if err := r.end(w); err != nil {
			return err
		}
	}
	return nil
}

// ReadRunDir loads summary.json and flows.csv from a run directory (for `lab report` and comparisons).
func ReadRunDir(dir string) (*Summary, []FlowRow, error) {
	b, err := bounded.ReadFile(filepath.Join(dir, SummaryFile), bounded.Summary)
	if err != nil {
		return nil, nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, SummaryFile), err)
	}
	f, err := bounded.Open(filepath.Join(dir, FlowsFile))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	rows, err := ReadFlowsCSV(bounded.Reader(f, f.Name(), bounded.RunFile))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, FlowsFile), err)
	}
	return &s, rows, nil
}

// ReadFlowsCSV parses flows.csv by column name, so added columns do not break older readers.
func ReadFlowsCSV(r io.Reader) ([]FlowRow, error) {
	cr := csv.NewReader(r)
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, h := range flowsHeader[:12] {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("no column %q", h)
		}
	}
	var rows []FlowRow
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, err
		}
		p := rowParser{rec: rec, col: col}
		row := FlowRow{
			ID: uint32(p.uint("id", 32)), Src: p.host("src"), Dst: p.host("dst"), Class: p.str("class"),
			Size: p.int("size"), StartS: p.float("start_s"), FinishS: p.float("finish_s"),
			FCTS: p.float("fct_s"), IdealS: p.float("ideal_s"), Slowdown: p.float("slowdown"),
			Completed: p.bool("completed"), Retransmits: p.int("retransmits"),
			SPort: uint16(p.uint("sport", 16)), DPort: uint16(p.uint("dport", 16)),
			Delivered: p.int("delivered"),
		}
		if row.Completed {
			row.Delivered = row.Size // also for flows.csv files written before the column
		} else {
			// A flow that did not complete has no finish: WriteFlowsCSV leaves these empty, and a
			// hand-edited value must not reach the FCT statistics.
			row.FinishS, row.FCTS, row.Slowdown = 0, 0, 0
		}
		for _, v := range []struct {
			name string
			v    float64
		}{{"start_s", row.StartS}, {"finish_s", row.FinishS}, {"fct_s", row.FCTS}, {"ideal_s", row.IdealS}, {"slowdown", row.Slowdown}} {
			if v.v < 0 {
				p.fail(v.name, p.str(v.name), fmt.Errorf("negative"))
			}
		}
		if p.err != nil {
			return nil, fmt.Errorf("line %d: %w", line, p.err)
		}
		rows = append(rows, row)
	}
}

// rowParser reads named CSV fields, keeping the first error; empty and absent fields read as zero.
type rowParser struct {
	rec []string
	col map[string]int
	err error
}

func (p *rowParser) str(name string) string {
	i, ok := p.col[name]
	if !ok || i >= len(p.rec) {
		return ""
	}
	return p.rec[i]
}

func (p *rowParser) fail(name, v string, err error) {
	if p.err == nil {
		p.err = fmt.Errorf("%s=%q: %v", name, v, err)
	}
}

func (p *rowParser) float(name string) float64 {
	v := p.str(name)
	if v == "" {
		return 0
	}
	x, err := strconv.ParseFloat(v, 64)
	if err == nil && (math.IsNaN(x) || math.IsInf(x, 0)) {
		err = fmt.Errorf("not a finite number") // a run never writes one; sums and plots would turn NaN
	}
	if err != nil {
		p.fail(name, v, err)
	}
	return x
}

func (p *rowParser) int(name string) int64 {
	v := p.str(name)
	if v == "" {
		return 0
	}
	x, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		p.fail(name, v, err)
	}
	return x
}

func (p *rowParser) uint(name string, bits int) uint64 {
	v := p.str(name)
	if v == "" {
		return 0
	}
	x, err := strconv.ParseUint(v, 10, bits)
	if err != nil {
		p.fail(name, v, err)
	}
	return x
}

func (p *rowParser) bool(name string) bool {
	v := p.str(name)
	if v == "" {
		return false
	}
	x, err := strconv.ParseBool(v)
	if err != nil {
		p.fail(name, v, err)
	}
	return x
}

func (p *rowParser) host(name string) int {
	v := p.str(name)
	x, err := strconv.Atoi(strings.TrimPrefix(v, "h"))
	if err != nil || !strings.HasPrefix(v, "h") || x < 0 {
		p.fail(name, v, fmt.Errorf("want h<index>"))
		return -1
	}
	return x
}
