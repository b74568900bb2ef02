package claims

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fabriclab/fabriclab/report"
)

// UpdateAnalyze refreshes every row whose Source has an Analyze glob matching files under dirs (the
// matches of all dirs together, each file once): one file is one topology instance, so the mean and
// 95% interval are over the files and TopologySeeds is their count. A row whose glob matches nothing
// keeps its numbers (its outputs are elsewhere); a matched file without a number at Field is an error,
// so a stale source cannot pass silently. It returns the ids it refreshed and the files it read.
func UpdateAnalyze(cs []Claim, dirs []string, provenance string) (ids, read []string, err error) {
	seen := map[string]bool{}
	for i := range cs {
		c := &cs[i]
		if c.Source == nil || c.Source.Analyze == "" {
			continue
		}
		files, err := globAll(dirs, c.Source.Analyze)
		if err != nil {
			return ids, read, fmt.Errorf("claim %s: %w", c.ID, err)
		}
		if len(files) == 0 {
			continue
		}
		xs := make([]float64, len(files))
		for k, f := range files {
			if xs[k], err = fieldOf(f, c.Source.Field); err != nil {
				return ids, read, fmt.Errorf("claim %s: %w", c.ID, err)
			}
			if !seen[f] {
				seen[f] = true
				read = append(read, f)
			}
		}
		c.setMeasured(report.MeanCI(xs, report.Level), provenance)
		// An LP or a path count has no traffic randomness: one run per topology instance.
		c.Seeds, c.TopologySeeds = 1, len(xs)
		ids = append(ids, c.ID)
	}
	return ids, read, nil
}

// globAll is pattern's matches under every dir, each file once, sorted.
func globAll(dirs []string, pattern string) ([]string, error) {
	set := map[string]bool{}
	for _, d := range dirs {
		m, err := filepath.Glob(filepath.Join(d, pattern))
		if err != nil {
			return nil, fmt.Errorf("analyze %q: %w", pattern, err)
		}
		for _, f := range m {
			set[filepath.Clean(f)] = true
		}
	}
	files := make([]string, 0, len(set))
	for f := range set {
		files = append(files, f)
	}
	sort.Strings(files)
	return files, nil
}

// fieldOf reads the number at a dotted path ("updown_paths.4", "lp_throughput") in a JSON file.
func fieldOf(file, field string) (float64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	for _, k := range strings.Split(field, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return 0, fmt.Errorf("%s: no field %s (%q is not inside an object)", file, field, k)
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
