package report

import (
	"fmt"
	"math"
	"sort"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// PortUtil is the expander thesis' port utilisation (its Figs 4.4-4.17): every output port's mean utilisation over the metered span (first to last link-meter
// bin), split into network ports (switch to switch) and server ports (either end a host, both
// directions), over every such port of the fabric, idle ones at 0. Sorted ascending.
type PortUtil struct {
	Network, Server []float64
	SpanS           float64
	// NetworkBytes is every byte the network ports sent: what a routing spends of the fabric (the
	// thesis' "VLB uses about twice the network capacity" compares it).
	NetworkBytes int64
}

// PortUtilOf computes PortUtil from the run's link meter and topology; false without them.
func PortUtilOf(r *Run) (PortUtil, bool) {
	g := r.Graph
	if g == nil || len(r.Links) == 0 {
		return PortUtil{}, false
	}
	type key struct{ dev, port int }
	start, end := meteredSpan(r)
	var u PortUtil
	u.SpanS = end - start
	if u.SpanS <= 0 {
		return PortUtil{}, false
	}
	busy := map[key]float64{}
	for _, l := range r.Links {
		busy[key{l.Device, l.Port}] += l.Util * l.BinS
		if g.Nodes[l.Device].Kind == topo.Switch && g.Nodes[g.Peer(l.Device, l.Port).Node].Kind == topo.Switch {
			u.NetworkBytes += l.Bytes
		}
	}
	for n, node := range g.Nodes {
		for p := range node.Ports {
			x := busy[key{n, p}] / u.SpanS
			if node.Kind == topo.Host || g.Nodes[g.Peer(n, p).Node].Kind == topo.Host {
				u.Server = append(u.Server, x)
			} else {
				u.Network = append(u.Network, x)
			}
		}
	}
	sort.Float64s(u.Network)
	sort.Float64s(u.Server)
	return u, true
}

// NearestRank is the nearest-rank q-quantile of sorted xs (0 if empty), as the FCT percentiles.
func NearestRank(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

func meanOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(len(xs), 1))
}

// PortUtilTable is PortUtil per run: mean, 99th and 99.9th percentile and max of the network ports,
// mean and 99th percentile of the server ports (the thesis' figures); empty when no run was metered.
func PortUtilTable(runs []*Run) Table {
	t := Table{Title: "port utilisation: each port's mean over the metered span, percentiles over the fabric's ports (expander thesis Figs 4.4-4.17)",
		Header: []string{"run", "span ms", "network ports", "net mean", "net p99", "net p99.9", "net max", "net MB", "server ports", "server mean", "server p99"}}
	for _, r := range runs {
		u, ok := PortUtilOf(r)
		if !ok {
			continue
		}
		f := func(x float64) string { return fmt.Sprintf("%.3f", x) }
		t.Rows = append(t.Rows, []string{r.Name, fmt.Sprintf("%.3f", u.SpanS*1e3), fmt.Sprint(len(u.Network)),
			f(meanOf(u.Network)), f(NearestRank(u.Network, 0.99)), f(NearestRank(u.Network, 0.999)), f(NearestRank(u.Network, 1)),
			fmt.Sprintf("%.1f", float64(u.NetworkBytes)/1e6), fmt.Sprint(len(u.Server)), f(meanOf(u.Server)), f(NearestRank(u.Server, 0.99))})
	}
	return t
}

// meteredSpan is the span of the link meter's bins: the first bin's start to the last one's end.
func meteredSpan(r *Run) (start, end float64) {
	start, end = math.Inf(1), 0.0
	for _, l := range r.Links {
		start = math.Min(start, l.AtS)
		end = math.Max(end, l.AtS+l.BinS)
	}
	return start, end
}

