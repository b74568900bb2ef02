package virtual

import (
	"math"
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
			m.bytes.halve()
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

// bins are a link meter's byte counts by bin index, 32 bits each while every count fits: a link's
// 256-bin series were the largest part of the fat-tree k=12 incast's live heap after its packets (6.7 MB
// of 38 MB on 2592 link directions), and a bin of 4 GB would take 340 ms at 100 Gb/s (adaptive bins
// reach that width on a run of about 44 s). The first count that does not fit widens them all to 64 bits.
type bins struct {
	narrow []uint32
	wide   []int64 // nil until a count passes 32 bits; then it holds every count and narrow is nil
}

func (b *bins) len() int {
	if b.wide != nil {
		return len(b.wide)
	}
	return len(b.narrow)
}

func (b *bins) at(i int) int64 {
	if b.wide != nil {
		return b.wide[i]
	}
	return int64(b.narrow[i])
}

// add adds v (>= 0) to bin i, first growing the series to hold it.
func (b *bins) add(i int, v int64) {
	if b.wide == nil {
		for len(b.narrow) <= i {
			b.narrow = append(b.narrow, 0)
		}
		if s := int64(b.narrow[i]) + v; s <= math.MaxUint32 {
			b.narrow[i] = uint32(s)
			return
		}
		b.widen()
	}
	for len(b.wide) <= i {
		b.wide = append(b.wide, 0)
	}
	b.wide[i] += v
}

func (b *bins) widen() {
	b.wide = make([]int64, len(b.narrow), max(cap(b.narrow), 1))
	for j, c := range b.narrow {
		b.wide[j] = int64(c)
	}
	b.narrow = nil
}

// halve merges adjacent pairs of bins, in place.
func (b *bins) halve() {
	if b.wide == nil {
		for i := 0; i+1 < len(b.narrow); i += 2 {
			if int64(b.narrow[i])+int64(b.narrow[i+1]) > math.MaxUint32 {
				b.widen()
				break
			}
		}
	}
	if b.wide != nil {
		b.wide = halve(b.wide)
		return
	}
	n := (len(b.narrow) + 1) / 2
	for i := 0; i < n; i++ {
		v := b.narrow[2*i]
		if 2*i+1 < len(b.narrow) {
			v += b.narrow[2*i+1]
		}
		b.narrow[i] = v
	}
	b.narrow = b.narrow[:n]
}

// linkMeter counts the bytes a link carries per bin, and the data payload it delivers to each flow's
// destination host (when it ends at one). It lives in the harness, not the engines: a cable does not
// know about flows, the test bench around it does.
type linkMeter struct {
	bin    *meterBin
	bytes  bins           // by bin index
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
	m.bytes.add(m.pendBin, m.pend)
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

// meterSet is the fabric's meters as TakeRecords keeps them: each link's counts, without the link (which
// reaches the engines through its peer), in a deterministic order.
type meterSet struct {
	width clock.Time
	links []meterCounts
}

type meterCounts struct {
	end    topo.End
	bytes  bins
	flows  map[uint32]int
	series [][]int64
}

// detachMeters flushes every meter and keeps its counts, ordered by device and port (nil: no meters).
func (f *Fabric) detachMeters() *meterSet {
	if f.meterBin == nil {
		return nil
	}
	ms := &meterSet{width: f.meterBin.width}
	for i := range f.parts {
		if b := f.parts[i].bin; b != nil {
			ms.width = max(ms.width, b.width)
		}
	}
	for e, l := range f.links {
		if m := l.meter; m != nil {
			m.flush()
			m.pendBin = -1
			// A part whose links saw no frame late in the run kept narrower bins than the sequential
			// run's (which widen all meters at once): merge them to the widest. A halved bin holds what
			// a bin of twice the width would have counted, so the records are the same.
			for w := m.bin.width; w < ms.width; w *= 2 {
				m.bytes.halve()
				for j, fs := range m.series {
					m.series[j] = halve(fs)
				}
			}
			ms.links = append(ms.links, meterCounts{end: e, bytes: m.bytes, flows: m.flows, series: m.series})
		}
	}
	sort.Slice(ms.links, func(i, j int) bool {
		a, b := ms.links[i].end, ms.links[j].end
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		return a.Port < b.Port
	})
	return ms
}

// records turns the counts into records (non-empty bins only). Both slices are sized first: appending
// to a growing slice left twice its size behind on a large run.
func (ms *meterSet) records() ([]records.LinkBytes, []records.FlowBytes) {
	n := 0
	for i := range ms.links {
		b := &ms.links[i].bytes
		for j := range b.len() {
			if b.at(j) > 0 {
				n++
			}
		}
	}
	lb := make([]records.LinkBytes, 0, n)
	flows := map[uint32][]int64{}
	for i := range ms.links {
		m := &ms.links[i]
		for j := range m.bytes.len() {
			if b := m.bytes.at(j); b > 0 {
				lb = append(lb, records.LinkBytes{At: clock.Time(j) * ms.width, Device: int32(m.end.Node), Port: int16(m.end.Port), Bytes: b})
			}
		}
		for id, j := range m.flows {
			bs := m.series[j]
			acc, ok := flows[id]
			if !ok {
				flows[id] = bs // a flow metered at one link, the usual case, keeps that link's series
				continue
			}
			if len(acc) < len(bs) {
				acc = append(make([]int64, 0, len(bs)), acc...)
				acc = acc[:len(bs)]
			} else {
				acc = append([]int64(nil), acc...) // not the series of the link it came from
			}
			for i, b := range bs {
				acc[i] += b
			}
			flows[id] = acc
		}
	}
	ids := make([]uint32, 0, len(flows))
	n = 0
	for id, bs := range flows {
		ids = append(ids, id)
		for _, b := range bs {
			if b > 0 {
				n++
			}
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var fb []records.FlowBytes
	if n > 0 {
		fb = make([]records.FlowBytes, 0, n)
	}
	for _, id := range ids {
		for i, b := range flows[id] {
			if b > 0 {
				fb = append(fb, records.FlowBytes{At: clock.Time(i) * ms.width, Flow: id, Bytes: b})
			}
		}
	}
	return lb, fb
}
