package lab

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/units"
)

// Budget is the work a lab may take, decided before the work is done: a spec whose topology, routing
// tables or flow schedule would exceed it is refused with the number and the limit, in well under a
// second, instead of running out of memory or time. The defaults are far above every spec in the repo
// (the largest, NDC(8,1) and fat-tree k=8 runs, use under 1% of each) and within what a laptop holds.
type Budget struct {
	Devices      int     // hosts + switches
	TableEntries float64 // routing state: nodes x hosts (lab/route tables, all-pairs statistics)
	Flows        float64 // scheduled flows, every workload together
	Draws        float64 // steps a generator takes (moe: layers x tokens x (experts + top_k))
	MemoryBytes  float64 // estimated: tables, flows and devices
	// Samples bounds the queue samples a run records (lab run --sample-every: duration / period x
	// switch ports), each about 24 B in memory and a line of queues.csv.
	Samples float64
	// Runs bounds the runs one lab run makes of its specs, seeds and sweeps (a run tree), counted
	// before any is expanded: every run is parsed, built and checked before the first starts.
	Runs float64
}

// DefaultBudget is what `lab run` and `lab analyze` use unless --budget raises it.
var DefaultBudget = Budget{Devices: 100_000, TableEntries: 1e8, Flows: 5e6, Draws: 1e8, MemoryBytes: 8e9, Samples: 1e8, Runs: 1e4}

// Bytes each unit of work is estimated to hold (measured on NDC(8,1) and fat-tree k=8 labs: a table
// entry is a []uint8 header, its ports and a distance; a flow its plan and route; a device its
// configuration and port state).
const (
	bytesPerEntry  = 40
	bytesPerFlow   = 400
	bytesPerDevice = 16 << 10
)

// ParseBudget reads "flows=1e7,memory=16GB,devices=2e5,entries=1e9,draws=1e10,samples=1e9,runs=1e5" on
// top of base; "off" lifts every limit.
func ParseBudget(text string, base Budget) (Budget, error) {
	b := base
	text = strings.TrimSpace(text)
	if text == "" {
		return b, nil
	}
	if text == "off" {
		inf := math.Inf(1)
		return Budget{Devices: math.MaxInt, TableEntries: inf, Flows: inf, Draws: inf, MemoryBytes: inf, Samples: inf, Runs: inf}, nil
	}
	for _, kv := range strings.Split(text, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return b, fmt.Errorf("--budget: %q is not key=value (keys: %s)", kv, strings.Join(budgetKeys, ", "))
		}
		if k == "memory" {
			n, err := units.ParseBytes(v)
			if err != nil || n <= 0 {
				return b, fmt.Errorf("--budget memory=%s: want a size such as 16GB", v)
			}
			b.MemoryBytes = float64(n)
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || !(n >= 1) || math.IsInf(n, 0) {
			return b, fmt.Errorf("--budget %s=%s: want a count of at least 1, such as 1e7", k, v)
		}
		switch k {
		case "devices":
			b.Devices = int(min(n, math.MaxInt32))
		case "entries":
			b.TableEntries = n
		case "flows":
			b.Flows = n
		case "draws":
			b.Draws = n
		case "samples":
			b.Samples = n
		case "runs":
			b.Runs = n
		default:
			return b, fmt.Errorf("--budget: unknown key %q (keys: %s)", k, strings.Join(budgetKeys, ", "))
		}
	}
	return b, nil
}

var budgetKeys = func() []string {
	k := []string{"devices", "entries", "flows", "draws", "memory", "samples", "runs"}
	sort.Strings(k)
	return k
}()

// BudgetError is a refusal: what was estimated, the limit, and the --budget key that raises it.
type BudgetError struct {
	Field    string // the spec field the work comes from ("topology", "workload[2]")
	What     string // "devices", "routing table entries", "flows", ...
	Estimate float64
	Limit    float64
	How      string // how the estimate was made
	Key      string // the --budget key
}

func (e *BudgetError) Error() string {
	how := ""
	if e.How != "" {
		how = " (" + e.How + ")"
	}
	return fmt.Sprintf("%s: about %s %s%s, more than the budget of %s; raise it with --budget %s=N if you mean it",
		e.Field, fmtCount(e.Estimate), e.What, how, fmtCount(e.Limit), e.Key)
}

