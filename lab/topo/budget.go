package topo

import (
	"fmt"
	"math"
	"strconv"
)

// TooManyDevices is a topology refused for its size before it is built: Estimate devices (hosts and
// switches) from its parameters (How says how), more than Limit.
type TooManyDevices struct {
	Family   string
	Estimate float64 // 0: not estimated; the builder passed Limit devices
	How      string
	Limit    int
}

func (e *TooManyDevices) Error() string {
	if e.Estimate == 0 {
		return fmt.Sprintf("%s: more than %d devices (the builder stopped there)", e.Family, e.Limit)
	}
	return fmt.Sprintf("%s: about %.6g devices (%s), more than %d", e.Family, e.Estimate, e.How, e.Limit)
}

// estimators give a family's device count from its parameters, before anything is allocated (a
// fat-tree k=200 is 2 M hosts: 8-14 s and 2 GB to build only to be refused). Families without one
// (small fixed ones, fc, fcplus, file) are stopped by the builder's own count instead (Builder.limit).
var estimators = map[string]func(p *params) (float64, string, error){
	"fattree": func(p *params) (float64, string, error) {
		k, err := p.int("k", 2)
		x := float64(k)
		return x*x*x/4 + 5*x*x/4, "k^3/4 hosts + 5k^2/4 switches", err
	},
	"dragonfly": func(p *params) (float64, string, error) {
		hp, err := p.int("p", 1)
		if err != nil {
			return 0, "", err
		}
		a, err := p.int("a", 1)
		if err != nil {
			return 0, "", err
		}
		h, err := p.int("h", 1)
		if err != nil {
			return 0, "", err
		}
		g := float64(a)*float64(h) + 1
		if p.has("groups") {
			n, err := p.int("groups", 2)
			if err != nil {
				return 0, "", err
			}
			g = float64(n)
		}
		return g * float64(a) * float64(hp+1), "groups x a switches x (p hosts + 1)", nil
	},
	"ndc": func(p *params) (float64, string, error) {
		n, err := p.int("n", 2)
		if err != nil {
			return 0, "", err
		}
		k, err := p.int("k", 0)
		if err != nil {
			return 0, "", err
		}
		x, kk := float64(n), float64(k)
		return math.Pow(x, kk+1) + (kk+1)*math.Pow(x, kk), "n^(k+1) hosts + (k+1) n^k switches", nil
	},
	"jellyfish":  attached("switches"),
	"xpander":    attached("switches"),
	"randomtree": attached("switches"),
	"chordal":    attached("switches"),
	"ring":       attached("n"),
	"torus": func(p *params) (float64, string, error) {
		x, err := p.int("x", 2)
		if err != nil {
			return 0, "", err
		}
		y, err := p.int("y", 2)
		if err != nil {
			return 0, "", err
		}
		return withHosts(p, float64(x)*float64(y))
	},
}

// attached estimates a switch-centric family whose switch count is the key.
func attached(key string) func(p *params) (float64, string, error) {
	return func(p *params) (float64, string, error) {
		n, err := p.int(key, 1)
		if err != nil {
			return 0, "", err
		}
		return withHosts(p, float64(n))
	}
}

// withHosts adds hosts (hosts=, or hosts_per_switch per switch) to a switch count; a value that does not
// parse counts nothing here (the builder names it).
func withHosts(p *params, switches float64) (float64, string, error) {
	if v, ok := p.m["hosts"]; ok {
		if n, err := strconv.Atoi(v); err == nil && !p.given["hosts_per_switch"] {
			return switches + float64(n), "switches + hosts", nil
		}
	}
	per := 0.0
	if n, err := strconv.Atoi(p.m["hosts_per_switch"]); err == nil {
		per = float64(n)
	}
	return switches * (1 + per), "switches x (1 + hosts_per_switch)", nil
}

// tooMany is what a Builder past its limit panics with; BuildWithin recovers it.
type tooMany struct{ limit int }

// checkDevices is the estimate of p's family against limit.
func checkDevices(p *params, limit int) error {
	est, ok := estimators[p.family]
	if !ok || limit <= 0 {
		return nil
	}
	n, how, err := est(p)
	if err != nil {
		return err
	}
	if n > float64(limit) {
		return &TooManyDevices{Family: p.family, Estimate: n, How: how, Limit: limit}
	}
	return nil
}

// recoverTooMany turns a builder's tooMany panic into err.
func recoverTooMany(family string, err *error) {
	if r := recover(); r != nil {
		t, ok := r.(tooMany)
		if !ok {
			panic(r)
		}
		*err = &TooManyDevices{Family: family, Limit: t.limit}
	}
}