// LinkClassUtil is the mean utilisation of the links of one class (topology.json's class, e.g. the
// Rail-only "hbd"): the bytes they sent, both directions, over what they could have sent at their
// rates in the metered span (first to last link-meter bin, as PortUtilOf). It needs the meters
// (LoadMeters) and at least one link of the class.
func LinkClassUtil(r *Run, class string) (float64, error) {
	g := r.Graph
	if g == nil || len(r.Links) == 0 {
		return 0, fmt.Errorf("no link meters or no topology (run with --meters)")
	}
	start, end := meteredSpan(r)
	var bits, capBps float64
	for i := range g.Links {
		if g.Links[i].Class == class {
			capBps += 2 * g.Links[i].RateBps // both directions
		}
	}
	if capBps == 0 || end <= start {
		return 0, fmt.Errorf("no link of class %q, or an empty metered span", class)
	}
	for _, l := range r.Links {
		if l.Device < len(g.Nodes) && l.Port < len(g.Nodes[l.Device].Ports) && g.LinkAt(l.Device, l.Port).Class == class {
			bits += float64(l.Bytes) * 8
		}
	}
	return bits / (capBps * (end - start)), nil
}

// WindowedUtil is PortUtil over time windows: every network and server port's utilisation in each
// window of the metered span (its busy time in the window over the window's length), one sample per
// port and window, idle ones at 0, sorted ascending. Its 99.9th percentile is a hot-port-and-moment
// figure where PortUtil's is a hot port over the whole run: the thesis' p99.9 port utilisation does not
// say over which span it averages (Figs 4.4f-4.17), so both are offered. The window is rounded up to a
// whole number of meter bins (a bin is the finest the meters know).
type WindowedUtil struct {
	Network, Server []float64
	WindowS         float64
	Windows         int
}

// WindowedUtilOf computes WindowedUtil for windows of windowS seconds; false without meters.
func WindowedUtilOf(r *Run, windowS float64) (WindowedUtil, bool) {
	g := r.Graph
	if g == nil || len(r.Links) == 0 || windowS <= 0 {
		return WindowedUtil{}, false
	}
	start, end := meteredSpan(r)
	bin := r.Links[0].BinS
	if bin <= 0 || end <= start {
		return WindowedUtil{}, false
	}
	w := math.Ceil(windowS/bin-1e-9) * bin
	nw := int(math.Ceil((end-start)/w - 1e-9))
	type key struct{ dev, port, win int }
	busy := map[key]float64{}
	for _, l := range r.Links {
		i := min(int((l.AtS-start)/w+1e-9), nw-1)
		busy[key{l.Device, l.Port, i}] += l.Util * l.BinS
	}
	u := WindowedUtil{WindowS: w, Windows: nw}
	for n, node := range g.Nodes {
		for p := range node.Ports {
			server := node.Kind == topo.Host || g.Nodes[g.Peer(n, p).Node].Kind == topo.Host
			for i := 0; i < nw; i++ {
				span := math.Min(w, end-start-float64(i)*w) // the last window may be shorter
				x := busy[key{n, p, i}] / span
				if server {
					u.Server = append(u.Server, x)
				} else {
					u.Network = append(u.Network, x)
				}
			}
		}
	}
	sort.Float64s(u.Network)
	sort.Float64s(u.Server)
	return u, true
}

// WindowedUtilTable is WindowedUtil per run: the 99th and 99.9th percentile and max over network
// ports and windows, and the 99th percentile over server ports and windows; empty when no run was
// metered.
func WindowedUtilTable(runs []*Run, windowS float64) Table {
	t := Table{Title: fmt.Sprintf("port utilisation per %g ms window: each port's utilisation in each window, percentiles over ports x windows", windowS*1e3),
		Header: []string{"run", "window ms", "windows", "net p99", "net p99.9", "net max", "server p99"}}
	for _, r := range runs {
		u, ok := WindowedUtilOf(r, windowS)
		if !ok {
			continue
		}
		f := func(x float64) string { return fmt.Sprintf("%.3f", x) }
		t.Rows = append(t.Rows, []string{r.Name, fmt.Sprintf("%.3f", u.WindowS*1e3), fmt.Sprint(u.Windows),
			f(NearestRank(u.Network, 0.99)), f(NearestRank(u.Network, 0.999)), f(NearestRank(u.Network, 1)), f(NearestRank(u.Server, 0.99))})
	}
	return t
}
