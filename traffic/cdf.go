package traffic

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/fabriclab/fabriclab/bounded"
	"github.com/fabriclab/fabriclab/units"
)

// SizeDist is a flow-size distribution: a sampler and its true mean (the mean the load formula uses).
type SizeDist interface {
	Sample(r *rand.Rand) int64
	Mean() float64
	// CDF is P(size <= x) of the continuous distribution the sampler draws from (before rounding to
	// whole bytes), for goodness-of-fit tests.
	CDF(x float64) float64
}

// CDF (an empirical distribution: websearch, hadoop, ...), Pareto and Fixed implement SizeDist.
var (
	_ SizeDist = (*CDF)(nil)
	_ SizeDist = Pareto{}
	_ SizeDist = Fixed(0)
)

// CDF is a piecewise-linear flow-size distribution given by points (Size[i], Cum[i]), Cum rising from 0
// to 1. Sizes are drawn by inverse transform with linear interpolation between points, as the HPCC
// simulator's traffic generator does (traffic_gen/custom_rand.py), so means and samples match its files.
type CDF struct {
	Name string
	Size []float64
	Cum  []float64 // fractions in [0, 1]
}

// Built-in distributions (sources per entry below; PortFC paper §V-A, expander thesis §4.3.1), cumulative in percent
// as in the HPCC files.
var builtin = map[string][][2]float64{
	// HPCC traffic_gen/WebSearch_distribution.txt (DCTCP web search). Mean 1.71 MB with interpolation.
	"websearch": {{0, 0}, {10000, 15}, {20000, 20}, {30000, 30}, {50000, 40}, {80000, 53}, {200000, 60},
		{1000000, 70}, {2000000, 80}, {5000000, 90}, {10000000, 97}, {30000000, 100}},
	// HPCC traffic_gen/FbHdp_distribution.txt (Facebook Hadoop). Mean ~120 KB.
	"hadoop": {{0, 0}, {100, 1}, {200, 2}, {300, 5}, {350, 15}, {400, 20}, {500, 30}, {600, 40}, {700, 50},
		{1000, 60}, {2000, 67}, {7000, 70}, {30000, 72}, {50000, 82}, {80000, 87}, {120000, 90}, {300000, 95},
		{1000000, 97.5}, {2000000, 99}, {10000000, 100}},
	// VL2 data mining, the points pFabric's simulations and netbench use.
	"datamining": {{0, 0}, {180, 10}, {216, 20}, {560, 30}, {900, 40}, {1100, 50}, {1870, 60}, {3160, 70},
		{10000, 80}, {400000, 90}, {3160000, 95}, {100000000, 98}, {1000000000, 100}},
	// VL2 data mining as CONGA/LetFlow/ConWeave ship it (workloads/mining.txt).
	"datamining-alt": {{100, 0}, {10000, 80}, {152522, 83.46}, {390541, 90}, {3223542, 95.3846},
		{100000000, 99}, {1000000000, 100}},
	// HPCC traffic_gen/AliStorage2019.txt. The PortFC paper's Storage CDF is not identified (PortFC paper
	// §V-A); this is the candidate, mean ~41 KB.
	"storage": {{0, 0}, {4000, 22.93}, {8000, 69.21}, {16000, 80.61}, {32000, 90.47}, {64000, 93.53},
		{128000, 96.77}, {256000, 97.53}, {2000000, 100}},
}

