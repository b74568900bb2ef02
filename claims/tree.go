package claims

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fabriclab/fabriclab/report"
)

// Update refreshes every row whose Source names a group of t (and, if it names an experiment, whose
// experiment directory is among specs, the tree's spec files): its mean, 95% interval and seed count
// come from the group's runs (cross-run forms paired by seed). It returns the ids it refreshed; a
// named group without the metric is an error, so a stale source cannot pass silently.
func Update(cs []Claim, t *report.Tree, specs []string, provenance string) ([]string, error) {
	groups := map[string]*report.Group{}
	for _, g := range t.Groups {
		groups[g.Label()] = g
	}
	var done []string
	for i := range cs {
		c := &cs[i]
		if c.Source == nil || c.Source.Analyze != "" || c.Source.Seeds != "" || len(c.Source.Count) > 0 {
			continue // not a run tree's row
		}
		g, ok := groups[c.Source.Group]
		if !ok || !fromExperiment(specs, c.Source.Experiment) {
			continue
		}
		ci := t.GroupMeasure(g, c.Source.Metric)
		if ci.N == 0 && strings.Contains(ci.FirstError, "in this report") {
			continue // the tree lacks the baseline this row pairs with: another tree's row
		}
		if ci.N == 0 {
			return done, fmt.Errorf("claim %s: group %q has no %s: %s", c.ID, c.Source.Group, c.Source.Metric, ci.FirstError)
		}
		c.setMeasured(ci, provenance)
		c.Seeds = ci.N
		if c.TopologySeeds == 0 {
			c.TopologySeeds = 1
		}
		done = append(done, c.ID)
	}
	return done, nil
}

// setMeasured stores ci, through the source's offset and scale, as the row's mean and interval (none
// from one value).
func (c *Claim) setMeasured(ci report.CI, provenance string) {
	m, lo, hi := scaledCI(ci, c.Source)
	c.MeasuredMean = &m
	c.CI95 = nil
	if ci.N >= 2 {
		c.CI95 = []float64{lo, hi}
	}
	c.Provenance = provenance
}

// fromExperiment says whether one of the spec paths lies in lab/experiments/<exp>/ (or is the file
// <exp> itself); an empty exp matches any tree.
func fromExperiment(specs []string, exp string) bool {
	if exp == "" {
		return true
	}
	for _, s := range specs {
		if strings.Contains(filepath.ToSlash(s), "/"+exp+"/") || filepath.Base(s) == exp {
			return true
		}
	}
	return false
}
