package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot names (each written as .png and .svg).
const (
	PlotFCTCDF   = "fct_cdf"
	PlotSlowdown = "slowdown_bins"
	PlotQueues   = "queue_depth"
	PlotPauses   = "pauses"
)

// WritePlots draws the report's figures for runs into dir, each as PNG and SVG: the FCT CDF, median and
// p99 slowdown per 5-percentile size bin, the deepest switch queue over time (runs that sampled queues),
// pause frames sent over time, and writeFigures' (link utilization and pause heatmaps, drops over time,
// chosen flows' rates, slowdown CDF, the topology picture). Figures an earlier report left in dir under
// these names are removed first. It returns the files written.
func WritePlots(dir string, runs []*Run) ([]string, error) {
	return WritePlotsWith(dir, runs, PlotOptions{})
}

// WritePlotsWith is WritePlots with options.
func WritePlotsWith(dir string, runs []*Run, opt PlotOptions) ([]string, error) {
	if err := clearPlots(dir); err != nil {
		return nil, err
	}
	var files []string
	for _, p := range []struct {
		name string
		make func([]*Run) (*plot.Plot, error)
	}{{PlotFCTCDF, fctCDF}, {PlotSlowdown, slowdownBins}, {PlotQueues, queueDepth}, {PlotPauses, pausesOverTime}} {
		pl, err := p.make(runs)
		if err != nil {
			return files, fmt.Errorf("%s: %w", p.name, err)
		}
		if pl == nil {
			continue
		}
		for _, ext := range []string{".png", ".svg"} {
			f := filepath.Join(dir, p.name+ext)
			if err := savePlot(pl, nil, f); err != nil {
				return files, fmt.Errorf("%s: %w", f, err)
			}
			files = append(files, f)
		}
	}
	more, err := writeFigures(dir, runs, opt)
	return append(files, more...), err
}

// label names a run in a legend, saying when not every flow completed: a CDF of the completed flows
// of a deadlocked run would otherwise look like the best one.
func label(r *Run) string {
	if f := r.Summary.Flows; f.Completed < f.Total {
		return fmt.Sprintf("%s (%d/%d done)", r.Name, f.Completed, f.Total)
	}
	return r.Name
}

func style(l *plotter.Line, i int) {
	l.Color = plotutil.Color(i)
	l.Width = vg.Points(1.5)
}

// fctCDF plots each run's FCT distribution on a log time axis.
func fctCDF(runs []*Run) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "FCT CDF"
	p.X.Label.Text = "flow completion time (us)"
	p.Y.Label.Text = "fraction of flows"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, roundLogTicks{}
	p.Legend.Top, p.Legend.Left = false, false
	any := false
	for i, r := range runs {
		var v []float64
		for _, row := range r.Rows {
			if row.Completed && row.FCTS > 0 {
				v = append(v, row.FCTS*1e6)
			}
		}
		if len(v) == 0 {
			continue
		}
		sort.Float64s(v)
		// From 0 at the fastest flow: a run of one flow is then a visible step, not a lone point.
		pts := make(plotter.XYs, len(v)+1)
		pts[0] = plotter.XY{X: v[0], Y: 0}
		for k, x := range v {
			pts[k+1] = plotter.XY{X: x, Y: float64(k+1) / float64(len(v))}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		style(l, i)
		p.Add(l)
		p.Legend.Add(label(r), l)
		any = true
	}
	if !any {
		return nil, nil
	}
	if w := cdfWarning(runs); w != "" {
		p.Title.Text += "\n" + w
		p.Title.TextStyle.Color = color.RGBA{R: 0xc0, A: 0xff}
	}
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs = -vg.Points(4)
	p.Y.Min, p.Y.Max = 0, 1
	p.Add(plotter.NewGrid())
	return p, nil
}

