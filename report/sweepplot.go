package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/fabriclab/fabriclab/units"
)

// DefaultSweepMetrics are the metrics lab report plots against a swept value (or per group, with
// seeds) when none are asked for.
var DefaultSweepMetrics = []string{"fct_avg_s", "fct_p99_s", "goodput_per_flow_all_bps", "goodput_aggregate_bps"}

// WriteSweepPlots draws each metric's mean with 95% CI error bars over seeds: against the first swept
// field's value (one line per spec and value of the other swept fields) when the tree has a sweep,
// else one bar per group (sweep_<metric> or seeds_<metric>, PNG and SVG). It returns the files written.
func WriteSweepPlots(dir string, t *Tree, metrics []string) ([]string, error) {
	if len(metrics) == 0 {
		metrics = DefaultSweepMetrics
	}
	var files []string
	for _, m := range metrics {
		if _, ok := LookupMetric(m); !ok {
			return files, fmt.Errorf("plot: %v", CheckMetricName(m))
		}
		var pl *plot.Plot
		var err error
		name := "sweep_" + fileSafe(m)
		if ax := sweepAxis(t); ax != nil {
			pl, err = sweepPlot(t, ax, m)
		} else {
			name = "seeds_" + fileSafe(m)
			pl, err = groupBars(t, m)
		}
		if err != nil {
			return files, fmt.Errorf("%s: %w", name, err)
		}
		if pl == nil {
			continue
		}
		for _, ext := range []string{".png", ".svg"} {
			f := filepath.Join(dir, name+ext)
			wt, err := pl.WriterTo(7*vg.Inch, 4.5*vg.Inch, ext[1:])
			if err != nil {
				return files, fmt.Errorf("%s: %w", f, err)
			}
			if err := WriteFileAtomic(f, func(w io.Writer) error { _, err := wt.WriteTo(w); return err }); err != nil {
				return files, fmt.Errorf("%s: %w", f, err)
			}
			files = append(files, f)
		}
	}
	return files, nil
}

func fileSafe(s string) string {
	return strings.NewReplacer(".", "_", ":", "_", "/", "_").Replace(s)
}

// axisTitle is a metric's name and unit as the plots scale it: the name's own unit suffix (_s, _bps)
// gives way to the plotted one, so a label never mixes two ("fct_avg_s (us)" was one).
func axisTitle(m string) string {
	scale, unit := scaleFor(m)
	if unit == "" || scale == 1 {
		return m
	}
	d, _ := LookupMetric(m)
	return fmt.Sprintf("%s (%s)", strings.TrimSuffix(m, "_"+d.Unit), unit)
}

// numericValue reads a swept value as a number: plain, or a size, rate or time with its unit.
func numericValue(v string) (float64, bool) {
	if x, err := strconv.ParseFloat(v, 64); err == nil {
		return x, true
	}
	if b, err := units.ParseBytes(v); err == nil {
		return float64(b), true
	}
	if r, err := units.ParseRate(v); err == nil {
		return r, true
	}
	if d, err := units.ParseTime(v); err == nil {
		return d.Seconds(), true
	}
	return 0, false
}

// ciPoints are x, mean and CI half-width; YError lets plotter.YErrorBars draw them.
type ciPoints struct {
	plotter.XYs
	half []float64
}

func (c ciPoints) YError(i int) (float64, float64) {
	h := c.half[i]
	if math.IsNaN(h) {
		h = 0
	}
	// Every plotted metric is a time, a rate or a count: an interval below zero is the t interval's
	// symmetry on few seeds, not a possible value, and would stretch the axis below 0.
	return min(h, math.Max(c.XYs[i].Y, 0)), h
}

// sweepAxis is the axis a sweep plot runs along: the first with more than one value (a --set with one
// value only sets a field; along it every point would sit at one x), or nil when none varies.
func sweepAxis(t *Tree) *ManifestAxis {
	for i := range t.Axes {
		if len(t.Axes[i].Values) > 1 {
			return &t.Axes[i]
		}
	}
	return nil
}

