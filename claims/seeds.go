package claims

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fabriclab/fabriclab/bounded"
	"github.com/fabriclab/fabriclab/outfile"
	"github.com/fabriclab/fabriclab/report"
)

// SeedFile is a run tree cut down to what rows read from it: per group (as lab report labels it), the
// seeds of its finished runs and, per metric, one value per seed in the same order. Run trees are
// hundreds of MB; this is a few KB and lets the table be regenerated offline (docs/claims-data/runs/).
type SeedFile struct {
	// Provenance is what ran the trees (date, backend, cost); rows refreshed from the file take it.
	Provenance string `json:"provenance"`
	// Commit is the build the trees were run with (lab claims --commit); rows refreshed from the file
	// take it.
	Commit string               `json:"commit,omitempty"`
	Groups map[string]SeedGroup `json:"groups"`
}

// SeedGroup is one group's runs: Metrics[m][i] is metric m of the run with seed Seeds[i].
type SeedGroup struct {
	Seeds   []int64              `json:"seeds"`
	Metrics map[string][]float64 `json:"metrics"`
}

// LinkUtilPrefix names the utilisation of one link class ("link_util.hbd"): a metric of the link
// meters, not of summary.json (report.LinkClassUtil).
const LinkUtilPrefix = "link_util."

// PortUtilPrefix names a percentile of the expander thesis' port utilisation ("port_util.net_p999",
// "port_util.server_p99", "port_util.net_max"): over ports of each one's whole-run mean
// (report.PortUtilOf), or with a window suffix (".w1ms") over ports x windows (report.WindowedUtilOf).
const PortUtilPrefix = "port_util."

// NewSeedFile reads metrics off every run of t. A tree with runs that did not finish is refused: the
// file would silently hold fewer seeds than the command that made it ran.
func NewSeedFile(t *report.Tree, metrics []string, provenance string) (*SeedFile, error) {
	if len(t.Skipped) > 0 {
		return nil, fmt.Errorf("%d runs did not finish (first: %s)", len(t.Skipped), t.Skipped[0])
	}
	if len(metrics) == 0 {
		return nil, fmt.Errorf("no metrics to keep")
	}
	f := &SeedFile{Provenance: provenance, Groups: map[string]SeedGroup{}}
	for _, g := range t.Groups {
		if _, dup := f.Groups[g.Label()]; dup {
			return nil, fmt.Errorf("group %q twice", g.Label())
		}
		sg := SeedGroup{Seeds: append([]int64(nil), g.Seeds...), Metrics: map[string][]float64{}}
		for _, m := range metrics {
			for _, r := range g.Runs {
				v, err := runMetric(r, m)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", r.Dir, err)
				}
				sg.Metrics[m] = append(sg.Metrics[m], v)
			}
		}
		f.Groups[g.Label()] = sg
	}
	return f, nil
}

// runMetric is one run's metric: a summary metric, or a link class's utilisation from the meters.
func runMetric(r *report.Run, name string) (float64, error) {
	if class, ok := strings.CutPrefix(name, LinkUtilPrefix); ok {
		if err := r.LoadMeters(); err != nil {
			return 0, err
		}
		u, err := report.LinkClassUtil(r, class)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		return u, nil
	}
	if spec, ok := strings.CutPrefix(name, PortUtilPrefix); ok {
		return portUtil(r, name, spec)
	}
	v, ok := r.Metric(name)
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("no metric %q (a summary metric, or %s<link class>)", name, LinkUtilPrefix)
	}
	return v, nil
}

// Save writes the file, indented, groups in name order (encoding/json sorts map keys).
func (f *SeedFile) Save(path string) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return outfile.WriteBytes(path, outfile.Replace, append(b, '\n'))
}

// findSeedFile is the seed file at rel under exactly one of dirs ("" when under none).
func findSeedFile(dirs []string, rel string) (string, error) {
	found := ""
	for _, d := range dirs {
		p := filepath.Clean(filepath.Join(d, rel))
		if _, err := os.Stat(p); err != nil {
			continue
		}
		// Inside the directory given, links followed: never ../../dev/zero or /etc/passwd.
		if _, err := bounded.Within(d, rel); err != nil {
			return "", fmt.Errorf("seeds %w", err)
		}
		if found != "" && found != p {
			return "", fmt.Errorf("seeds %q is both %s and %s", rel, found, p)
		}
		found = p
	}
	return found, nil
}

// loadSeedFile reads a seed file and checks that every metric has one value per seed.
func loadSeedFile(path string) (*SeedFile, error) {
	b, err := bounded.ReadFile(path, bounded.Claims)
	if err != nil {
		return nil, err
	}
	var f SeedFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for name, g := range f.Groups {
		for m, xs := range g.Metrics {
			if len(xs) != len(g.Seeds) {
				return nil, fmt.Errorf("%s: group %q: %d values of %s for %d seeds", path, name, len(xs), m, len(g.Seeds))
			}
		}
	}
	return &f, nil
}

