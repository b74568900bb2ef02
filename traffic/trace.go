package traffic

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/fabriclab/fabriclab/bounded"
	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/units"
)

// HPCC's flow classes, the dport column of its flow.txt and fct.txt: analysis/fct_analysis.py -t 0
// keeps dport 100 ("normal"), -t 1 dport 200 ("incast") (alibaba-edu/High-Precision-Congestion-Control
// at 9f4be2a; its traffic generator writes 100).
const (
	HPCCDPortNormal = 100
	HPCCDPortIncast = 200
)

// HPCCDPort is the dport HPCC's files give a flow of workload class class: 200 for class "incast" (the
// incast workload kind), 100 for everything else.
func HPCCDPort(class string) int {
	if class == "incast" {
		return HPCCDPortIncast
	}
	return HPCCDPortNormal
}

// ReadHPCC reads the HPCC simulator's flow.txt: a line with the flow count, then one flow per line,
// "src dst pg dport size start_s" (pg is the priority group, 3 in HPCC's generator). src and dst are
// host indices. dport 200 makes the flow class "incast" (HPCC's incast class), any other "trace". Flows
// get IDs 1..n in file order.
func ReadHPCC(name string, rd io.Reader, hosts int) (Schedule, error) {
	sc := bufio.NewScanner(rd)
	line, want := 0, -1
	var s Schedule
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if want < 0 {
			n, err := strconv.Atoi(f[0])
			if err != nil || len(f) != 1 || n < 0 {
				return nil, fmt.Errorf("%s:%d: want the flow count, got %q", name, line, sc.Text())
			}
			want = n
			continue
		}
		if len(f) != 6 {
			return nil, fmt.Errorf("%s:%d: want \"src dst pg dport size start_s\", got %q", name, line, sc.Text())
		}
		src, e1 := strconv.Atoi(f[0])
		dst, e2 := strconv.Atoi(f[1])
		size, e3 := strconv.ParseInt(f[4], 10, 64)
		start, e4 := strconv.ParseFloat(f[5], 64)
		dport, e5 := strconv.Atoi(f[3])
		if e1 != nil || e2 != nil || e3 != nil || e4 != nil || e5 != nil {
			return nil, fmt.Errorf("%s:%d: %q: src, dst, dport and size must be integers, start_s a number", name, line, sc.Text())
		}
		if err := checkTraceFlow(src, dst, size, start, hosts); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		class := "trace"
		if dport == HPCCDPortIncast {
			class = "incast"
		}
		s = append(s, Flow{ID: uint32(len(s) + 1), Src: src, Dst: dst, Size: size, At: seconds(start), Class: class})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if want < 0 {
		return nil, fmt.Errorf("%s: empty (want a flow count line)", name)
	}
	if len(s) != want {
		return nil, fmt.Errorf("%s: the first line says %d flows, the file has %d", name, want, len(s))
	}
	return s, nil
}

func checkTraceFlow(src, dst int, size int64, start float64, hosts int) error {
	switch {
	case src < 0 || src >= hosts:
		return fmt.Errorf("src %d is not one of the %d hosts", src, hosts)
	case dst < 0 || dst >= hosts:
		return fmt.Errorf("dst %d is not one of the %d hosts", dst, hosts)
	case src == dst:
		return fmt.Errorf("src and dst are both %d", src)
	case size <= 0:
		return fmt.Errorf("size %d must be positive", size)
	case !(start >= 0) || math.IsInf(start, 0):
		return fmt.Errorf("start %v must be a time >= 0", start)
	case start > units.MaxTime.Seconds():
		return fmt.Errorf("start %v s is beyond %.0f s, the latest time", start, units.MaxTime.Seconds())
	case size > units.MaxBytes:
		return fmt.Errorf("size %d is more than %d bytes, the largest flow", size, units.MaxBytes)
	}
	return nil
}

func seconds(s float64) clock.Time { return clock.FromSeconds(s) }