func sweepPlot(t *Tree, axis *ManifestAxis, m string) (*plot.Plot, error) {
	numeric := true
	for _, v := range axis.Values {
		if _, ok := numericValue(v); !ok {
			numeric = false
		}
	}
	x := func(v string) float64 {
		if numeric {
			f, _ := numericValue(v)
			return f
		}
		for i, a := range axis.Values {
			if a == v {
				return float64(i)
			}
		}
		return math.NaN()
	}
	// One series per spec and value of the other axes.
	series := map[string]*ciPoints{}
	var order []string
	scale, _ := scaleFor(m)
	for _, g := range t.Groups {
		v := g.Value(axis.Path)
		if v == "" {
			continue
		}
		var rest []Setting
		for _, s := range g.Set {
			if s.Path != axis.Path {
				rest = append(rest, s)
			}
		}
		key := g.Name
		if l := SetLabel(rest); l != "" {
			key += " " + l
		}
		c := g.GroupMetric(m)
		if c.N == 0 {
			continue
		}
		s, ok := series[key]
		if !ok {
			s = &ciPoints{}
			series[key] = s
			order = append(order, key)
		}
		s.XYs = append(s.XYs, plotter.XY{X: x(v), Y: c.Mean * scale})
		s.half = append(s.half, c.Half*scale)
	}
	if len(order) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s vs %s (mean, 95%% CI over seeds)", m, axis.Path)
	p.X.Label.Text = axis.Path
	p.Y.Label.Text = axisTitle(m)
	if !numeric {
		var ticks []plot.Tick
		for i, v := range axis.Values {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: v})
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	p.Legend.Top, p.Legend.Left = true, true
	// Series side by side are dodged by a little of the x range, so equal means do not hide each
	// other's error bars.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, xy := range s.XYs {
			lo, hi = math.Min(lo, xy.X), math.Max(hi, xy.X)
		}
	}
	dodge := 0.0
	if len(order) > 1 && hi > lo {
		dodge = (hi - lo) * 0.012
	}
	for i, key := range order {
		s := series[key]
		off := (float64(i) - float64(len(order)-1)/2) * dodge
		for k := range s.XYs {
			s.XYs[k].X += off
		}
		idx := make([]int, len(s.XYs))
		for k := range idx {
			idx[k] = k
		}
		sort.Slice(idx, func(a, b int) bool { return s.XYs[idx[a]].X < s.XYs[idx[b]].X })
		sorted := ciPoints{XYs: make(plotter.XYs, len(idx)), half: make([]float64, len(idx))}
		for k, j := range idx {
			sorted.XYs[k], sorted.half[k] = s.XYs[j], s.half[j]
		}
		l, pts, err := plotter.NewLinePoints(sorted.XYs)
		if err != nil {
			return nil, err
		}
		l.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
		l.Width = vg.Points(1.5)
		pts.Shape = plotutil.Shape(i)
		eb, err := plotter.NewYErrorBars(sorted)
		if err != nil {
			return nil, err
		}
		eb.Color = plotutil.Color(i)
		eb.Width = vg.Points(1)
		eb.CapWidth = vg.Points(6)
		p.Add(l, pts, eb)
		p.Legend.Add(key, l, pts)
	}
	p.Add(plotter.NewGrid())
	padRange(p)
	p.Y.Tick.Marker = labelledTicks{}
	return p, nil
}

// padRange keeps error bars and end points off the frame, and starts a positive y axis at 0 so
// differences are not exaggerated.
func padRange(p *plot.Plot) {
	dx := (p.X.Max - p.X.Min) * 0.08
	if dx == 0 {
		dx = 0.5
	}
	p.X.Min, p.X.Max = p.X.Min-dx, p.X.Max+dx
	if p.Y.Min > 0 {
		p.Y.Min = 0
	}
	p.Y.Max *= 1.15 // room for the legend
}

// groupBars is one bar per group (mean) with its 95% CI as an error bar.
func groupBars(t *Tree, m string) (*plot.Plot, error) {
	if len(t.Groups) == 0 {
		return nil, nil
	}
	scale, _ := scaleFor(m)
	vals := make(plotter.Values, len(t.Groups))
	ci := ciPoints{XYs: make(plotter.XYs, len(t.Groups)), half: make([]float64, len(t.Groups))}
	var names, dead []string
	anySeeds := false
	for i, g := range t.Groups {
		c := g.GroupMetric(m)
		mean := c.Mean
		if c.N == 0 {
			mean = 0
		}
		if c.N > 1 {
			anySeeds = true
		}
		vals[i] = mean * scale
		ci.XYs[i] = plotter.XY{X: float64(i), Y: mean * scale}
		ci.half[i] = c.Half * scale
		// Like the per-run legends: a group that left flows unfinished says so, since its FCTs are of
		// the flows that did finish.
		tags := fmt.Sprintf("n=%d", c.N)
		if deadlockNote(nil, g.Runs, m) != "" {
			dead = append(dead, g.Label())
			tags += ", DEADLOCK"
		}
		if f := g.GroupMetric("flows_completed_fraction"); f.N > 0 && f.Mean < 0.9995 {
			tags += fmt.Sprintf(", %.1f%% done", 100*f.Mean)
		}
		name := fmt.Sprintf("%s (%s)", g.Label(), tags)
		names = append(names, name)
	}
	if !anySeeds {
		return nil, nil // one run per group: lab report's per-run tables and plots say it all
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s (mean, 95%% CI over seeds)", m)
	if len(dead) > 0 {
		// A deadlocked group's bar is of the flows that finished before the deadlock: it can look best.
		p.Title.Text += "\nDEADLOCKED (only finished flows count): " + strings.Join(dead, ", ")
		p.Title.TextStyle.Color = color.RGBA{R: 0xc0, A: 0xff}
	}
	p.Y.Label.Text = axisTitle(m)
	bars, err := plotter.NewBarChart(vals, vg.Points(28))
	if err != nil {
		return nil, err
	}
	bars.Color = plotutil.Color(0)
	bars.LineStyle.Width = 0
	eb, err := plotter.NewYErrorBars(ci)
	if err != nil {
		return nil, err
	}
	eb.Width = vg.Points(1.2)
	eb.CapWidth = vg.Points(10)
	grid := plotter.NewGrid()
	grid.Vertical.Width = 0 // lines through the bars read as error bars
	p.Add(bars, eb, grid)
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(t.Groups))-0.4
	p.X.Tick.Label.Rotation = 0.35
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.Y.Min = 0
	p.Y.Max *= 1.1
	p.Y.Tick.Marker = labelledTicks{}
	return p, nil
}

// labelledTicks labels about six round values (gonum's default labels as few as two on a short range).
type labelledTicks struct{}

func (labelledTicks) Ticks(min, max float64) []plot.Tick {
	if !(max > min) {
		return plot.DefaultTicks{}.Ticks(min, max)
	}
	raw := (max - min) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ts []plot.Tick
	for k := math.Ceil(min / step); k*step <= max+step*1e-9; k++ {
		v := k * step
		if math.Abs(v) < step*1e-9 {
			v = 0 // not "-0"
		}
		ts = append(ts, plot.Tick{Value: v, Label: fmt.Sprintf("%.6g", v)})
	}
	return ts
}
