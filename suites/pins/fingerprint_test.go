package pins_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/report"
)

// pinned is one scenario's recorded numbers (testdata/<name>.json).
type pinned struct {
	Scenario string             `json:"scenario"`
	Spec     string             `json:"spec"`
	Values   map[string]float64 `json:"values"`
}

// fingerprint is what a scenario pins: named numbers of its run.
type fingerprint map[string]float64

// scenario is a spec plus the options of its run.
type scenario struct {
	name string
	yaml string
	// meterBin > 0 records each flow's delivered bytes per bin (rate trajectories); sample > 0 samples
	// every switch queue at that period.
	meterBin, sample clock.Time
	// extra adds mechanism-specific numbers.
	extra func(f *virtual.Fabric, fp fingerprint)
}

// run builds and runs the scenario's spec as lab run would, and takes its fingerprint.
func (sc scenario) run() (*virtual.Fabric, fingerprint) {
	s, err := spec.Parse([]byte(sc.yaml))
	Expect(err).NotTo(HaveOccurred())
	l, err := lab.Build(s)
	Expect(err).NotTo(HaveOccurred())
	if sc.sample > 0 {
		for i := range l.Switches {
			l.Switches[i].Config.SampleEvery = sc.sample
		}
	}
	f, err := virtual.New(l)
	Expect(err).NotTo(HaveOccurred())
	f.MeterBin = -1
	if sc.meterBin > 0 {
		f.MeterBin = sc.meterBin
	}
	res := f.Run(context.Background())
	sum := report.Summarize(f.Log, report.Meta{Dilation: 1, Duration: res.End, Graph: l.Graph})
	fp := common(f, sum)
	if sc.extra != nil {
		sc.extra(f, fp)
	}
	return f, fp
}