// BuiltinCDFs lists the names Builtin accepts (pareto is Pareto, not a CDF).
func BuiltinCDFs() []string {
	names := make([]string, 0, len(builtin))
	for n := range builtin {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Builtin returns a built-in CDF by name.
func Builtin(name string) (*CDF, error) {
	pts, ok := builtin[name]
	if !ok {
		return nil, fmt.Errorf("cdf %q is not built in (built in: %s)", name, strings.Join(BuiltinCDFs(), ", "))
	}
	c := &CDF{Name: name}
	for _, p := range pts {
		c.Size = append(c.Size, p[0])
		c.Cum = append(c.Cum, p[1]/100)
	}
	return c, c.check()
}

// ParseCDF reads a CDF in the HPCC format: one "size cumulative-percent" pair per line, ascending, the
// last at 100. Blank lines and lines starting with # are skipped. A file whose last value is 1 (ConWeave
// writes fractions) is read as fractions.
func ParseCDF(name string, r io.Reader) (*CDF, error) {
	c := &CDF{Name: name}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		f := strings.Fields(t)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"size cumulative-percent\", got %q", name, line, t)
		}
		s, err1 := strconv.ParseFloat(f[0], 64)
		p, err2 := strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s:%d: %q is not two numbers", name, line, t)
		}
		c.Size = append(c.Size, s)
		c.Cum = append(c.Cum, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if n := len(c.Cum); n > 0 && c.Cum[n-1] == 100 {
		for i := range c.Cum {
			c.Cum[i] /= 100
		}
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// LoadCDF reads a CDF file (ParseCDF).
func LoadCDF(path string) (*CDF, error) {
	f, err := bounded.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseCDF(path, bounded.Reader(f, path, bounded.CDF))
}

// Format writes c in the HPCC format ParseCDF reads: "size cumulative-percent" per line.
func (c *CDF) Format(w io.Writer) error {
	for i := range c.Size {
		if _, err := fmt.Fprintf(w, "%s %s\n", strconv.FormatFloat(c.Size[i], 'g', -1, 64), strconv.FormatFloat(c.Cum[i]*100, 'g', -1, 64)); err != nil {
			return err
		}
	}
	return nil
}

func (c *CDF) check() error {
	n := len(c.Size)
	if n < 2 {
		return fmt.Errorf("a CDF needs at least two points, got %d", n)
	}
	for i := range c.Size {
		// An infinite size would make Sample loop on ever larger flows; the range is units'.
		if !(c.Size[i] >= 0 && c.Size[i] <= float64(units.MaxBytes)) || !(c.Cum[i] >= 0 && c.Cum[i] <= 1) {
			return fmt.Errorf("point %d (%v, %v): sizes must be in [0, %d] bytes and cumulative values in [0, 100]", i+1, c.Size[i], c.Cum[i]*100, units.MaxBytes)
		}
		if i > 0 && (c.Size[i] < c.Size[i-1] || c.Cum[i] < c.Cum[i-1]) {
			return fmt.Errorf("point %d (%v, %v): sizes and cumulative values must not decrease", i+1, c.Size[i], c.Cum[i]*100)
		}
	}
	if c.Cum[n-1] != 1 {
		return fmt.Errorf("the last cumulative value is %v, want 100", c.Cum[n-1]*100)
	}
	if c.Size[n-1] < 1 {
		return fmt.Errorf("the largest size is %v bytes: flows need at least one byte", c.Size[n-1])
	}
	return nil
}

// Sample draws a size: u uniform in [0,1), then the size where the piecewise-linear CDF reaches u,
// rounded to a whole byte (at least 1).
func (c *CDF) Sample(r *rand.Rand) int64 {
	return max(int64(math.Round(c.Quantile(r.Float64()))), 1)
}

// Quantile is the inverse of the piecewise-linear CDF.
func (c *CDF) Quantile(u float64) float64 {
	i := sort.SearchFloat64s(c.Cum, u) // first point with Cum >= u
	if i == 0 {
		return c.Size[0]
	}
	if i >= len(c.Cum) {
		return c.Size[len(c.Size)-1]
	}
	c0, c1 := c.Cum[i-1], c.Cum[i]
	if c1 == c0 {
		return c.Size[i]
	}
	return c.Size[i-1] + (u-c0)/(c1-c0)*(c.Size[i]-c.Size[i-1])
}

// Mean is the mean of the piecewise-linear distribution: each segment contributes its probability times
// its midpoint (and a first point with Cum > 0 is an atom at its size).
func (c *CDF) Mean() float64 {
	m := c.Size[0] * c.Cum[0]
	for i := 1; i < len(c.Size); i++ {
		m += (c.Cum[i] - c.Cum[i-1]) * (c.Size[i] + c.Size[i-1]) / 2
	}
	return m
}

// CDF is P(size <= x).
func (c *CDF) CDF(x float64) float64 {
	n := len(c.Size)
	if x < c.Size[0] {
		return 0
	}
	if x >= c.Size[n-1] {
		return 1
	}
	i := sort.Search(n, func(i int) bool { return c.Size[i] > x }) // first point beyond x
	s0, s1 := c.Size[i-1], c.Size[i]
	return c.Cum[i-1] + (x-s0)/(s1-s0)*(c.Cum[i]-c.Cum[i-1])
}

// Pareto is HULL's Pareto flow sizes (expander thesis §4.3.1): scale x_m = mean(shape-1)/shape, draw
// x_m / U^(1/shape), cap each draw. Mean is the mean of the capped distribution, which is what the load
// formula must use: with shape 1.05, mean 100 KB and a 1 GB cap it is ~48.6 KB, not 100 KB.
type Pareto struct {
	Shape   float64
	Nominal float64 // the uncapped mean the parameters are given by
	Cap     float64
}

func (p Pareto) xm() float64 { return p.Nominal * (p.Shape - 1) / p.Shape }

// Check reports parameters the sampler cannot use.
func (p Pareto) Check() error {
	switch {
	case !(p.Shape > 1):
		return fmt.Errorf("pareto shape %v must exceed 1", p.Shape)
	case !(p.Nominal > 0):
		return fmt.Errorf("pareto mean %v must be positive", p.Nominal)
	case !(p.Cap >= p.xm()):
		return fmt.Errorf("pareto cap %v is below the scale %v", p.Cap, p.xm())
	}
	return nil
}

func (p Pareto) Sample(r *rand.Rand) int64 {
	u := 1 - r.Float64() // (0, 1]
	x := math.Min(p.xm()/math.Pow(u, 1/p.Shape), p.Cap)
	return max(int64(math.Round(x)), 1)
}

// Mean is E[min(X, Cap)] = mean - x_m^shape Cap^(1-shape) / (shape-1).
func (p Pareto) Mean() float64 {
	xm := p.xm()
	return p.Nominal - math.Pow(xm, p.Shape)*math.Pow(p.Cap, 1-p.Shape)/(p.Shape-1)
}

func (p Pareto) CDF(x float64) float64 {
	switch {
	case x < p.xm():
		return 0
	case x >= p.Cap:
		return 1
	}
	return 1 - math.Pow(p.xm()/x, p.Shape)
}

// Fixed is a degenerate distribution: every flow has the same size.
type Fixed int64

func (f Fixed) Sample(*rand.Rand) int64 { return int64(f) }
func (f Fixed) Mean() float64           { return float64(f) }
func (f Fixed) CDF(x float64) float64 {
	if x >= float64(f) {
		return 1
	}
	return 0
}
