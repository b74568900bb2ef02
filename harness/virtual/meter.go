package virtual

import (
	"sort"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
)

// DefaultMeterBin is the width the link and flow byte meters' bins start at when Fabric.MeterBin is not
// set; such meters keep at most MaxMeterBins bins, doubling the width as a run grows longer.
const DefaultMeterBin = 10 * clock.Microsecond

// MaxMeterBins bounds the bins of meters with the default width. Fixed 10 us bins held 230 MB on a 36 ms
// fat-tree k=12 incast (every link's series, then its records); 256 columns are finer than a heatmap
// shows, and their memory no longer grows with the run.
const MaxMeterBins = 256

// meterBin is the bin width every meter of a fabric shares, so that their series line up.
type meterBin struct {
	width    clock.Time
	adaptive bool // double the width rather than pass MaxMeterBins
	meters   []*linkMeter
	cur      int        // the bin of the last index call
	end      clock.Time // where bin cur ends; time only moves forward, so most calls stop here
}

// index is now's bin, after coarsening every meter as often as needed to keep it under MaxMeterBins.
func (b *meterBin) index(now clock.Time) int {
	if now < b.end {
		return b.cur
	}
	b.cur = b.slowIndex(now)
	b.end = clock.Time(b.cur+1) * b.width
	return b.cur
}

func (b *meterBin) slowIndex(now clock.Time) int {
	i := int(now / b.width)
	for b.adaptive && i >= MaxMeterBins {
		b.width *= 2
		for _, m := range b.meters {
			m.flush()
			m.pendBin = -1
			m.bytes = halve(m.bytes)
			for j, f := range m.series {
				m.series[j] = halve(f)
			}
		}
		i = int(now / b.width)
	}
	return i
}

// halve merges adjacent pairs of bins, in place.
func halve(bins []int64) []int64 {
	n := (len(bins) + 1) / 2
	for i := 0; i < n; i++ {
		v := bins[2*i]
		if 2*i+1 < len(bins) {
			v += bins[2*i+1]
		}
		bins[i] = v
	}
	return bins[:n]
}

// linkMeter counts the bytes a link carries per bin, and the data payload it delivers to each flow's
// destination host (when it ends at one). It lives in the harness, not the engines: a cable does not
// know about flows, the test bench around it does.
type linkMeter struct {
	bin    *meterBin
	bytes  []int64        // by bin index
	toHost int32          // host index at the far end, -1 for a switch
	flows  map[uint32]int // flow ID -> its series; packets of one flow come in runs, so the last is kept
	series [][]int64
	last   uint32 // flow of the last payload counted, and its series (lastAt = -1: none yet)
	lastAt int
	// pend counts bin pendBin's bytes until the bin changes (-1: none): bytes[i] of every link was a
	// cache miss per frame, pend sits beside what the frame touches anyway.
	pend    int64
	pendBin int
}

// flush adds the pending bytes to their bin.
func (m *linkMeter) flush() {
	if m.pendBin < 0 {
		return
	}
	for len(m.bytes) <= m.pendBin {
		m.bytes = append(m.bytes, 0)
	}
	m.bytes[m.pendBin] += m.pend
	m.pend = 0
}

func (m *linkMeter) add(now clock.Time, p *pkt.Packet) {
	i := m.bin.index(now)
	if i != m.pendBin {
		m.flush()
		m.pendBin = i
	}
	m.pend += int64(p.Size)
	if p.Kind == pkt.Data && p.Dst == m.toHost && p.Payload > 0 {
		if m.lastAt < 0 || p.Flow != m.last {
			j, ok := m.flows[p.Flow]
			if !ok {
				j = len(m.series)
				m.flows[p.Flow] = j
				m.series = append(m.series, nil)
			}
			m.last, m.lastAt = p.Flow, j
		}
		f := m.series[m.lastAt]
		for len(f) <= i {
			f = append(f, 0)
		}
		f[i] += int64(p.Payload)
		m.series[m.lastAt] = f
	}
}

// meterRecords turns the meters into records (non-empty bins only), in a deterministic order.
func (f *Fabric) meterRecords() ([]records.LinkBytes, []records.FlowBytes) {
	ends := make([]topo.End, 0, len(f.links))
	for e := range f.links {
		ends = append(ends, e)
	}
	sort.Slice(ends, func(i, j int) bool {
		if ends[i].Node != ends[j].Node {
			return ends[i].Node < ends[j].Node
		}
		return ends[i].Port < ends[j].Port
	})
	n := 0 // sized first: appending to a growing slice left twice its size behind on a large run
	for _, e := range ends {
		if m := f.links[e].meter; m != nil {
			m.flush()
			m.pendBin = -1
			for _, b := range m.bytes {
				if b > 0 {
					n++
				}
			}
		}
	}
	lb := make([]records.LinkBytes, 0, n)
	flows := map[uint32][]int64{}
	for _, e := range ends {
		m := f.links[e].meter
		if m == nil {
			continue
		}
		for i, b := range m.bytes {
			if b > 0 {
				lb = append(lb, records.LinkBytes{At: clock.Time(i) * m.bin.width, Device: int32(e.Node), Port: int16(e.Port), Bytes: b})
			}
		}
		for id, j := range m.flows {
			bs := m.series[j]
			acc := flows[id]
			for len(acc) < len(bs) {
				acc = append(acc, 0)
			}
			for i, b := range bs {
				acc[i] += b
			}
			flows[id] = acc
		}
	}
	ids := make([]uint32, 0, len(flows))
	for id := range flows {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var fb []records.FlowBytes
	for _, id := range ids {
		for i, b := range flows[id] {
			if b > 0 {
				fb = append(fb, records.FlowBytes{At: clock.Time(i) * f.meterBin.width, Flow: id, Bytes: b})
			}
		}
	}
	return lb, fb
}
