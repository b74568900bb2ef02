package report

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/fabriclab/fabriclab/lab/topo"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// More plot names. Heatmaps, flow rates and the topology are one figure per run: NAME.png for one run,
// NAME-<run>.png for several.
const (
	PlotLinkUtil     = "link_util"     // heatmap: link direction x time, utilization
	PlotPauseMap     = "pause_heatmap" // heatmap: paused link direction x time, paused fraction
	PlotDrops        = "drops"         // drops per time slot
	PlotFlowRate     = "flow_rate"     // delivered rate of chosen flows over time
	PlotSlowdownCDF  = "slowdown_cdf"  // CDF of per-flow slowdown
	PlotTopology     = "topology"      // the fabric, coloured by peak utilization and peak queue
	maxHeatmapCols   = 200
	figureW, figureH = 7 * vg.Inch, 4.5 * vg.Inch
)

// plotNames are the names WritePlots owns in an output directory: the ones it removes before writing.
var plotNames = []string{PlotFCTCDF, PlotSlowdown, PlotQueues, PlotPauses, PlotLinkUtil, PlotPauseMap,
	PlotDrops, PlotFlowRate, PlotSlowdownCDF, PlotTopology}

// clearPlots removes the figures an earlier report wrote into dir (only names WritePlots writes, and only
// .png, .svg and .dot files), so a re-run never leaves old plots beside new data.
func clearPlots(dir string) error {
	for _, n := range plotNames {
		// "."+n+"*.tmp-*": what a report killed mid-write left (WriteFileAtomic's temporaries).
		for _, pat := range []string{n + ".*", n + "-*.*", "." + n + "*.tmp-*"} {
			m, err := filepath.Glob(filepath.Join(dir, pat))
			if err != nil {
				return err
			}
			for _, f := range m {
				switch ext := filepath.Ext(f); {
				case ext == ".png", ext == ".svg", ext == ".dot", strings.Contains(ext, ".tmp-"), strings.Contains(f, ".tmp-"):
					if err := os.Remove(f); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// FlowsToPlot picks the flows flow_rate draws when the caller names none: the four largest completed flows.
func FlowsToPlot(r *Run) []uint32 {
	rows := append([]FlowRow(nil), r.Rows...)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Size > rows[j].Size })
	var ids []uint32
	for _, row := range rows {
		if row.Completed && len(ids) < 4 {
			ids = append(ids, row.ID)
		}
	}
	return ids
}

// PlotOptions tune WritePlots.
type PlotOptions struct {
	Flows []uint32 // flow_rate's flows; nil: FlowsToPlot per run
}

// savePlot writes p to path (format from the extension) with its legend drawn to the right of the plot
// area instead of over the lines, and side (a colour bar) beside it when given.
func savePlot(p *plot.Plot, side *plot.Plot, path string) error {
	return savePlotSize(p, side, path, figureH)
}

func savePlotSize(p *plot.Plot, side *plot.Plot, path string, h vg.Length) error {
	format := strings.TrimPrefix(filepath.Ext(path), ".")
	c, err := draw.NewFormattedCanvas(figureW, h, format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	plainAxes(p)
	if side != nil {
		plainAxes(side)
	}
	lg := p.Legend
	p.Legend = plot.NewLegend()
	right := vg.Length(0)
	if w := lg.Rectangle(dc).Size().X; w > figureW*0.3 && side == nil {
		// Long entries (a run tree's runs: spec, sweep point and seed) would squeeze the axes to a
		// sliver beside them: the legend goes below the plot instead, the figure taller by its height.
		wrapTitle(p, figureW-vg.Points(16))
		return savePlotLegendBelow(p, lg, path, format, h)
	} else if w > 1 {
		right = w + vg.Points(12)
	}
	if side != nil {
		right += 0.9 * vg.Inch
	}
	wrapTitle(p, figureW-right-vg.Points(16))
	p.Draw(draw.Crop(dc, 0, -right, 0, 0))
	if right > 0 {
		area := draw.Crop(dc, figureW-right, 0, 0, 0)
		if side != nil {
			side.Draw(draw.Crop(area, right-0.9*vg.Inch, 0, vg.Points(20), -vg.Points(20)))
			area = draw.Crop(area, 0, -0.9*vg.Inch, 0, 0)
		}
		lg.Top, lg.Left = true, true
		lg.YOffs = -vg.Points(24)
		lg.Draw(area)
	}
	return WriteFileAtomic(path, func(w io.Writer) error {
		_, err := c.WriteTo(w)
		return err
	})
}

// wrapTitle breaks the lines of p's title at spaces so that each fits width: a title is centred over
// the plot, and a line wider than the figure lost both ends (fct_cdf's warning about runs that did
// not finish began "seed 1: DEADLOCK", its run's name cut off).
func wrapTitle(p *plot.Plot, width vg.Length) {
	var out []string
	for _, line := range strings.Split(p.Title.Text, "\n") {
		cur := ""
		for _, w := range strings.Fields(line) {
			switch {
			case cur == "":
				cur = w
			case p.Title.TextStyle.Width(cur+" "+w) > width:
				out = append(out, cur)
				cur = w
			default:
				cur += " " + w
			}
		}
		out = append(out, cur)
	}
	p.Title.Text = strings.Join(out, "\n")
}

// savePlotLegendBelow draws p with its legend lg under the plot area, on a figure as much taller as
// the legend needs.
func savePlotLegendBelow(p *plot.Plot, lg plot.Legend, path, format string, h vg.Length) error {
	probe, err := draw.NewFormattedCanvas(figureW, h, format)
	if err != nil {
		return err
	}
	lh := lg.Rectangle(draw.New(probe)).Size().Y + vg.Points(16)
	c, err := draw.NewFormattedCanvas(figureW, h+lh, format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	p.Draw(draw.Crop(dc, 0, 0, lh, 0))
	lg.Top, lg.Left = true, true
	lg.XOffs, lg.YOffs = vg.Points(40), 0
	lg.Draw(draw.Crop(dc, 0, 0, 0, -(h + vg.Points(4))))
	return WriteFileAtomic(path, func(w io.Writer) error {
		_, err := c.WriteTo(w)
		return err
	})
}

// figName is NAME for one run, NAME-<run> for several.
func figName(name string, r *Run, many bool) string {
	if !many {
		return name
	}
	return name + "-" + safeName(r.Name)
}

func safeName(s string) string {
	return strings.Map(func(c rune) rune {
		if c == '/' || c == ' ' || c == os.PathSeparator {
			return '_'
		}
		return c
	}, s)
}

// writeFigures draws the per-link, per-flow and topology figures of each group's first run (firsts),
// and drops over time and the slowdown CDF of every run of groups.
func writeFigures(dir string, groups []PlotGroup, runs []*Run, opt PlotOptions) ([]string, error) {
	var files []string
	save := func(name string, p, side *plot.Plot) error {
		h := figureH
		if side != nil { // a heatmap: room for one readable label per row
			h = max(h, vg.Length(len(p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max)))*vg.Points(9.5)+vg.Inch)
		}
		for _, ext := range []string{".png", ".svg"} {
			f := filepath.Join(dir, name+ext)
			if err := savePlotSize(p, side, f, h); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			files = append(files, f)
		}
		return nil
	}
	many := len(runs) > 1
	for _, r := range runs {
		if p, bar := linkUtilMap(r); p != nil {
			if err := save(figName(PlotLinkUtil, r, many), p, bar); err != nil {
				return files, err
			}
		}
		p, bar, err := pauseMap(r)
		if err != nil {
			return files, err
		}
		if p != nil {
			if err := save(figName(PlotPauseMap, r, many), p, bar); err != nil {
				return files, err
			}
		}
		ids := opt.Flows
		if ids == nil {
			ids = FlowsToPlot(r)
		}
		if p := flowRates(r, ids); p != nil {
			if err := save(figName(PlotFlowRate, r, many), p, nil); err != nil {
				return files, err
			}
		}
		fs, err := topologyPicture(dir, figName(PlotTopology, r, many), r)
		files = append(files, fs...)
		if err != nil {
			return files, err
		}
	}
	p, err := dropsOverTime(groups)
	if err != nil {
		return files, err
	}
	if p != nil {
		if err := save(PlotDrops, p, nil); err != nil {
			return files, err
		}
	}
	if p := slowdownCDF(groups); p != nil {
		if err := save(PlotSlowdownCDF, p, nil); err != nil {
			return files, err
		}
	}
	return files, nil
}

// grid is a heatmap's data: rows x cols, column c spanning [c*w, (c+1)*w) seconds.
type grid struct {
	z    [][]float64 // [row][col]
	w    float64     // column width, seconds
	rows []string
}

func (g *grid) Dims() (int, int)   { return len(g.z[0]), len(g.z) }
func (g *grid) Z(c, r int) float64 { return g.z[r][c] }
func (g *grid) X(c int) float64    { return (float64(c) + 0.5) * g.w * 1e6 }
func (g *grid) Y(r int) float64    { return float64(r) }
func (g *grid) Min() float64       { return 0 }
func (g *grid) Max() float64       { return 1 }

// heatmap draws g (values in [0, 1]) with one labelled row per link, and returns a colour bar for it.
func heatmap(title, zlabel string, g *grid) (*plot.Plot, *plot.Plot) {
	// White (idle) through orange to dark red (saturated): a sequential map, light = 0.
	pal := &stops{max: 1, c: []color.RGBA{{255, 255, 255, 255}, {254, 217, 118, 255}, {253, 141, 60, 255},
		{215, 48, 39, 255}, {103, 0, 31, 255}}}
	for _, zr := range g.z { // sums of float shares can land a hair outside [0, 1]
		for c := range zr {
			zr[c] = math.Min(math.Max(zr[c], 0), 1)
		}
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = fmt.Sprintf("time (us), %.3g us columns", g.w*1e6)
	hm := plotter.NewHeatMap(g, pal.Palette(256))
	hm.Min, hm.Max = 0, 1
	p.Add(hm)
	var ticks []plot.Tick
	step := max(1, len(g.rows)/40) // at most ~40 labels, so they stay readable
	for i, n := range g.rows {
		if i%step == 0 {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: n})
		}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Tick.Label.Font.Size = vg.Points(max(6, min(9, 500/float64(len(g.rows)))))
	p.Y.Min, p.Y.Max = -0.5, float64(len(g.rows))-0.5
	bar := plot.New()
	cb := &plotter.ColorBar{ColorMap: pal, Vertical: true}
	bar.Add(cb)
	bar.HideX()
	bar.Y.Label.Text = zlabel
	bar.Y.Padding = 0
	return p, bar
}

// stops is a colour map interpolating linearly between evenly spaced colours.
type stops struct {
	min, max float64
	c        []color.RGBA
}

func (s *stops) At(v float64) (color.Color, error) {
	if s.max <= s.min {
		return nil, fmt.Errorf("colour map range [%g, %g]", s.min, s.max)
	}
	x := math.Min(math.Max((v-s.min)/(s.max-s.min), 0), 1) * float64(len(s.c)-1)
	i := min(int(x), len(s.c)-2)
	f := x - float64(i)
	a, b := s.c[i], s.c[i+1]
	mix := func(p, q uint8) uint8 { return uint8(math.Round(float64(p) + f*(float64(q)-float64(p)))) }
	return color.RGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 255}, nil
}
func (s *stops) Max() float64     { return s.max }
func (s *stops) SetMax(v float64) { s.max = v }
func (s *stops) Min() float64     { return s.min }
func (s *stops) SetMin(v float64) { s.min = v }
func (s *stops) Alpha() float64   { return 1 }
func (s *stops) SetAlpha(float64) {}
func (s *stops) Palette(n int) palette.Palette {
	cs := make([]color.Color, n)
	for i := range cs {
		cs[i], _ = s.At(s.min + (s.max-s.min)*float64(i)/float64(max(n-1, 1)))
	}
	return palette.Palette(pal(cs))
}

type pal []color.Color

func (p pal) Colors() []color.Color { return p }

// linkUtilMap is the utilization of every link direction that carried bytes, per time column.
func linkUtilMap(r *Run) (*plot.Plot, *plot.Plot) {
	if len(r.Links) == 0 {
		return nil, nil
	}
	type key struct{ dev, port int }
	bin := r.Links[0].BinS
	end := 0.0
	names := map[key]string{}
	for _, l := range r.Links {
		end = math.Max(end, l.AtS+l.BinS)
		names[key{l.Device, l.Port}] = l.Name + "→" + l.Peer
	}
	k := max(1, int(math.Ceil(end/bin/maxHeatmapCols)))
	cols := int(math.Ceil(end / (bin * float64(k))))
	keys := make([]key, 0, len(names))
	for kk := range names {
		keys = append(keys, kk)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].dev != keys[j].dev {
			return keys[i].dev < keys[j].dev
		}
		return keys[i].port < keys[j].port
	})
	row := map[key]int{}
	g := &grid{w: bin * float64(k)}
	for i, kk := range keys {
		row[kk] = i
		g.rows = append(g.rows, names[kk])
		g.z = append(g.z, make([]float64, cols))
	}
	for _, l := range r.Links {
		c := min(int(l.AtS/g.w+1e-9), cols-1)
		g.z[row[key{l.Device, l.Port}]][c] += l.Util / float64(k)
	}
	for _, zr := range g.z {
		for c := range zr {
			zr[c] = math.Min(zr[c], 1)
		}
	}
	return heatmap(fmt.Sprintf("%s: link utilization (sender→receiver)", r.Name), "utilization", g)
}

// pauseMap is, per link direction that was ever paused, the fraction of each time column during which
// at least one of its queues was paused (from pfc.csv: the device that sent the pause stops its peer).
// It streams pfc.csv twice, never holding it: once for the paused links and the end, once walking each
// link's pause state in file order, which must be time order (as the run wrote it).
func pauseMap(r *Run) (*plot.Plot, *plot.Plot, error) {
	type key struct{ dev, port int }
	type qk struct {
		key
		q int
	}
	seen := map[key]bool{}
	end, last, ordered := 0.0, math.Inf(-1), true
	err := r.EachPause(func(e PauseEvent) {
		if e.Sent {
			seen[key{e.Device, e.Port}] = true
		}
		ordered = ordered && e.AtS >= last
		last = e.AtS
		end = math.Max(end, e.AtS)
	})
	if err != nil {
		return nil, nil, err
	}
	if !ordered {
		return nil, nil, fmt.Errorf("%s: rows not in time order", filepath.Join(r.Dir, PauseFile))
	}
	for _, l := range r.Links {
		end = math.Max(end, l.AtS+l.BinS)
	}
	if len(seen) == 0 || end == 0 {
		return nil, nil, nil
	}
	keys := make([]key, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].dev != keys[j].dev {
			return keys[i].dev < keys[j].dev
		}
		return keys[i].port < keys[j].port
	})
	cols := maxHeatmapCols
	g := &grid{w: end / float64(cols) * (1 + 1e-9)}
	// Per link: which queues are paused now, how many, since when; intervals during which any is
	// paused are added to the link's row as the events come.
	type state struct {
		row    int
		paused int
		since  float64
	}
	st := map[key]*state{}
	on := map[qk]bool{}
	for i, k := range keys {
		name := fmt.Sprintf("d%d:p%d", k.dev, k.port)
		if gr := r.Graph; gr != nil && k.dev < len(gr.Nodes) && k.port < len(gr.Nodes[k.dev].Ports) {
			name = gr.Nodes[gr.Peer(k.dev, k.port).Node].Name + "→" + gr.Nodes[k.dev].Name
		}
		g.rows = append(g.rows, name)
		g.z = append(g.z, make([]float64, cols))
		st[k] = &state{row: i}
	}
	add := func(zr []float64, a, b float64) {
		for c := int(a / g.w); c < cols && float64(c)*g.w < b; c++ {
			lo, hi := math.Max(a, float64(c)*g.w), math.Min(b, float64(c+1)*g.w)
			if hi > lo {
				zr[c] += (hi - lo) / g.w
			}
		}
	}
	err = r.EachPause(func(e PauseEvent) {
		if !e.Sent {
			return
		}
		k := key{e.Device, e.Port}
		s := st[k]
		q := qk{k, e.Queue}
		if e.Pause == on[q] {
			return
		}
		on[q] = e.Pause
		if e.Pause {
			if s.paused == 0 {
				s.since = e.AtS
			}
			s.paused++
		} else {
			s.paused--
			if s.paused == 0 {
				add(g.z[s.row], s.since, e.AtS)
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	for _, k := range keys {
		if s := st[k]; s.paused > 0 {
			add(g.z[s.row], s.since, end)
		}
	}
	p, bar := heatmap(fmt.Sprintf("%s: share of time a queue of the link was paused (peer→pauser)", r.Name), "paused fraction", g)
	return p, bar, nil
}

// flowRates plots the payload each chosen flow delivered to its destination per meter bin, in Gb/s.
func flowRates(r *Run, ids []uint32) *plot.Plot {
	if len(r.FlowRx) == 0 || len(ids) == 0 {
		return nil
	}
	rows := map[uint32]FlowRow{}
	for _, row := range r.Rows {
		rows[row.ID] = row
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: delivered rate of chosen flows", r.Name)
	p.X.Label.Text = fmt.Sprintf("time (us), %.3g us bins", r.FlowRx[0].BinS*1e6)
	p.Y.Label.Text = "rate (Gb/s)"
	for i, id := range ids {
		var pts plotter.XYs
		for _, f := range r.FlowRx {
			if f.Flow == id && f.BinS > 0 {
				pts = append(pts, plotter.XY{X: (f.AtS + f.BinS/2) * 1e6, Y: float64(f.Bytes) * 8 / f.BinS / 1e9})
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			continue
		}
		style(l, i)
		p.Add(l)
		row := rows[id]
		p.Legend.Add(fmt.Sprintf("flow %d h%d→h%d %s", id, row.Src, row.Dst, shortBytes(row.Size)), l)
	}
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	return p
}

// dropsOverTime plots drops per time slot for each group of runs (lossless drops are violations; the
// title counts them), streaming each run's drops.csv twice (its end, then its counts).
func dropsOverTime(groups []PlotGroup) (*plot.Plot, error) {
	runs := allRuns(groups)
	end, total, lossless := 0.0, 0, 0
	for _, r := range runs {
		end = math.Max(end, r.Summary.DurationS)
		err := r.EachDrop(func(d DropEvent) {
			end = math.Max(end, d.AtS)
			total++
			if d.Lossless {
				lossless++
			}
		})
		if err != nil {
			return nil, err
		}
	}
	if end == 0 {
		return nil, nil
	}
	const slots = 100
	w := end / slots * (1 + 1e-9)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("drops over time (%d, of which %d from lossless queues)", total, lossless)
	if len(runs) > len(groups) {
		p.Title.Text = fmt.Sprintf("drops over time (%d in %d runs, of which %d from lossless queues)", total, len(runs), lossless)
	}
	p.X.Label.Text = fmt.Sprintf("time (us), %.3g us slots", w*1e6)
	p.Y.Label.Text = "drops per slot"
	counts := make([][][]float64, len(groups))
	for gi, g := range groups {
		for _, r := range g.Runs {
			c := make([]float64, slots)
			if err := r.EachDrop(func(d DropEvent) { c[min(int(d.AtS/w), slots-1)]++ }); err != nil {
				return nil, err
			}
			counts[gi] = append(counts[gi], c)
		}
	}
	if _, err := seedBands(p, groups, counts, func(k int) float64 { return (float64(k) + 0.5) * w * 1e6 }); err != nil {
		return nil, err
	}
	p.Y.Min = 0
	if total == 0 {
		p.Y.Max = 1
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// slowdownCDF plots each run's per-flow slowdown distribution (completed flows) on a log axis, every
// seed of a group in its colour.
func slowdownCDF(groups []PlotGroup) *plot.Plot {
	p := plot.New()
	p.Title.Text = "slowdown CDF (FCT / standalone FCT, completed flows)"
	p.X.Label.Text = "slowdown"
	p.Y.Label.Text = "fraction of flows"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, roundLogTicks{}
	lo, hi, lines, err := cdfLines(p, groups, func(r *Run) []float64 {
		var v []float64
		for _, row := range r.Rows {
			if row.Completed && row.Slowdown > 0 {
				v = append(v, math.Max(row.Slowdown, 1))
			}
		}
		return v
	})
	if err != nil || lines == 0 {
		return nil
	}
	p.X.Min, p.X.Max = math.Max(1, lo*0.9), math.Max(hi*1.1, 2)
	p.Y.Min, p.Y.Max = 0, 1
	p.Add(plotter.NewGrid())
	return p
}

// roundLogTicks labels a log axis at 1-2-5 steps in plain numbers with SI suffixes (10, 20, 50, 100,
// 1k, 1M; never "1e+06" beside "10000"), and always labels at least two ticks.
type roundLogTicks struct{ unit string }

func (t roundLogTicks) Ticks(min, max float64) []plot.Tick {
	if min <= 0 || max <= min {
		return nil
	}
	var ts []plot.Tick
	steps := []float64{1, 2, 5}
	if math.Log10(max/min) > 3 { // many decades: label decades only, so labels never overlap
		steps = []float64{1}
	}
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		for _, m := range steps {
			v := m * math.Pow(10, e)
			if v < min*0.999 || v > max*1.001 {
				continue
			}
			ts = append(ts, plot.Tick{Value: v, Label: siLabel(v) + t.unit})
		}
	}
	if len(ts) < 2 { // a narrow range: label its ends
		ts = []plot.Tick{{Value: min, Label: siLabel(min) + t.unit}, {Value: max, Label: siLabel(max) + t.unit}}
	}
	return ts
}

// plainTicks is gonum's default tick placement with labels printed plainly: shortest decimal below
// 10000 ("0", "0.5", "2500"), k/M/G above ("10k", "1.2M"); never "2500.00" or "1e+06".
type plainTicks struct{}

func (plainTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label == "" {
			continue
		}
		v := ts[i].Value
		if math.Abs(v) < 1e4 {
			ts[i].Label = strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
		} else {
			ts[i].Label = siLabel(v)
		}
	}
	return ts
}

// plainAxes gives the linear axes that use gonum's default ticks plainTicks' labels.
func plainAxes(p *plot.Plot) {
	if _, ok := p.X.Tick.Marker.(plot.DefaultTicks); ok {
		p.X.Tick.Marker = plainTicks{}
	}
	if _, ok := p.Y.Tick.Marker.(plot.DefaultTicks); ok {
		p.Y.Tick.Marker = plainTicks{}
	}
}

// siLabel prints v with three significant digits and k/M/G for thousands.
func siLabel(v float64) string {
	for _, s := range []struct {
		d float64
		u string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= s.d {
			return trimFloat(v/s.d) + s.u
		}
	}
	return trimFloat(v)
}

func trimFloat(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%.3g", v), ".0") }

// topologyPicture writes NAME.dot, and NAME.png/.svg through Graphviz (Debian's graphviz: `dot`) when it
// is installed: links coloured and thickened by their mean utilization over the metered time (the busier
// direction; a 10 us peak is line rate on nearly every link, so it says little), switches filled by
// their deepest port queue over the run; hosts are grey and labelled with their NIC's deepest queue.
func topologyPicture(dir, name string, r *Run) ([]string, error) {
	g := r.Graph
	if g == nil || (len(r.Links) == 0 && len(r.Ports) == 0) {
		return nil, nil
	}
	type key struct{ dev, port int }
	mean := map[key]float64{}
	end := 0.0
	for _, l := range r.Links {
		end = math.Max(end, l.AtS+l.BinS)
	}
	for _, l := range r.Links {
		mean[key{l.Device, l.Port}] += l.Util * l.BinS / end
	}
	q := map[int]int64{}
	var qmax int64
	for _, p := range r.Ports {
		q[p.Device] = max(q[p.Device], p.MaxQueue)
		if p.Device < len(g.Nodes) && g.Nodes[p.Device].Kind == topo.Switch {
			qmax = max(qmax, p.MaxQueue)
		}
	}
	pal := moreland.SmoothBlueRed()
	pal.SetMin(0)
	pal.SetMax(1)
	hex := func(v float64) string {
		c, err := pal.At(math.Min(math.Max(v, 0), 1))
		if err != nil {
			return "#888888"
		}
		rr, gg, bb, _ := c.RGBA()
		return fmt.Sprintf("#%02x%02x%02x", rr>>8, gg>>8, bb>>8)
	}
	var b bytes.Buffer
	// Curved edges that avoid nodes (splines=true) are what made a fat-tree k=8 drawing take 30 s of
	// dot's time; above a small fabric the edges are drawn straight.
	splines := "true"
	if len(g.Links) > 64 {
		splines = "line"
	}
	fmt.Fprintf(&b, "graph %q {\n  layout=neato; overlap=false; splines=%s; outputorder=edgesfirst;\n", r.Name, splines)
	fmt.Fprintf(&b, "  label=%q; labelloc=t; fontsize=12;\n", fmt.Sprintf("%s: links by mean utilization over %.3g ms (blue 0 → red 1, thicker = busier)\nswitches by deepest port queue (blue 0 → red %s); hosts grey, with their NIC's deepest queue", r.Name, end*1e3, shortBytes(qmax)))
	fmt.Fprintf(&b, "  node [style=filled, fontsize=9, width=0.35, height=0.25, margin=0.02];\n")
	for i, n := range g.Nodes {
		shape := "box"
		if n.Kind == topo.Host {
			shape = "ellipse"
		}
		fill := "#dddddd"
		if n.Kind == topo.Switch && qmax > 0 {
			fill = hex(float64(q[i]) / float64(qmax))
		}
		fmt.Fprintf(&b, "  n%d [label=%q, shape=%s, fillcolor=%q];\n", i, fmt.Sprintf("%s\n%s", n.Name, shortBytes(q[i])), shape, fill)
	}
	for _, l := range g.Links {
		u := math.Max(mean[key{l.A.Node, l.A.Port}], mean[key{l.B.Node, l.B.Port}])
		fmt.Fprintf(&b, "  n%d -- n%d [color=%q, penwidth=%.2f, label=%q, fontsize=8];\n", l.A.Node, l.B.Node, hex(u), 1+5*u, fmt.Sprintf("%.0f%%", u*100))
	}
	b.WriteString("}\n")
	dot := filepath.Join(dir, name+".dot")
	if err := WriteBytesAtomic(dot, b.Bytes()); err != nil {
		return nil, err
	}
	files := []string{dot}
	bin, err := exec.LookPath("dot")
	if err != nil {
		fmt.Fprintf(os.Stderr, "report: graphviz (dot) not installed: wrote %s only (scripts/provision.sh installs graphviz)\n", dot)
		return files, nil
	}
	// One dot run lays the graph out once for both formats.
	// dot writes temporaries renamed once it has finished, so a kill mid-layout leaves no half picture.
	png, svg := filepath.Join(dir, name+".png"), filepath.Join(dir, name+".svg")
	tpng, tsvg := filepath.Join(dir, "."+name+".png.tmp-dot"), filepath.Join(dir, "."+name+".svg.tmp-dot")
	cmd := exec.Command(bin, "-Gdpi=110", "-Tpng", "-o", tpng, "-Tsvg", "-o", tsvg, dot)
	if msg, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tpng)
		os.Remove(tsvg)
		return files, fmt.Errorf("dot: %v: %s", err, msg)
	}
	for _, r := range [][2]string{{tpng, png}, {tsvg, svg}} {
		if err := os.Rename(r[0], r[1]); err != nil {
			return files, err
		}
	}
	return append(files, png, svg), nil
}

var _ = vgimg.New // keep the raster backend linked for PNG canvases
