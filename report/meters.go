package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/fabriclab/fabriclab/bounded"
	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/records"
)

// Files of the byte meters and per-port peaks.
const (
	LinksFile    = "links.csv"     // per link direction and meter bin: bytes and utilization
	FlowRateFile = "flow_rate.csv" // per flow and meter bin: payload delivered at the destination
	PortsFile    = "ports.csv"     // per device port: the deepest queue over the run
	TopoFile     = "topology.json" // lab run writes it
)

// LinkSample is one row of links.csv: what Device's Port sent in the bin starting at AtS.
type LinkSample struct {
	AtS, BinS    float64
	Device, Port int
	Name, Peer   string
	Bytes        int64
	Util         float64 // bytes x 8 / (link rate x bin)
}

// FlowRate is one row of flow_rate.csv.
type FlowRate struct {
	AtS, BinS float64
	Flow      uint32
	Bytes     int64
}

// PortPeak is one row of ports.csv.
type PortPeak struct {
	Device, Port int
	Name         string
	MaxQueue     int64
}

// WriteLinksCSV writes links.csv: at_s,bin_s,device,name,port,peer,bytes,util, one row per link
// direction and meter bin that carried bytes (frame bytes as encoded, without preamble and gap).
func WriteLinksCSV(w io.Writer, log *records.Log, meta Meta) error {
	if _, err := io.WriteString(w, "at_s,bin_s,device,name,port,peer,bytes,util\n"); err != nil {
		return err
	}
	bin := meta.seconds(log.MeterBin)
	r := row{sep: ','}
	for _, l := range log.Links {
		peer, util := "", 0.0
		if g := meta.Graph; g != nil && int(l.Device) < len(g.Nodes) && int(l.Port) < len(g.Nodes[l.Device].Ports) {
			peer = g.Nodes[g.Peer(int(l.Device), int(l.Port)).Node].Name
			if rate := g.LinkAt(int(l.Device), int(l.Port)).RateBps; rate > 0 && bin > 0 {
				util = float64(l.Bytes) * 8 / (rate * bin)
			}
		}
		r.float(meta.seconds(l.At))
		r.float(bin)
		r.int(int64(l.Device))
		r.str(meta.deviceName(int(l.Device)))
		r.int(int64(l.Port))
		r.str(peer)
		r.int(l.Bytes)
		r.float(util)
		if err := r.end(w); err != nil {
			return err
		}
	}
	return nil
}

// WriteFlowRateCSV writes flow_rate.csv: at_s,bin_s,flow,bytes (payload that reached the destination).
func WriteFlowRateCSV(w io.Writer, log *records.Log, meta Meta) error {
	if _, err := io.WriteString(w, "at_s,bin_s,flow,bytes\n"); err != nil {
		return err
	}
	bin := meta.seconds(log.MeterBin)
	r := row{sep: ','}
	for _, f := range log.FlowRx {
		r.float(meta.seconds(f.At))
		r.float(bin)
		r.uint(uint64(f.Flow))
		r.int(f.Bytes)
		if err := r.end(w); err != nil {
			return err
		}
	}
	return nil
}

// WritePortsCSV writes ports.csv: device,name,port,max_queue_bytes,malformed_frames from the devices'
// counters (malformed_frames: frames read from the port that did not decode, netns runs).
func WritePortsCSV(w io.Writer, log *records.Log, meta Meta) error {
	cs := append([]records.Counters(nil), log.Counters...)
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Device < cs[j].Device })
	cw := csv.NewWriter(w)
	cw.Write([]string{"device", "name", "port", "max_queue_bytes", "malformed_frames"})
	for _, c := range cs {
		for p := range max(len(c.MaxQueue), len(c.MalformedPorts)) {
			q, bad := 0, uint64(0)
			if p < len(c.MaxQueue) {
				q = c.MaxQueue[p]
			}
			if p < len(c.MalformedPorts) {
				bad = c.MalformedPorts[p]
			}
			cw.Write([]string{strconv.Itoa(int(c.Device)), meta.deviceName(int(c.Device)), strconv.Itoa(p), strconv.Itoa(q), strconv.FormatUint(bad, 10)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// LoadMeters reads the run's links.csv, flow_rate.csv, ports.csv and topology.json when present.
func (r *Run) LoadMeters() error {
	if r.metersLoaded {
		return nil
	}
	r.metersLoaded = true
	dir := r.Dir
	read := func(name string, each func(p *rowParser) error) error {
		f, err := bounded.Open(filepath.Join(dir, name))
		if err != nil {
			return nil
		}
		defer f.Close()
		if err := readTable(bounded.Reader(f, f.Name(), bounded.RunFile), each); err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
		}
		return nil
	}
	if err := read(LinksFile, func(p *rowParser) error {
		r.Links = append(r.Links, LinkSample{AtS: p.float("at_s"), BinS: p.float("bin_s"), Device: int(p.int("device")),
			Port: int(p.int("port")), Name: p.str("name"), Peer: p.str("peer"), Bytes: p.int("bytes"), Util: p.float("util")})
		return nil
	}); err != nil {
		return err
	}
	if err := read(FlowRateFile, func(p *rowParser) error {
		r.FlowRx = append(r.FlowRx, FlowRate{AtS: p.float("at_s"), BinS: p.float("bin_s"), Flow: uint32(p.uint("flow", 32)), Bytes: p.int("bytes")})
		return nil
	}); err != nil {
		return err
	}
	if err := read(PortsFile, func(p *rowParser) error {
		r.Ports = append(r.Ports, PortPeak{Device: int(p.int("device")), Port: int(p.int("port")), Name: p.str("name"), MaxQueue: p.int("max_queue_bytes")})
		return nil
	}); err != nil {
		return err
	}
	if f, err := bounded.Open(filepath.Join(dir, TopoFile)); err == nil {
		defer f.Close()
		g, err := topo.ReadJSON(bounded.Reader(f, f.Name(), bounded.Topology), 100e9, clock.Microsecond)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, TopoFile), err)
		}
		r.Graph = g
	}
	return nil
}
