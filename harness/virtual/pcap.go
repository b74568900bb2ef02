package virtual

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/wire"
)

// PcapEpoch is the wall time engine time 0 maps to in a virtual run's captures: the Unix epoch, so a
// frame's timestamp is its engine time (Wireshark's "seconds since 1970" column reads as seconds into
// the run) and the same spec gives byte-identical pcaps.
var PcapEpoch = time.Unix(0, 0).UTC()

// capture is one port's pcap file.
type capture struct {
	f    *os.File
	w    *wire.PcapWriter
	err  error
	name string
}

func (c *capture) write(at clock.Time, p *pkt.Packet) {
	if c.err != nil {
		return
	}
	if err := c.w.WritePacket(at, p); err != nil {
		c.err = fmt.Errorf("%s: %w", c.name, err)
	}
}

// CapturePorts makes the fabric write a pcap per selected port into dir as <device>-p<port>.pcap, the
// names and contents the netns backend's --pcap writes: every frame the port sends, encoded by wire,
// stamped PcapEpoch + engine time. sel is "all" or a comma list of DEVICE:pPORT (s0:p1,h3:p0). Call it
// before Run; ClosePcaps after.
func (f *Fabric) CapturePorts(sel, dir string) error {
	ports, err := PortSelection(f.Lab.Graph, sel)
	if err != nil {
		return err
	}
	if len(ports) > 0 {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	for _, pr := range ports {
		l := f.links[pr]
		name := fmt.Sprintf("%s-p%d.pcap", f.Lab.Graph.Nodes[pr.Node].Name, pr.Port)
		file, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		w, err := wire.NewPcapWriter(file, 0)
		if err != nil {
			file.Close()
			return err
		}
		w.Base = PcapEpoch
		l.pcap = &capture{f: file, w: w, name: name}
		f.pcaps = append(f.pcaps, l.pcap)
	}
	return nil
}

// ClosePcaps flushes and closes the capture files, returning the first error writing any of them.
func (f *Fabric) ClosePcaps() error {
	var errs []error
	for _, c := range f.pcaps {
		errs = append(errs, c.err, c.w.Close())
	}
	f.pcaps = nil
	return errors.Join(errs...)
}

// PortSelection resolves a capture selection ("all", or DEVICE:pPORT,...) against the graph's devices.
func PortSelection(g *topo.Graph, sel string) ([]topo.End, error) {
	sel = strings.TrimSpace(sel)
	var out []topo.End
	if sel == "" {
		return out, nil
	}
	if sel == "all" {
		for i, n := range g.Nodes {
			for p := range n.Ports {
				out = append(out, topo.End{Node: i, Port: p})
			}
		}
		return out, nil
	}
	byName := map[string]int{}
	for i, n := range g.Nodes {
		byName[n.Name] = i
	}
	for _, item := range strings.Split(sel, ",") {
		dev, port, ok := strings.Cut(strings.TrimSpace(item), ":")
		node, known := byName[dev]
		if !ok || !known || !strings.HasPrefix(port, "p") {
			return nil, fmt.Errorf("pcap: %q: want DEVICE:pPORT with a device of the lab (e.g. s0:p1), or all", item)
		}
		i, err := strconv.Atoi(port[1:])
		if err != nil || i < 0 || i >= len(g.Nodes[node].Ports) {
			return nil, fmt.Errorf("pcap: %q: %s has ports p0..p%d", item, dev, len(g.Nodes[node].Ports)-1)
		}
		out = append(out, topo.End{Node: node, Port: i})
	}
	return out, nil
}
