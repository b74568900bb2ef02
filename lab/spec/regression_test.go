package spec

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// regressionDir is the regression set scripts/regress.sh runs (docs/regression.md).
const regressionDir = "../experiments/regression"

// notInRegression are the selectable values the regression set leaves out on purpose, each with why.
var notInRegression = map[string]string{
	"backend=netns":        "the regression set runs on the virtual backend, which repeats a seed bit for bit; the netns backend runs the same engines",
	"transport=kernel-tcp": "kernel hosts are Linux TCP in namespaces (netns backend only), not repeatable seed for seed",
	"cc=cubic":             "kernel-tcp's congestion control (netns backend only)",
	"acks=data":            "htsim's ACK queueing, for the matched comparison (lab/experiments/matched-htsim); switchsw's TestAcksWithDataQueueBehindDataAndArePaused pins it",
}

// selected lists every mechanism a point of a spec selects, as "field=value" (the field's enumeration
// in types.go) or a named feature, only where the value acts: a spread only under a source-routed
// multipath router, a relay PFC mode only on a server-centric fabric under pfc or pfcstar, a CNP mode
// and profile only under DCQCN, a CDF only on a kind that draws sizes from one.
func selected(s *Spec) []string {
	out := []string{"backend=" + s.Backend, "flow_control=" + s.Switch.FlowControl, "transport=" + s.Host.Transport,
		"cc=" + s.Host.CC, "algorithm=" + s.Routing.Algorithm}
	add := func(f string, a ...any) { out = append(out, fmt.Sprintf(f, a...)) }
	switch s.Routing.Algorithm {
	case "ksp", "dfksp", "fc", "updown", "smart":
		add("spread=%s", s.Routing.Spread)
	case "ate":
		m := s.Routing.Measure
		if m == "" {
			m = "inflight"
		}
		add("measure=%s", m)
	case "shortest":
		if s.Routing.FlowletGap > 0 {
			add("feature=ecmp flowlets (routing.flowlet_gap)")
		}
	}
	if s.Switch.Acks == "data" {
		add("acks=data")
	} else {
		add("acks=strict")
	}
	fc := s.Switch.FlowControl
	if s.Topology.Family == "ndc" && (fc == "pfc" || fc == "pfcstar") {
		add("relay_pfc=%s", s.Switch.RelayPFC)
	}
	if s.Host.CC == "dcqcn" {
		add("profile=%s", s.Host.Profile)
		add("cnp=%s", s.Host.CNP)
	}
	switch a := s.Switch.Alpha; {
	case a > 0 && a < 1:
		add("feature=dynamic threshold alpha < 1 under %s", map[bool]string{true: "lossy", false: "lossless"}[fc == "lossy"])
	case a > 1:
		add("feature=dynamic threshold alpha > 1 under %s", map[bool]string{true: "lossy", false: "lossless"}[fc == "lossy"])
	}
	if s.Switch.ECN.ECNEnabled() && !s.Switch.ECN.KMax.IsZero() {
		if s.Switch.ECN.PMax < 1 {
			add("feature=ECN RED ramp (kmin < kmax, pmax < 1)")
		} else {
			add("feature=ECN step marking (pmax 1)")
		}
	}
	if fc == "pfcstar" && s.Switch.Priorities > 1 {
		add("feature=pfcstar tags (priorities > 1)")
	}
	for _, f := range s.Faults {
		add("fault=%s", f.State)
	}
	for _, w := range s.Workload {
		add("workload=%s", w.Kind)
		if w.CDF != "" && !strings.HasPrefix(w.CDF, "file:") {
			add("cdf=%s", w.CDF)
		}
		switch w.Kind {
		case "trace":
			add("trace_format=%s", w.Format)
		case "adv1":
			p := w.Pattern
			if p == "" {
				p = "shift"
			}
			add("adv1_pattern=%s", p)
		case "incast":
			if w.Count > 1 {
				add("feature=repeated incasts (count > 1)")
			}
		}
	}
	return out
}

// selectable is every value a spec can select (types.go and profiles.go enumerations) and the named
// features selected can report.
func selectable() []string {
	var out []string
	for _, e := range []struct {
		field string
		vals  []string
	}{
		{"backend", Backends}, {"flow_control", FlowControls}, {"transport", Transports}, {"cc", CCs},
		{"algorithm", Algorithms}, {"spread", Spreads}, {"measure", ATEMeasures}, {"relay_pfc", RelayPFCModes}, {"acks", AckModes},
		{"profile", ProfileNames}, {"cnp", CNPModes}, {"workload", WorkloadKinds}, {"cdf", CDFs},
		{"trace_format", TraceFormats}, {"adv1_pattern", Adv1Patterns}, {"fault", []string{"down", "up", "set"}},
	} {
		for _, v := range e.vals {
			out = append(out, e.field+"="+v)
		}
	}
	for _, f := range []string{"ecmp flowlets (routing.flowlet_gap)", "dynamic threshold alpha < 1 under lossy",
		"dynamic threshold alpha < 1 under lossless", "dynamic threshold alpha > 1 under lossless",
		"ECN RED ramp (kmin < kmax, pmax < 1)", "ECN step marking (pmax 1)", "pfcstar tags (priorities > 1)",
		"repeated incasts (count > 1)"} {
		out = append(out, "feature="+f)
	}
	return out
}

// TestRegressionSetCoversEveryMechanism: every value of every enumerated spec field, and each named
// feature, acts in at least one point of the regression set, or is listed in notInRegression with why.
// A value added to an enumeration (a new flow-control mode, router, workload) fails here until a
// regression spec selects it.
func TestRegressionSetCoversEveryMechanism(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(regressionDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no regression specs in %s (%v)", regressionDir, err)
	}
	where := map[string][]string{}
	for _, f := range files {
		pts, err := Expand(f, nil, 0)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, p := range pts {
			if p.Spec.Backend != "virtual" {
				t.Errorf("%s: backend %s: the regression set runs on the virtual backend", f, p.Spec.Backend)
			}
			for _, m := range selected(p.Spec) {
				where[m] = append(where[m], strings.TrimSuffix(filepath.Base(f), ".yaml"))
			}
		}
	}
	var missing []string
	for _, m := range selectable() {
		_, excused := notInRegression[m]
		switch {
		case len(where[m]) == 0 && !excused:
			missing = append(missing, m)
		case len(where[m]) > 0 && excused:
			t.Errorf("%s is excused from the regression set (%s) but %v selects it", m, notInRegression[m], where[m])
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("selectable in a spec but in no regression spec (add a spec or a point to %s): %s", regressionDir, strings.Join(missing, "; "))
	}
}