func fmtCount(v float64) string {
	if v < 1e7 && v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// BuildTopology builds a topology within b's devices, refused from its parameters before it is built
// (topo.BuildWithin) with the budget's error, naming the flag that raises it.
func BuildTopology(family string, params map[string]string, b Budget) (*topo.Graph, error) {
	g, err := topo.BuildWithin(family, params, b.Devices)
	var tm *topo.TooManyDevices
	if errors.As(err, &tm) {
		how := tm.How
		est := tm.Estimate
		if est == 0 {
			est, how = float64(tm.Limit)+1, "the builder stopped at the limit"
		}
		return nil, &BudgetError{Field: "topology", What: "devices", Estimate: est, Limit: float64(b.Devices),
			How: family + ": " + how, Key: "devices"}
	}
	return g, err
}

// checkTopology checks devices, routing tables and memory once the graph exists, before any
// all-pairs computation.
func (b Budget) checkTopology(nodes, hosts int) error {
	entries := float64(nodes) * float64(hosts)
	switch {
	case nodes > b.Devices:
		return &BudgetError{Field: "topology", What: "devices", Estimate: float64(nodes), Limit: float64(b.Devices), Key: "devices"}
	case entries > b.TableEntries:
		return &BudgetError{Field: "topology", What: "routing table entries", Estimate: entries, Limit: b.TableEntries,
			How: fmt.Sprintf("%d nodes x %d hosts", nodes, hosts), Key: "entries"}
	}
	if mem := entries*bytesPerEntry + float64(nodes)*bytesPerDevice; mem > b.MemoryBytes {
		return &BudgetError{Field: "topology", What: "bytes of memory", Estimate: mem, Limit: b.MemoryBytes,
			How: "routing tables and devices", Key: "memory"}
	}
	return nil
}

// work tracks flows across workloads.
type work struct {
	b        Budget
	flows    float64
	baseMem  float64 // tables and devices
	numHosts int
}

// add charges one workload's estimated flows (and draws), refusing before it is generated.
func (w *work) add(field string, flows float64, how string, draws float64) error {
	if draws > w.b.Draws {
		return &BudgetError{Field: field, What: "generator steps", Estimate: draws, Limit: w.b.Draws, How: how, Key: "draws"}
	}
	if !(flows >= 0) { // NaN from a degenerate estimate: let the generator report the parameters
		return nil
	}
	w.flows += flows
	if w.flows > w.b.Flows {
		return &BudgetError{Field: field, What: "flows", Estimate: w.flows, Limit: w.b.Flows, How: how, Key: "flows"}
	}
	if mem := w.baseMem + w.flows*bytesPerFlow; mem > w.b.MemoryBytes {
		return &BudgetError{Field: field, What: "bytes of memory", Estimate: mem, Limit: w.b.MemoryBytes,
			How: "routing tables, devices and flows", Key: "memory"}
	}
	return nil
}

// Bytes a queue sample holds (records.QueueSample: time, device, port, queue, bytes) and a byte meter's
// bin (an int64).
const (
	bytesPerSample   = 24
	bytesPerMeterBin = 8
)

// CheckSamples refuses sampling l's queues every period when the samples would exceed the budget: at
// least one per switch port per period (a queue holding bytes adds one), over the run's duration; and,
// since the virtual backend's link meters bin at the same period, a bin per link direction per period
// counts against memory too. field names the setting in the error (e.g. "--sample-every 1ps").
func (b Budget) CheckSamples(l *Lab, period clock.Time, field string) error {
	if period <= 0 {
		return nil
	}
	ports := 0
	for _, sw := range l.Switches {
		ports += len(l.Graph.Nodes[sw.Node].Ports)
	}
	ticks := float64(l.End) / float64(period)
	n := ticks * float64(ports)
	how := fmt.Sprintf("duration %v / %v x %d switch ports", l.End, period, ports)
	if n > b.Samples {
		return &BudgetError{Field: field, What: "queue samples", Estimate: n, Limit: b.Samples, How: how, Key: "samples"}
	}
	if mem := n*bytesPerSample + ticks*float64(2*len(l.Graph.Links))*bytesPerMeterBin; mem > b.MemoryBytes {
		return &BudgetError{Field: field, What: "bytes of memory", Estimate: mem, Limit: b.MemoryBytes,
			How: "queue samples and link meter bins", Key: "memory"}
	}
	return nil
}