// common are the numbers every scenario pins: flows and their FCTs, drops, violations, retransmissions,
// marks, CNPs, and pause/resume counts and times by direction and relay depth.
func common(f *virtual.Fabric, s *report.Summary) fingerprint {
	fp := fingerprint{
		"flows.completed": float64(s.Flows.Completed), "flows.total": float64(s.Flows.Total),
		"drops.lossless": float64(s.Drops.Lossless), "drops.lossy": float64(s.Drops.Lossy),
		"violations": float64(len(s.Violations)), "retransmissions": float64(s.Retransmissions),
		"ecn_marks": float64(s.ECNMarks), "cnps": float64(s.CNPs), "deadlock": b2f(s.Deadlock.Detected),
	}
	flows := append([]records.Flow(nil), f.Log.Flows...)
	sort.Slice(flows, func(i, j int) bool { return flows[i].ID < flows[j].ID })
	for _, r := range flows {
		fp[fmt.Sprintf("fct_ps.flow%02d", r.ID)] = float64(r.FCT())
	}
	queues := map[string]bool{}
	for _, p := range f.Log.Pauses {
		dir := "recv"
		if p.Sent {
			dir = "sent"
		}
		kind := "resume"
		if p.On {
			kind = "pause"
		}
		k := fmt.Sprintf("pfc.%s.%s", dir, kind)
		fp[k]++
		fp[fmt.Sprintf("%s.hops%d", k, p.Hops)]++
		fp[fmt.Sprintf("%s.queue%d", k, p.Queue)]++
		if p.On {
			queues[fmt.Sprintf("%d/%d/%d/%v", p.Device, p.Port, p.Queue, p.Sent)] = true
			if _, ok := fp["pfc.first_pause_ps"]; !ok {
				fp["pfc.first_pause_ps"] = float64(p.At)
			}
		} else {
			fp["pfc.last_resume_ps"] = float64(p.At)
		}
	}
	fp["pfc.queues_paused"] = float64(len(queues))
	return fp
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// flowRates adds each flow's delivered bytes per meter bin, for the first n bins (its rate trajectory).
func flowRates(f *virtual.Fabric, fp fingerprint, n int) {
	bin := f.Log.MeterBin
	for _, r := range f.Log.FlowRx {
		if i := int(r.At / bin); i < n {
			fp[fmt.Sprintf("rx_bytes.flow%02d.bin%03d", r.Flow, i)] += float64(r.Bytes)
		}
	}
}

// queuePeaks adds each switch port's largest sampled queue (all queues of the port) and the samples
// above and below a threshold.
func queuePeaks(f *virtual.Fabric, fp fingerprint, k int32) {
	for _, q := range f.Log.Samples {
		if q.Queue != -1 || q.Bytes == 0 {
			continue
		}
		key := fmt.Sprintf("queue.dev%d.port%d", q.Device, q.Port)
		if v, ok := fp[key+".peak_bytes"]; !ok || float64(q.Bytes) > v {
			fp[key+".peak_bytes"] = float64(q.Bytes)
		}
		if q.Bytes > k {
			fp[key+".samples_above_k"]++
		} else {
			fp[key+".samples_nonzero_below_k"]++
		}
	}
}

// uplinkSpread adds the bytes each switch sent on each port toward another switch, and per switch how
// many such ports carried any: how ECMP spread the flows over equal-cost uplinks.
func uplinkSpread(f *virtual.Fabric, fp fingerprint) {
	for _, d := range f.Lab.Switches {
		c := f.Switches[d.Node].Counters()
		used := 0
		for p, pc := range c.Ports {
			if d.Config.Ports[p].PeerIsHost || pc.SentBytes == 0 {
				continue
			}
			used++
			fp[fmt.Sprintf("uplink.sw%d.port%d.bytes", d.Node, p)] = float64(pc.SentBytes)
		}
		fp[fmt.Sprintf("uplink.sw%d.ports_used", d.Node)] = float64(used)
	}
}

func pinFile(name string) string { return filepath.Join("testdata", name+".json") }

// pin records fp (PINS_UPDATE=1) or compares it with the recording and fails with a diff.
func pin(sc scenario, fp fingerprint) {
	path := pinFile(sc.name)
	if os.Getenv("PINS_UPDATE") != "" {
		b, err := json.MarshalIndent(pinned{Scenario: sc.name, Spec: strings.TrimSpace(sc.yaml), Values: fp}, "", "  ")
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(path, append(b, '\n'), 0o644)).To(Succeed())
		GinkgoWriter.Printf("recorded %s: %d numbers\n", path, len(fp))
		return
	}
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred(), "no recording for %s: record with PINS_UPDATE=1 ginkgo ./suites/pins", sc.name)
	var want pinned
	Expect(json.Unmarshal(b, &want)).To(Succeed(), path)
	Expect(strings.TrimSpace(sc.yaml)).To(Equal(want.Spec), "%s: the scenario's spec differs from the recorded one: re-record (PINS_UPDATE=1)", path)
	if d := diff(want.Values, fp); d != "" {
		Fail(fmt.Sprintf("%s: this build does not reproduce the recorded numbers (%s). If the change is intended, "+
			"re-record with PINS_UPDATE=1 ginkgo ./suites/pins and commit testdata/ for review.\n%s", sc.name, path, d))
	}
	GinkgoWriter.Printf("%s: %d numbers as recorded\n", sc.name, len(fp))
}

// diff lists every number that differs, is missing or is new, as aligned lines.
func diff(want, got fingerprint) string {
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	var ks []string
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	n := 0
	for _, k := range ks {
		w, okw := want[k]
		g, okg := got[k]
		if okw && okg && w == g {
			continue
		}
		n++
		if n > 40 {
			continue
		}
		switch {
		case !okg:
			fmt.Fprintf(&b, "  %-40s recorded %-14s now (absent)\n", k, num(w))
		case !okw:
			fmt.Fprintf(&b, "  %-40s recorded (absent)     now %s\n", k, num(g))
		default:
			rel := ""
			if w != 0 {
				rel = fmt.Sprintf(" (%+.2f%%)", 100*(g-w)/math.Abs(w))
			}
			fmt.Fprintf(&b, "  %-40s recorded %-14s now %s%s\n", k, num(w), num(g), rel)
		}
	}
	if n == 0 {
		return ""
	}
	if n > 40 {
		fmt.Fprintf(&b, "  ... and %d more\n", n-40)
	}
	return fmt.Sprintf("%d of %d numbers differ:\n%s", n, len(ks), b.String())
}

func num(x float64) string { return fmt.Sprintf("%.10g", x) }