// cdfWarning says which runs' CDFs leave flows out (unfinished, deadlocked): such a curve covers only
// the flows that finished and so looks as good as or better than a run that finished them all.
func cdfWarning(runs []*Run) string {
	var bad []string
	for _, r := range runs {
		f := r.Summary.Flows
		switch {
		case r.Summary.Deadlock.Detected:
			bad = append(bad, fmt.Sprintf("%s: DEADLOCK at %.3g ms, %d/%d flows done", r.Name, r.Summary.Deadlock.AtS*1e3, f.Completed, f.Total))
		case f.Completed < f.Total:
			bad = append(bad, fmt.Sprintf("%s: %d/%d flows done", r.Name, f.Completed, f.Total))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	if len(bad) > 2 {
		bad = append(bad[:2], fmt.Sprintf("and %d more runs", len(bad)-2))
	}
	return "WARNING " + strings.Join(bad, "; ") + "\n(the curves cover completed flows only)"
}

// slowdownBins plots median (solid) and p99 (dashed) slowdown against each bin's largest flow size.
func slowdownBins(runs []*Run) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "slowdown per 5-percentile size bin (solid p50, dashed p99)"
	p.X.Label.Text = "flow size (bytes, bin upper edge)"
	p.Y.Label.Text = "slowdown"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, roundLogTicks{unit: "B"}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, roundLogTicks{}
	xlo, xhi, yhi := math.Inf(1), 0.0, 1.0
	any := false
	for i, r := range runs {
		bins, _, _ := BinsOf(r.FCT)
		if len(bins) == 0 {
			continue
		}
		var p50, p99 plotter.XYs
		for _, b := range bins {
			x := math.Max(float64(b.MaxSize), 1)
			p50 = append(p50, plotter.XY{X: x, Y: math.Max(b.P50, 1)})
			p99 = append(p99, plotter.XY{X: x, Y: math.Max(b.P99, 1)})
			xlo, xhi, yhi = math.Min(xlo, x), math.Max(xhi, x), math.Max(yhi, b.P99)
		}
		l50, err := plotter.NewLine(p50)
		if err != nil {
			return nil, err
		}
		l99, err := plotter.NewLine(p99)
		if err != nil {
			return nil, err
		}
		style(l50, i)
		style(l99, i)
		l99.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		// Points too: a single-size workload (an incast) puts every bin at one size, where lines alone
		// collapse into one vertical stroke.
		s50, err := plotter.NewScatter(p50)
		if err != nil {
			return nil, err
		}
		s99, err := plotter.NewScatter(p99)
		if err != nil {
			return nil, err
		}
		s50.Color, s99.Color = plotutil.Color(i), plotutil.Color(i)
		s50.Shape, s99.Shape = draw.CircleGlyph{}, draw.TriangleGlyph{}
		p.Add(l50, l99, s50, s99)
		p.Legend.Add(label(r), l50)
		any = true
	}
	if !any {
		return nil, nil
	}
	// A single-size incast has every bin at one size: widen the axis so it still has labelled ticks.
	p.X.Min, p.X.Max = xlo/1.5, xhi*1.5
	p.Y.Min, p.Y.Max = 1, math.Max(yhi*1.2, 2)
	p.Add(plotter.NewGrid())
	return p, nil
}

// queueDepth plots, per run, the deepest port queue (whole port, all queues) among all sampled switch
// ports at each sampling instant, in KB.
func queueDepth(runs []*Run) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "deepest switch port queue over time"
	p.X.Label.Text = "time (us)"
	p.Y.Label.Text = "queue (KB)"
	any := false
	for i, r := range runs {
		if len(r.Samples) == 0 {
			continue
		}
		deepest := map[float64]int64{}
		for _, s := range r.Samples {
			if s.Queue == -1 {
				deepest[s.AtS] = max(deepest[s.AtS], s.Bytes)
			}
		}
		if len(deepest) == 0 { // engines that sample only per queue: sum them per port
			perPort := map[[3]float64]int64{}
			for _, s := range r.Samples {
				perPort[[3]float64{s.AtS, float64(s.Device), float64(s.Port)}] += s.Bytes
			}
			for k, b := range perPort {
				deepest[k[0]] = max(deepest[k[0]], b)
			}
		}
		ts := make([]float64, 0, len(deepest))
		for t := range deepest {
			ts = append(ts, t)
		}
		sort.Float64s(ts)
		pts := make(plotter.XYs, len(ts))
		for k, t := range ts {
			pts[k] = plotter.XY{X: t * 1e6, Y: float64(deepest[t]) / 1e3}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		style(l, i)
		p.Add(l)
		p.Legend.Add(label(r), l)
		any = true
	}
	if !any {
		return nil, nil
	}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p, nil
}

// pausesOverTime plots pause (XOFF) frames sent per time slot, 100 slots over the longest run.
func pausesOverTime(runs []*Run) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "pause frames sent over time"
	p.X.Label.Text = "time (us)"
	p.Y.Label.Text = "pauses sent per slot"
	var end float64
	for _, r := range runs {
		for _, e := range r.Pauses {
			end = math.Max(end, e.AtS)
		}
	}
	if end == 0 {
		return nil, nil
	}
	const slots = 100
	w := end / slots * (1 + 1e-9)
	p.X.Label.Text = fmt.Sprintf("time (us), %.3g us slots", w*1e6)
	for i, r := range runs {
		counts := make([]float64, slots)
		for _, e := range r.Pauses {
			if e.Pause && e.Sent {
				counts[min(int(e.AtS/w), slots-1)]++
			}
		}
		pts := make(plotter.XYs, slots)
		for k := range counts {
			pts[k] = plotter.XY{X: (float64(k) + 0.5) * w * 1e6, Y: counts[k]}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		style(l, i)
		p.Add(l)
		p.Legend.Add(label(r), l)
	}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p, nil
}