// seedValues is the source's value per seed of its group in f: the metric, divided by the Over group's
// of the same seed when Over is set (not yet through offset and scale). Every seed of the group must have its
// partner: a pair missing is an error, not a smaller sample.
func seedValues(f *SeedFile, path string, s *Source) ([]float64, error) {
	num, err := f.metric(path, s.Group, s.Metric)
	if err != nil {
		return nil, err
	}
	var den map[int64]float64
	if s.Over != "" {
		if den, err = f.metric(path, s.Over, s.Metric); err != nil {
			return nil, err
		}
	}
	seeds := make([]int64, 0, len(num))
	for seed := range num {
		seeds = append(seeds, seed)
	}
	sort.Slice(seeds, func(i, j int) bool { return seeds[i] < seeds[j] })
	xs := make([]float64, 0, len(seeds))
	for _, seed := range seeds {
		x := num[seed]
		if s.Over != "" {
			y, ok := den[seed]
			if !ok || y == 0 {
				return nil, fmt.Errorf("%s: %q seed %d has no non-zero %s of %q to divide by", path, s.Group, seed, s.Metric, s.Over)
			}
			x /= y
		}
		xs = append(xs, x)
	}
	return xs, nil
}

// metric is one group's metric by seed.
func (f *SeedFile) metric(path, group, metric string) (map[int64]float64, error) {
	g, ok := f.Groups[group]
	if !ok {
		names := make([]string, 0, len(f.Groups))
		for n := range f.Groups {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%s: no group %q (groups: %s)", path, group, strings.Join(names, "; "))
	}
	xs, ok := g.Metrics[metric]
	if !ok {
		return nil, fmt.Errorf("%s: group %q has no metric %q", path, group, metric)
	}
	out := make(map[int64]float64, len(xs))
	for i, x := range xs {
		out[g.Seeds[i]] = x
	}
	return out, nil
}

// scaled is x through the source's offset and scale (scale 0 is 1).
func scaled(x float64, s *Source) float64 {
	k := s.Scale
	if k == 0 {
		k = 1
	}
	return (x + s.Offset) * k
}

// scaledCI is ci's mean and interval through s's offset and scale, the interval's ends in order (a
// negative scale turns it round).
func scaledCI(ci report.CI, s *Source) (mean, lo, hi float64) {
	lo, hi = scaled(ci.Lo, s), scaled(ci.Hi, s)
	return scaled(ci.Mean, s), math.Min(lo, hi), math.Max(lo, hi)
}

// readSeeds is source s's value per seed from its per-seed file under dirs, the file's path ("": under
// none of dirs) and the file itself (its provenance and commit).
func readSeeds(dirs []string, s *Source) (xs []float64, path string, f *SeedFile, err error) {
	p, err := findSeedFile(dirs, s.Seeds)
	if err != nil || p == "" {
		return nil, "", nil, err
	}
	if f, err = loadSeedFile(p); err != nil {
		return nil, "", nil, err
	}
	if xs, err = seedValues(f, p, s); err != nil {
		return nil, "", nil, err
	}
	return xs, p, f, nil
}

// UpdateSeeds refreshes every row whose source reads a per-seed file found under dirs: the mean and
// 95% interval over the group's seeds, Seeds their count, and the file's provenance and commit. A row whose file
// is under none of dirs keeps its numbers. It returns the ids it refreshed and the files it read.
func UpdateSeeds(cs []Claim, dirs []string) (ids, read []string, err error) {
	for i := range cs {
		c := &cs[i]
		if c.Source == nil || c.Source.Seeds == "" {
			continue
		}
		xs, p, f, err := readSeeds(dirs, c.Source)
		if err != nil {
			return ids, read, fmt.Errorf("claim %s: %w", c.ID, err)
		}
		if p == "" {
			continue
		}
		c.setMeasured(report.MeanCI(xs, report.Level), f.Provenance)
		c.Commit = f.Commit
		c.Seeds = len(xs)
		if c.TopologySeeds == 0 {
			c.TopologySeeds = 1
		}
		ids, read = append(ids, c.ID), append(read, p)
	}
	return ids, read, nil
}

// portUtil is a PortUtilPrefix metric of r: spec is "<net|server>_<p99|p999|max>[.w<duration>]".
func portUtil(r *report.Run, name, spec string) (float64, error) {
	spec, win, windowed := strings.Cut(spec, ".w")
	side, q, _ := strings.Cut(spec, "_")
	quant := map[string]float64{"p99": 0.99, "p999": 0.999, "max": 1}[q]
	if (side != "net" && side != "server") || quant == 0 {
		return 0, fmt.Errorf("%s: want %s<net|server>_<p99|p999|max>[.w<window>]", name, PortUtilPrefix)
	}
	if err := r.LoadMeters(); err != nil {
		return 0, err
	}
	var xs []float64
	if windowed {
		d, err := time.ParseDuration(win)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%s: window %q: want a duration such as 1ms", name, win)
		}
		u, ok := report.WindowedUtilOf(r, d.Seconds())
		if !ok {
			return 0, fmt.Errorf("%s: no link meters (run with --meters)", name)
		}
		xs = map[bool][]float64{true: u.Network, false: u.Server}[side == "net"]
	} else {
		u, ok := report.PortUtilOf(r)
		if !ok {
			return 0, fmt.Errorf("%s: no link meters (run with --meters)", name)
		}
		xs = map[bool][]float64{true: u.Network, false: u.Server}[side == "net"]
	}
	return report.NearestRank(xs, quant), nil
}
