package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WriteRegressPlots draws, per group, every ratio new/base with its CI (black) on a log axis next to
// the margin (grey band around 1), failing metrics in red, and beside them the share of flows that
// differ from the same seed's BASE run (flows_differing: the row that catches a change no mean shows):
// compare_<group>.png and .svg in dir. A log axis shows a 3.5x change and a 0.9 one alike; ratios at 0
// (a metric gone in NEW) are drawn at ratioFloor. Metrics whose base is 0 (no ratio) are left out. It
// returns the files written.
func WriteRegressPlots(dir string, rg *Regression) ([]string, error) {
	var groups []string
	by := map[string][]MetricChange{}
	ident := map[string]*MetricChange{}
	for i, c := range rg.Changes {
		if c.Ratio == nil && c.Metric != IdentityMetric {
			continue
		}
		if _, ok := by[c.Group]; !ok && ident[c.Group] == nil {
			groups = append(groups, c.Group)
		}
		if c.Metric == IdentityMetric {
			ident[c.Group] = &rg.Changes[i]
			continue
		}
		by[c.Group] = append(by[c.Group], c)
	}
	var files []string
	for _, g := range groups {
		p, err := regressPlot(g, by[g], rg.Each != rg.Level)
		if err != nil {
			return files, fmt.Errorf("compare plot %s: %w", g, err)
		}
		var side *plot.Plot
		if c := ident[g]; c != nil {
			if side, err = identityPlot(*c); err != nil {
				return files, fmt.Errorf("compare plot %s: %w", g, err)
			}
		}
		w := vg.Length(math.Max(7, 0.22*float64(len(by[g]))+1.8)) * vg.Inch
		for _, ext := range []string{".png", ".svg"} {
			f := filepath.Join(dir, "compare_"+fileSafe(g)+ext)
			if err := saveRegressPlot(p, side, w, 5*vg.Inch, f); err != nil {
				return files, fmt.Errorf("%s: %w", f, err)
			}
			files = append(files, f)
		}
	}
	return files, nil
}

// sideW is the width of the flows_differing panel.
const sideW = 1.6 * vg.Inch

// saveRegressPlot draws side (when given) at the left and p beside it, into path (format from the
// extension).
func saveRegressPlot(p, side *plot.Plot, w, h vg.Length, path string) error {
	format := strings.TrimPrefix(filepath.Ext(path), ".")
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	if side != nil {
		side.Draw(draw.Crop(dc, 0, -(w - sideW), 0, 0))
		dc = draw.Crop(dc, sideW, 0, 0, 0)
	}
	if p != nil {
		p.Draw(dc)
	}
	return WriteFileAtomic(path, func(wr io.Writer) error {
		_, err := c.WriteTo(wr)
		return err
	})
}

// identityPlot is one bar: the share of flows that differ from the same seed's BASE run, red when that
// fails the comparison.
func identityPlot(c MetricChange) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "flows differing: " + c.Verdict
	p.Y.Label.Text = "share of flows (same seed)"
	p.Y.Min, p.Y.Max = 0, 1
	bar, err := plotter.NewBarChart(plotter.Values{c.New}, vg.Points(30))
	if err != nil {
		return nil, err
	}
	bar.Color = color.Gray{Y: 120}
	if c.Fails() {
		bar.Color = plotutil.Color(0)
	}
	bar.LineStyle.Width = 0
	p.Add(plotter.NewGrid(), bar)
	p.X.Label.Text = fmt.Sprintf("%.0f%%, %d seeds", 100*c.New, c.BaseN)
	p.X.Tick.Marker = plot.ConstantTicks(nil)
	return p, nil
}

// ratioFloor is where a ratio at or below 0 (a metric gone in NEW, a CI reaching below 0) is drawn on
// the log axis.
const ratioFloor = 1e-3

// marginBand is the ±margin around 1 as error bars.
type marginBand struct {
	plotter.XYs
	m []float64
}

func (b marginBand) YError(i int) (float64, float64) { return b.m[i], b.m[i] }

// ratioCI is ratios with asymmetric CI bars.
type ratioCI struct {
	plotter.XYs
	lo, hi []float64
}

func (r ratioCI) YError(i int) (float64, float64) { return r.lo[i], r.hi[i] }

func regressPlot(group string, cs []MetricChange, familywise bool) (*plot.Plot, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	p := plot.New()
	level := "95% CIs"
	if familywise {
		level = "CIs 95% family-wise"
	}
	p.Title.Text = fmt.Sprintf("%s: NEW / BASE, %s (grey: the margin around 1; red: changed)", group, level)
	p.Y.Label.Text = "new / base (log)"
	band := marginBand{XYs: make(plotter.XYs, len(cs)), m: make([]float64, len(cs))}
	var ok, bad ratioCI
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Metric
		band.XYs[i] = plotter.XY{X: float64(i), Y: 1}
		band.m[i] = c.Margin
		r, lo, hi := *c.Ratio, *c.Ratio, *c.Ratio
		if c.RatioLo != nil && c.RatioHi != nil {
			lo, hi = *c.RatioLo, *c.RatioHi
		}
		r, lo, hi = math.Max(r, ratioFloor), math.Max(lo, ratioFloor), math.Max(hi, ratioFloor)
		dst := &ok
		if c.Fails() {
			dst = &bad
		}
		dst.XYs = append(dst.XYs, plotter.XY{X: float64(i), Y: r})
		dst.lo = append(dst.lo, r-lo)
		dst.hi = append(dst.hi, hi-r)
	}
	mb, err := plotter.NewYErrorBars(band)
	if err != nil {
		return nil, err
	}
	mb.Color = color.Gray{Y: 180}
	mb.Width = vg.Points(6)
	mb.CapWidth = vg.Points(8)
	p.Add(plotter.NewGrid(), mb)
	for _, s := range []struct {
		r   ratioCI
		col color.Color
	}{{ok, color.Black}, {bad, plotutil.Color(0)}} {
		if len(s.r.XYs) == 0 {
			continue
		}
		eb, err := plotter.NewYErrorBars(s.r)
		if err != nil {
			return nil, err
		}
		eb.Color = s.col
		eb.Width = vg.Points(1.2)
		eb.CapWidth = vg.Points(6)
		sc, err := plotter.NewScatter(s.r.XYs)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Color = s.col
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(eb, sc)
	}
	// At least 0.8-1.25 around 1, so a margin band reads as one; the log scale shows 0.5 and 2 as far
	// from 1.
	p.Y.Min, p.Y.Max = math.Max(math.Min(p.Y.Min, 0.8), ratioFloor), math.Max(p.Y.Max, 1.25)
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, roundLogTicks{}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(cs))-0.4
	p.X.Tick.Label.Rotation = math.Pi / 2
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	return p, nil
}
