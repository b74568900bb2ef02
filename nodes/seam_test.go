package nodes

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/egress"
	"github.com/fabriclab/fabriclab/fib"
	"github.com/fabriclab/fabriclab/pkt"
	"github.com/fabriclab/fabriclab/records"
)

// hopLayout is a toy PortFC-like layout: local flows are queued by the egress port their next switch
// will use (PortAhead(1)), relayed data in queue 2, control in 3.
type hopLayout struct{ asked []int }

func (*hopLayout) Queues(int) int  { return 4 }
func (*hopLayout) Control(int) int { return 3 }
func (l *hopLayout) Local(_ int, p *pkt.Packet) int {
	q := p.PortAhead(1)
	l.asked = append(l.asked, q)
	return q
}
func (*hopLayout) Relay(int, *pkt.Packet) int { return 2 }
func (*hopLayout) PFC(int, int) []int         { return nil }

// TestLayoutAndFCHookSeam: a custom layout separates two local flows by their next switch's egress
// port, and a PortFC hook pausing one queue stops only that flow, while the other keeps the line.
func TestLayoutAndFCHookSeam(t *testing.T) {
	clk := clock.NewVirtual()
	tap := &tlink{clk: clk, delay: us, to: discard{}}
	lay := &hopLayout{}
	var hooked []*pkt.Packet
	plug := Plugins{Layout: lay, OnPortFC: func(n *NIC, port int, p *pkt.Packet) {
		hooked = append(hooked, p)
		n.PauseQueue(port, int(p.FCQueue), p.FCPause)
		n.PauseQueue(port, n.layout.Control(port), true) // must be ignored: control is never paused
		n.SendControl(port, &pkt.Packet{Kind: pkt.PortFC, Size: pkt.MinFrame, Src: -1, Dst: -1})
	}}
	cfg := baseCfg(0, g100, us)
	cfg.RTO = clock.Second
	n, err := NewWith(cfg, clk, []egress.Link{tap}, &records.Log{}, plug)
	if err != nil {
		t.Fatal(err)
	}
	n.StartFlow(Flow{ID: 1, Dst: 1, Size: 1 << 30, Route: []uint8{0, 0}})
	n.StartFlow(Flow{ID: 2, Dst: 2, Size: 1 << 30, Route: []uint8{0, 1}})
	if !reflect.DeepEqual(lay.asked, []int{0, 1}) {
		t.Fatalf("layout asked with next-switch ports %v", lay.asked)
	}
	clk.AfterFunc(10*us, func() {
		n.Receive(0, &pkt.Packet{Kind: pkt.PortFC, Src: -1, Dst: -1, FCQueue: 0, FCPause: true})
	})
	clk.RunUntil(30 * us)
	count := map[uint32]int{}
	fc := 0
	for _, e := range tap.tap {
		if e.at > 11*us && e.p.Kind == pkt.Data {
			count[e.p.Flow]++
		}
		if e.p.Kind == pkt.PortFC {
			fc++
		}
	}
	if len(hooked) != 1 || fc != 1 || count[1] != 0 || count[2] < 200 {
		t.Fatalf("hook calls %d, FC frames sent %d, data after pause %v", len(hooked), fc, count)
	}
	if !n.Port(0).Paused(0) || n.Port(0).Frames(0) > DefaultQueueDepth {
		t.Fatalf("paused queue holds %d frames; the NIC must not hoard", n.Port(0).Frames(0))
	}
}

func TestConfigDefaultsValidationAndJSON(t *testing.T) {
	c, err := Config{Ports: []PortConfig{{RateBps: 25e9}}}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Transport != Lossless || c.CC != CCNone || c.MTU != 1000 || c.AckEvery != 1 || c.RTO != 10*clock.Millisecond ||
		c.RTOLow != 100*us || c.RTOHigh != 320*us || c.RTOThreshold != 3 || c.CNPInterval != 50*us ||
		c.DataPrio != 3 || c.DCQCN.G != 1.0/256 || c.DCQCN.AlphaInterval != us || c.DCQCN.DecreaseInterval != 4*us ||
		c.DCQCN.RPTimer != 300*us || c.DCQCN.FastRecoveryTimes != 1 || c.DCQCN.MinRateBps != 1e9 {
		t.Fatalf("defaults %+v", c)
	}
	if ai, hai := c.DCQCN.rateAI(25e9); ai != 5e6 || hai != 50e6 {
		t.Fatalf("AI/HAI at 25G: %g %g", ai, hai)
	}
	for _, bad := range []Config{
		{},
		{Ports: []PortConfig{{RateBps: 0}}},
		{Ports: []PortConfig{{RateBps: 1e9}}, Transport: "tcp"},
		{Ports: []PortConfig{{RateBps: 1e9}}, CC: "hpcc"},
		{Ports: []PortConfig{{RateBps: 1e9}}, FIB: fib.Of([]uint8{3})},
	} {
		if _, err := bad.WithDefaults(); err == nil || !strings.HasPrefix(err.Error(), "nodes: ") {
			t.Fatalf("%+v: err %v", bad, err)
		}
	}
	in := Config{Device: 4, Host: 2, Ports: []PortConfig{{RateBps: 1e11, Delay: us}}, Transport: IRN, CC: CCDCQCN,
		BDPCapBytes: 100_000, Relay: true, FIB: fib.Of([]uint8{0}, []uint8{0}), DCQCN: DCQCN{RPTimer: 900 * us}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Config
	if err := json.Unmarshal(b, &out); err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("JSON round trip: %v\n%s\n%+v", err, b, out)
	}
}

func TestIdealFCTFormula(t *testing.T) {
	// 3000 B over two 100G hops, 1 us each: first packet 1062 B store-and-forwarded twice, the other
	// 2124 B at the bottleneck, ACK (66 B) twice, 4 us of propagation.
	got := IdealFCT(3000, 1000, 2, []float64{g100, g100}, []clock.Time{us, us})
	first := pkt.DataSize(1000, 2)
	want := 2*clock.TxTime(first, g100) + clock.FromSeconds(float64(2*first)*8/g100) + 2*clock.TxTime(pkt.AckSize, g100) + 4*us
	if got != want {
		t.Fatalf("IdealFCT %v want %v", got, want)
	}
}
