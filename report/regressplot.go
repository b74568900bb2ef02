package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WriteRegressPlots draws, per group, every ratio new/base with its 95% CI (black) next to the margin
// (grey band around 1), changed metrics in red: compare_<group>.png and .svg in dir. Metrics whose base
// is 0 (no ratio) are left out. It returns the files written.
func WriteRegressPlots(dir string, rg *Regression) ([]string, error) {
	var groups []string
	by := map[string][]MetricChange{}
	for _, c := range rg.Changes {
		if c.Ratio == nil {
			continue
		}
		if _, ok := by[c.Group]; !ok {
			groups = append(groups, c.Group)
		}
		by[c.Group] = append(by[c.Group], c)
	}
	var files []string
	for _, g := range groups {
		p, err := regressPlot(g, by[g], rg.Each != rg.Level)
		if err != nil {
			return files, fmt.Errorf("compare plot %s: %w", g, err)
		}
		w := vg.Length(math.Max(7, 0.22*float64(len(by[g])))) * vg.Inch
		for _, ext := range []string{".png", ".svg"} {
			f := filepath.Join(dir, "compare_"+fileSafe(g)+ext)
			if err := p.Save(w, 5*vg.Inch, f); err != nil {
				return files, fmt.Errorf("%s: %w", f, err)
			}
			files = append(files, f)
		}
	}
	return files, nil
}

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
	p := plot.New()
	level := "95% CIs"
	if familywise {
		level = "CIs 95% family-wise"
	}
	p.Title.Text = fmt.Sprintf("%s: NEW / BASE, %s (grey: the margin around 1; red: changed)", group, level)
	p.Y.Label.Text = "new / base"
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
	if s := p.Y.Max - p.Y.Min; s < 0.1 {
		p.Y.Min, p.Y.Max = math.Min(p.Y.Min, 0.95), math.Max(p.Y.Max, 1.05)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(cs))-0.4
	p.X.Tick.Label.Rotation = math.Pi / 2
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	return p, nil
}
