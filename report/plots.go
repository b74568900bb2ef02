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
	gs := make([]PlotGroup, len(runs))
	for i, r := range runs {
		gs[i] = PlotGroup{Label: r.Name, Runs: []*Run{r}}
	}
	return WriteGroupPlots(dir, gs, opt)
}

// PlotGroup is one legend entry of the report's figures: one run, or the seeds of one spec and sweep
// point of a run tree, drawn in one colour.
type PlotGroup struct {
	Label string
	Runs  []*Run // at least one; Runs[0] stands for the group in the one-run figures
}

// WriteGroupPlots is WritePlots for groups of seeds. The distributions and counts over time show every
// seed: the FCT and slowdown CDFs one thin line per seed in the group's colour, pauses and drops per
// slot the mean over seeds with a band from the fewest to the most any seed had. The figures of one run
// (slowdown per size bin, queue depth, heatmaps, flow rates, topology) draw each group's first run,
// labelled with its seed.
func WriteGroupPlots(dir string, groups []PlotGroup, opt PlotOptions) ([]string, error) {
	if err := clearPlots(dir); err != nil {
		return nil, err
	}
	var firsts []*Run
	for _, g := range groups {
		r := g.Runs[0]
		if len(g.Runs) > 1 {
			c := *r
			c.Name = fmt.Sprintf("%s seed %d", g.Label, r.Seed)
			r = &c
		}
		firsts = append(firsts, r)
	}
	var files []string
	for _, p := range []struct {
		name string
		make func() (*plot.Plot, error)
	}{
		{PlotFCTCDF, func() (*plot.Plot, error) { return fctCDF(groups) }},
		{PlotSlowdown, func() (*plot.Plot, error) { return slowdownBins(firsts) }},
		{PlotQueues, func() (*plot.Plot, error) { return queueDepth(firsts) }},
		{PlotPauses, func() (*plot.Plot, error) { return pausesOverTime(groups) }},
	} {
		pl, err := p.make()
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
	more, err := writeFigures(dir, groups, firsts, opt)
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

// groupLabel is label for a group: its seeds counted, and the flows not done summed over them.
func groupLabel(g PlotGroup) string {
	if len(g.Runs) == 1 {
		r := *g.Runs[0]
		r.Name = g.Label
		return label(&r)
	}
	done, total := 0, 0
	for _, r := range g.Runs {
		done, total = done+r.Summary.Flows.Completed, total+r.Summary.Flows.Total
	}
	l := fmt.Sprintf("%s (%d seeds)", g.Label, len(g.Runs))
	if done < total {
		l += fmt.Sprintf(" (%d/%d done)", done, total)
	}
	return l
}

// allRuns is every run of groups, in order.
func allRuns(groups []PlotGroup) []*Run {
	var rs []*Run
	for _, g := range groups {
		rs = append(rs, g.Runs...)
	}
	return rs
}

// cdfLines adds one CDF line per run of each group (values from each run, sorted here), in the group's
// colour, thinner when a group has several; it returns the values' range and the lines drawn. Each curve starts
// at 0 at its smallest value: a run of one flow is then a visible step, not a lone point.
func cdfLines(p *plot.Plot, groups []PlotGroup, values func(r *Run) []float64) (lo, hi float64, lines int, err error) {
	lo = math.Inf(1)
	for gi, g := range groups {
		named := false
		for _, r := range g.Runs {
			v := values(r)
			if len(v) == 0 {
				continue
			}
			sort.Float64s(v)
			lo, hi = math.Min(lo, v[0]), math.Max(hi, v[len(v)-1])
			pts := make(plotter.XYs, len(v)+1)
			pts[0] = plotter.XY{X: v[0], Y: 0}
			for k, x := range v {
				pts[k+1] = plotter.XY{X: x, Y: float64(k+1) / float64(len(v))}
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return lo, hi, lines, err
			}
			style(l, gi)
			if len(g.Runs) > 1 {
				l.Width = vg.Points(0.8)
			}
			p.Add(l)
			if !named {
				p.Legend.Add(groupLabel(g), l)
				named = true
			}
			lines++
		}
	}
	return lo, hi, lines, nil
}

// seedBands draws, per group, the mean over its runs of a per-slot count (counts[run][slot]) as a line,
// and, for a group of several seeds, a translucent band from the least to the most any seed counted.
// It returns the bands drawn.
func seedBands(p *plot.Plot, groups []PlotGroup, counts [][][]float64, x func(k int) float64) (int, error) {
	bands := 0
	for gi, g := range groups {
		cs := counts[gi]
		if len(cs) == 0 {
			continue
		}
		slots := len(cs[0])
		mean := make(plotter.XYs, slots)
		band := make(plotter.XYs, 0, 2*slots)
		for k := 0; k < slots; k++ {
			sum, lo := 0.0, math.Inf(1)
			for _, c := range cs {
				sum, lo = sum+c[k], math.Min(lo, c[k])
			}
			mean[k] = plotter.XY{X: x(k), Y: sum / float64(len(cs))}
			band = append(band, plotter.XY{X: x(k), Y: lo})
		}
		for k := slots - 1; k >= 0; k-- {
			hi := 0.0
			for _, c := range cs {
				hi = math.Max(hi, c[k])
			}
			band = append(band, plotter.XY{X: x(k), Y: hi})
		}
		if len(cs) > 1 {
			poly, err := plotter.NewPolygon(band)
			if err != nil {
				return bands, err
			}
			c := color.RGBAModel.Convert(plotutil.Color(gi)).(color.RGBA)
			poly.Color = color.NRGBA{R: c.R, G: c.G, B: c.B, A: 0x40}
			poly.LineStyle.Width = 0
			p.Add(poly)
			bands++
		}
		l, err := plotter.NewLine(mean)
		if err != nil {
			return bands, err
		}
		style(l, gi)
		p.Add(l)
		name := groupLabel(g)
		if len(cs) > 1 {
			name += ": mean, band min-max"
		}
		p.Legend.Add(name, l)
	}
	return bands, nil
}

func style(l *plotter.Line, i int) {
	l.Color = plotutil.Color(i)
	l.Width = vg.Points(1.5)
}

// fctCDF plots each run's FCT distribution on a log time axis, every seed of a group in its colour.
func fctCDF(groups []PlotGroup) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "FCT CDF"
	p.X.Label.Text = "flow completion time (us)"
	p.Y.Label.Text = "fraction of flows"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, roundLogTicks{}
	_, _, lines, err := cdfLines(p, groups, func(r *Run) []float64 {
		var v []float64
		for _, row := range r.Rows {
			if row.Completed && row.FCTS > 0 {
				v = append(v, row.FCTS*1e6)
			}
		}
		return v
	})
	if err != nil || lines == 0 {
		return nil, err
	}
	if w := cdfWarning(groups); w != "" {
		p.Title.Text += "\n" + w
		p.Title.TextStyle.Color = color.RGBA{R: 0xc0, A: 0xff}
	}
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs = -vg.Points(4)
	p.Y.Min, p.Y.Max = 0, 1
	p.Add(plotter.NewGrid())
	return p, nil
}

// cdfWarning says which groups' CDFs leave flows out (unfinished, deadlocked): such a curve covers only
// the flows that finished and so looks as good as or better than a run that finished them all. A group
// of seeds is one entry: how many of its seeds deadlocked and its flows done over all of them.
func cdfWarning(groups []PlotGroup) string {
	var bad []string
	for _, g := range groups {
		done, total, dead := 0, 0, 0
		first := 0.0
		for _, r := range g.Runs {
			done, total = done+r.Summary.Flows.Completed, total+r.Summary.Flows.Total
			if r.Summary.Deadlock.Detected {
				if dead == 0 {
					first = r.Summary.Deadlock.AtS
				}
				dead++
			}
		}
		switch {
		case dead > 0 && len(g.Runs) == 1:
			bad = append(bad, fmt.Sprintf("%s: DEADLOCK at %.3g ms, %d/%d flows done", g.Label, first*1e3, done, total))
		case dead > 0:
			bad = append(bad, fmt.Sprintf("%s: DEADLOCK in %d of %d seeds, %d/%d flows done", g.Label, dead, len(g.Runs), done, total))
		case done < total:
			bad = append(bad, fmt.Sprintf("%s: %d/%d flows done", g.Label, done, total))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	if len(bad) > 3 {
		bad = append(bad[:3], fmt.Sprintf("and %d more", len(bad)-3))
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

// pausesOverTime plots pause (XOFF) frames sent per time slot, 100 slots over the longest run, streaming
// each run's pfc.csv twice (its end, then its counts) rather than holding it.
func pausesOverTime(groups []PlotGroup) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "pause frames sent over time"
	p.X.Label.Text = "time (us)"
	p.Y.Label.Text = "pauses sent per slot"
	var end float64
	for _, r := range allRuns(groups) {
		if err := r.EachPause(func(e PauseEvent) { end = math.Max(end, e.AtS) }); err != nil {
			return nil, err
		}
	}
	if end == 0 {
		return nil, nil
	}
	const slots = 100
	w := end / slots * (1 + 1e-9)
	p.X.Label.Text = fmt.Sprintf("time (us), %.3g us slots", w*1e6)
	counts := make([][][]float64, len(groups))
	for gi, g := range groups {
		for _, r := range g.Runs {
			c := make([]float64, slots)
			err := r.EachPause(func(e PauseEvent) {
				if e.Pause && e.Sent {
					c[min(int(e.AtS/w), slots-1)]++
				}
			})
			if err != nil {
				return nil, err
			}
			counts[gi] = append(counts[gi], c)
		}
	}
	if _, err := seedBands(p, groups, counts, func(k int) float64 { return (float64(k) + 0.5) * w * 1e6 }); err != nil {
		return nil, err
	}
	p.Y.Min = 0
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p, nil
}
