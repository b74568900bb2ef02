package claims

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fabriclab/fabriclab/bounded"
	"github.com/fabriclab/fabriclab/report"
)

// UpdateAnalyze refreshes every row whose Source has an Analyze glob matching files under dirs (the
// matches of all dirs together): one file is one topology instance, so the mean and 95% interval are
// over the files and TopologySeeds is their count. With Over, each value is divided by the Over file
// whose wildcards matched the same text (the same topology seed). A row whose glob matches nothing
// keeps its numbers (its outputs are elsewhere); a matched file without a number at Field, or without
// its Over partner, is an error, so a stale source cannot pass silently. It returns the ids it
// refreshed and the files it read.
func UpdateAnalyze(cs []Claim, dirs []string, provenance string) (ids, read []string, err error) {
	seen := map[string]bool{}
	for i := range cs {
		c := &cs[i]
		if c.Source == nil || c.Source.Analyze == "" {
			continue
		}
		_, xs, files, err := fileValues(c.Source, dirs)
		if err != nil {
			return ids, read, fmt.Errorf("claim %s: %w", c.ID, err)
		}
		if len(xs) == 0 {
			continue
		}
		for _, f := range files {
			if !seen[f] {
				seen[f] = true
				read = append(read, f)
			}
		}
		if c.Source.Share != "" {
			c.setShare(xs, provenance)
		} else {
			c.setMeasured(report.MeanCI(xs, report.Level), provenance)
		}
		// An LP or a path count has no traffic randomness: one run per topology instance.
		c.Seeds, c.TopologySeeds = 1, len(xs)
		ids = append(ids, c.ID)
	}
	return ids, read, nil
}

// fileValues is the value of s in every file its Analyze glob matches under dirs, keyed by the text
// the wildcards matched (sorted): Field, divided by OverField (default Field) of the Over file of the
// same key when Over is set, or of the same file when only OverField is. It returns the files read.
func fileValues(s *Source, dirs []string) (keys []string, xs []float64, files []string, err error) {
	num, err := globAll(dirs, s.Analyze)
	if err != nil || len(num) == 0 {
		return nil, nil, nil, err
	}
	var den map[string]string
	if s.Over != "" {
		if den, err = globAll(dirs, s.Over); err != nil {
			return nil, nil, nil, err
		}
	}
	for k := range num {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		x, err := fieldOf(num[k], s.Field)
		if err != nil {
			return nil, nil, nil, err
		}
		files = append(files, num[k])
		if s.Over != "" || s.OverField != "" {
			d := num[k]
			if s.Over != "" {
				var ok bool
				if d, ok = den[k]; !ok {
					return nil, nil, nil, fmt.Errorf("%s: no file of %q for %q to divide by", num[k], s.Over, k)
				}
				files = append(files, d)
			}
			y, err := fieldOf(d, overField(s))
			if err != nil {
				return nil, nil, nil, err
			}
			x /= y
		}
		xs = append(xs, x)
	}
	return keys, xs, files, nil
}

// overField is the field an analyze source divides by.
func overField(s *Source) string {
	if s.OverField != "" {
		return s.OverField
	}
	return s.Field
}

// globAll is pattern's matches under every dir, keyed by the text its wildcards matched (the part of
// the name that names the topology seed). The same seed in two places is an error: it would count
// twice.
func globAll(dirs []string, pattern string) (map[string]string, error) {
	pattern = filepath.Clean(pattern)
	pre, suf := pattern, ""
	if i := strings.IndexAny(pattern, "*?[\\"); i >= 0 {
		j := strings.LastIndexAny(pattern, "*?]")
		pre, suf = pattern[:i], pattern[j+1:]
	}
	out := map[string]string{}
	for _, d := range dirs {
		m, err := filepath.Glob(filepath.Join(d, pattern))
		if err != nil {
			return nil, fmt.Errorf("analyze %q: %w", pattern, err)
		}
		for _, f := range m {
			f = filepath.Clean(f)
			// Inside the directory given, links followed: a glob of ../../etc/* reads nothing there.
			abs, err := filepath.Abs(f)
			if err != nil {
				return nil, err
			}
			if _, err := bounded.Within(d, abs); err != nil {
				return nil, fmt.Errorf("analyze %q: %w", pattern, err)
			}
			// lab analyze writes regular files: a FIFO or device matched by the glob is no output of it.
			if fi, err := os.Stat(f); err == nil && !fi.Mode().IsRegular() {
				return nil, fmt.Errorf("analyze %q: %s is not a regular file (a FIFO, device or socket): no output of lab analyze", pattern, f)
			}
			rel, err := filepath.Rel(d, f)
			if err != nil {
				return nil, err
			}
			k := strings.TrimSuffix(strings.TrimPrefix(rel, pre), suf)
			if g, ok := out[k]; ok && g != f {
				return nil, fmt.Errorf("%q matches %s and %s for the same %q", pattern, g, f, k)
			}
			out[k] = f
		}
	}
	return out, nil
}

// fieldOf reads the number at a dotted path ("updown_paths.4", "lp_throughput") in a JSON file; a
// last part "*" sums the numbers of the object it names ("cbd_cycles.*": every priority's cycles).
func fieldOf(file, field string) (float64, error) {
	b, err := bounded.ReadFile(file, bounded.Claims)
	if err != nil {
		return 0, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	parts := strings.Split(field, ".")
	for i, k := range parts {
		obj, ok := v.(map[string]any)
		if !ok {
			return 0, fmt.Errorf("%s: no field %s (%q is not inside an object)", file, field, k)
		}
		if k == "*" && i == len(parts)-1 {
			return sumOf(file, field, obj)
		}
		if v, ok = obj[k]; !ok {
			return 0, fmt.Errorf("%s: no field %s (no %q)", file, field, k)
		}
	}
	x, ok := v.(float64)
	if !ok {
		return 0, fmt.Errorf("%s: field %s is %v, not a number", file, field, v)
	}
	return x, nil
}

// sumOf is the sum of an object's values, every one a number.
func sumOf(file, field string, obj map[string]any) (float64, error) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys) // one order, so the sum is the same bits every time
	sum := 0.0
	for _, k := range keys {
		v := obj[k]
		x, ok := v.(float64)
		if !ok {
			return 0, fmt.Errorf("%s: field %s: %q is %v, not a number", file, field, k, v)
		}
		sum += x
	}
	return sum, nil
}

// setShare stores the percentage of xs (through the source's offset and scale) that satisfy its Share
// condition, with the 95% Wilson score interval of that proportion (none from one file).
func (c *Claim) setShare(xs []float64, provenance string) {
	h, _ := parseHolds(c.Source.Share) // Check parsed it
	k := 0
	for _, x := range xs {
		x = scaled(x, c.Source)
		if h.within(x, x) {
			k++
		}
	}
	n := float64(len(xs))
	p := float64(k) / n
	m := 100 * p
	c.MeasuredMean, c.CI95, c.Provenance = &m, nil, provenance
	if len(xs) >= 2 {
		lo, hi := wilson(p, n)
		c.CI95 = []float64{100 * lo, 100 * hi}
	}
}

// wilson is the 95% Wilson score interval of a proportion p observed over n trials (Wilson 1927): unlike
// the normal approximation it stays inside [0, 1] and is not empty at p = 0 or 1.
func wilson(p, n float64) (lo, hi float64) {
	const z = 1.959963984540054
	d := 1 + z*z/n
	mid := (p + z*z/(2*n)) / d
	half := z * math.Sqrt(p*(1-p)/n+z*z/(4*n*n)) / d
	return math.Max(0, mid-half), math.Min(1, mid+half)
}