// WriteHPCC writes s as HPCC's flow.txt (the format its traffic generator prints: "%d %d 3 100 %d %.9f",
// with dport HPCCDPort(class): 200 for incast flows).
// Dependencies (After) cannot be expressed there and are dropped; WriteHTSim keeps them.
func WriteHPCC(w io.Writer, s Schedule) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%d\n", len(s))
	for _, f := range s {
		fmt.Fprintf(bw, "%d %d 3 %d %d %.9f\n", f.Src, f.Dst, HPCCDPort(f.Class), f.Size, f.At.Seconds())
	}
	return bw.Flush()
}

// htsim connection matrices (.cm) as csg-htsim reads them (Broadcom/csg-htsim,
// sim/datacenter/connection_matrix.cpp, ConnectionMatrix::load at 841d9e7, 2026-03-23). Since its commit
// 8f63513 (2023-11-15) "start" is in picoseconds; before, microseconds. HTSimStartUnit selects which.
const (
	HTSimPicoseconds  = clock.Picosecond  // current csg-htsim
	HTSimMicroseconds = clock.Microsecond // csg-htsim before 8f63513 (format: htsim-us)
)

// ReadHTSim reads a connection matrix in current csg-htsim syntax (starts in picoseconds).
func ReadHTSim(name string, rd io.Reader, hosts int) (Schedule, error) {
	return ReadHTSimUnit(name, rd, hosts, HTSimPicoseconds)
}

// ReadHTSimUnit reads an htsim connection matrix with "start" in unit (HTSimPicoseconds or
// HTSimMicroseconds), following htsim's parser: header lines "Nodes N", "Connections C", "Triggers T",
// "Failures F"; connections "src->dst" with "id I" (not 0), "start T" or "trigger K" (exactly one),
// "size S", and optional "send_done_trigger K", "recv_done_trigger K", "prio P" (read and ignored:
// fabriclab gives a workload's flows one class); trigger lines "trigger id K" with one of oneshot,
// multishot, barrier and an optional "count N". Like htsim, start is parsed as a C float (stof, 24
// significant bits: a start of 1 ms in picoseconds lands on a multiple of 64 ps). Refused, with the
// line: htsim's "addon" triggers and "failure" lines (not modelled), a trigger used but never defined,
// a barrier counting more firings than flows fire it (htsim would never start its flows), zero ids.
//
// A flow with "trigger K" starts when the flows that fire K (send or receive done: both are completion
// here) have completed: exact for a oneshot trigger with one firer and for a barrier whose count is
// its number of firers; a trigger that fires on the first of several completions (oneshot, multishot,
// or a barrier counting fewer than fire it) is approximated by waiting for all of them.
func ReadHTSimUnit(name string, rd io.Reader, hosts int, unit clock.Time) (Schedule, error) {
	if unit != HTSimPicoseconds && unit != HTSimMicroseconds {
		return nil, fmt.Errorf("%s: htsim start unit %v: want picoseconds or microseconds", name, unit)
	}
	sc := bufio.NewScanner(rd)
	line := 0
	var s Schedule
	byID := map[uint32]int{}
	waits := map[int]uint32{}      // flow index -> trigger it waits for
	fires := map[uint32][]uint32{} // trigger -> flow ids that fire it
	type trigDef struct {
		kind  string
		count int
		line  int
	}
	defs := map[uint32]trigDef{}
	nodes := -1
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, a...))
		}
		switch {
		case f[0] == "Nodes" && len(f) == 2:
			n, err := strconv.Atoi(f[1])
			if err != nil || n < 1 {
				return nil, bad("Nodes %q is not a positive count", f[1])
			}
			if n > hosts {
				return nil, bad("the matrix has %d nodes, the topology %d hosts", n, hosts)
			}
			nodes = n
		case f[0] == "Connections" || f[0] == "Triggers" || f[0] == "Failures":
		case f[0] == "failure":
			return nil, bad("failure lines (switch and link failures) are not modelled")
		case f[0] == "trigger":
			d := trigDef{line: line}
			var id uint64
			for k := 1; k < len(f); k++ {
				switch f[k] {
				case "id", "count":
					if k+1 >= len(f) {
						return nil, bad("trigger %s without a value", f[k])
					}
					k++
					x, err := strconv.ParseUint(f[k], 10, 32)
					if err != nil {
						return nil, bad("trigger %s %q is not a non-negative integer", f[k-1], f[k])
					}
					if f[k-1] == "id" {
						id = x
					} else {
						d.count = int(x)
					}
				case "oneshot", "multishot", "barrier":
					if d.kind != "" {
						return nil, bad("trigger is both %s and %s", d.kind, f[k])
					}
					d.kind = f[k]
				default:
					return nil, bad("unknown trigger token %q (htsim: id, count, oneshot, multishot, barrier)", f[k])
				}
			}
			switch {
			case id == 0:
				return nil, bad("trigger without an id (or id 0, which htsim refuses)")
			case d.kind == "":
				return nil, bad("trigger %d has no type (oneshot, multishot or barrier)", id)
			}
			if _, dup := defs[uint32(id)]; dup {
				return nil, bad("trigger %d defined twice", id)
			}
			defs[uint32(id)] = d
		case strings.Contains(f[0], "->"):
			ends := strings.SplitN(f[0], "->", 2)
			src, e1 := strconv.Atoi(ends[0])
			dst, e2 := strconv.Atoi(ends[1])
			if e1 != nil || e2 != nil {
				return nil, bad("%q is not src->dst", f[0])
			}
			fl := Flow{Src: src, Dst: dst, Class: "trace"}
			var start float64
			hasStart := false
			var trig, done uint32
			for k := 1; k < len(f); k++ {
				key := f[k]
				if key == "addon" {
					return nil, bad("addon triggers are not modelled")
				}
				if k+1 >= len(f) {
					return nil, bad("%s without a value", key)
				}
				k++
				v := f[k]
				switch key {
				case "id":
					id, err := strconv.ParseUint(v, 10, 32)
					if err != nil || id == 0 {
						return nil, bad("id %q is not a positive integer (htsim refuses flow id 0)", v)
					}
					fl.ID = uint32(id)
				case "start":
					x, err := strconv.ParseFloat(v, 32) // htsim: stof
					if err != nil {
						return nil, bad("start %q is not a number (%v)", v, unit)
					}
					start, hasStart = x*unit.Seconds(), true
				case "size":
					x, err := strconv.ParseInt(v, 10, 64)
					if err != nil || x <= 0 {
						return nil, bad("size %q: flows need a positive size (htsim's 0 = unbounded is not supported)", v)
					}
					fl.Size = x
				case "trigger", "send_done_trigger", "recv_done_trigger":
					x, err := strconv.ParseUint(v, 10, 32)
					if err != nil || x == 0 {
						return nil, bad("%s %q is not a trigger id", key, v)
					}
					if key == "trigger" {
						trig = uint32(x)
					} else {
						done = uint32(x)
					}
				case "prio":
					if _, err := strconv.Atoi(v); err != nil {
						return nil, bad("prio %q is not an integer", v)
					}
				default:
					return nil, bad("unknown connection token %q (htsim: id, start, size, trigger, send_done_trigger, recv_done_trigger, prio, addon)", key)
				}
			}
			switch {
			case hasStart && trig != 0:
				return nil, bad("both a start time and a trigger (htsim refuses)")
			case !hasStart && trig == 0:
				return nil, bad("no start time and no trigger (htsim refuses)")
			case trig != 0 && fl.ID == 0:
				return nil, bad("a triggered connection needs an id")
			}
			if fl.ID == 0 {
				fl.ID = uint32(len(s) + 1)
			}
			if _, dup := byID[fl.ID]; dup {
				return nil, bad("id %d used twice", fl.ID)
			}
			if err := checkTraceFlow(src, dst, fl.Size, start, hosts); err != nil {
				return nil, bad("%v", err)
			}
			if nodes > 0 && (src >= nodes || dst >= nodes) {
				return nil, bad("%s is outside the matrix's %d nodes", f[0], nodes)
			}
			fl.At = seconds(start)
			byID[fl.ID] = len(s)
			if trig != 0 {
				waits[len(s)] = trig
			}
			if done != 0 {
				fires[done] = append(fires[done], fl.ID)
			}
			s = append(s, fl)
		default:
			return nil, bad("unrecognised line %q", sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for i, t := range waits {
		d, ok := defs[t]
		if !ok {
			return nil, fmt.Errorf("%s: flow %d waits for trigger %d, which no trigger line defines", name, s[i].ID, t)
		}
		if len(fires[t]) == 0 {
			return nil, fmt.Errorf("%s: flow %d waits for trigger %d, which no flow fires", name, s[i].ID, t)
		}
		if d.kind == "barrier" && d.count > len(fires[t]) {
			return nil, fmt.Errorf("%s:%d: barrier %d counts %d firings but only %d flows fire it: htsim would never start flow %d",
				name, d.line, t, d.count, len(fires[t]), s[i].ID)
		}
		s[i].After = append([]uint32(nil), fires[t]...)
	}
	return s, nil
}

// WriteHTSim writes s as a connection matrix in current csg-htsim syntax (starts in picoseconds).
func WriteHTSim(w io.Writer, s Schedule, hosts int) error {
	return WriteHTSimUnit(w, s, hosts, HTSimPicoseconds)
}

// WriteHTSimUnit writes s as an htsim connection matrix with starts in unit. Flows that wait for the same
// set of flows share one "barrier count N" trigger that those N flows fire when done, so dependencies
// survive the round trip; a flow that more than one such set includes cannot be written (a .cm
// connection fires one trigger). Starts are whole picoseconds (htsim reads them as a C float: above
// 2^24 ps, about 16.8 us, htsim itself rounds them).
func WriteHTSimUnit(w io.Writer, s Schedule, hosts int, unit clock.Time) error {
	if unit != HTSimPicoseconds && unit != HTSimMicroseconds {
		return fmt.Errorf("htsim start unit %v: want picoseconds or microseconds", unit)
	}
	bw := bufio.NewWriter(w)
	fires := map[uint32]uint32{} // flow -> the trigger it fires
	waits := map[uint32]uint32{} // flow -> the trigger it waits for
	byKey := map[string]uint32{}
	var trigs []string
	for _, f := range s {
		if len(f.After) == 0 {
			continue
		}
		key := fmt.Sprint(f.After)
		t, ok := byKey[key]
		if !ok {
			t = uint32(len(trigs) + 1)
			byKey[key] = t
			trigs = append(trigs, fmt.Sprintf("trigger id %d barrier count %d", t, len(f.After)))
			for _, a := range f.After {
				if old, dup := fires[a]; dup && old != t {
					return fmt.Errorf("flow %d fires two triggers (%d, %d): a .cm connection fires one", a, old, t)
				}
				fires[a] = t
			}
		}
		waits[f.ID] = t
	}
	fmt.Fprintf(bw, "Nodes %d\nConnections %d\nTriggers %d\n", hosts, len(s), len(trigs))
	for _, f := range s {
		fmt.Fprintf(bw, "%d->%d id %d", f.Src, f.Dst, f.ID)
		if t, ok := waits[f.ID]; ok {
			fmt.Fprintf(bw, " trigger %d", t)
		} else if unit == HTSimPicoseconds {
			fmt.Fprintf(bw, " start %d", int64(f.At/clock.Picosecond))
		} else {
			fmt.Fprintf(bw, " start %s", strconv.FormatFloat(float64(f.At)/float64(clock.Microsecond), 'f', -1, 64))
		}
		fmt.Fprintf(bw, " size %d", f.Size)
		if t, ok := fires[f.ID]; ok {
			fmt.Fprintf(bw, " send_done_trigger %d", t)
		}
		fmt.Fprintln(bw)
	}
	for _, t := range trigs {
		fmt.Fprintln(bw, t)
	}
	return bw.Flush()
}

// LoadTrace reads a trace file in format "hpcc", "htsim" (current csg-htsim: starts in picoseconds) or
// "htsim-us" (csg-htsim before 8f63513: starts in microseconds).
func LoadTrace(format, path string, hosts int) (Schedule, error) {
	f, err := bounded.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd := bounded.Reader(f, path, bounded.Trace)
	switch format {
	case "hpcc":
		return ReadHPCC(path, rd, hosts)
	case "htsim":
		return ReadHTSim(path, rd, hosts)
	case "htsim-us":
		return ReadHTSimUnit(path, rd, hosts, HTSimMicroseconds)
	}
	return nil, fmt.Errorf("trace format %q is not hpcc, htsim or htsim-us", format)
}
