package report

import (
	"bytes"
	"testing"

	"github.com/fabriclab/fabriclab/records"
)

// TestRecordFilesIndependentOfMergeOrder: the logs of agents on several machines are merged in an order
// that depends on the split; pfc.csv, drops.csv and queues.csv come out byte-identical whichever it
// was, and a device's own records at one instant (a pause and its resume) keep its engine's order.
func TestRecordFilesIndependentOfMergeOrder(t *testing.T) {
	a := []records.Pause{{At: 100, Device: 3, Port: 1, On: true}, {At: 100, Device: 3, Port: 1, On: false}, {At: 200, Device: 3, Port: 0, On: true}}
	b := []records.Pause{{At: 100, Device: 1, Port: 2, On: true, Sent: true}, {At: 150, Device: 1, Port: 2, On: false}}
	da := []records.Drop{{At: 50, Device: 3, Reason: "buffer"}}
	db := []records.Drop{{At: 50, Device: 1, Reason: "buffer"}}
	sa := []records.QueueSample{{At: 10, Device: 3, Bytes: 7}}
	sb := []records.QueueSample{{At: 10, Device: 1, Bytes: 9}}
	files := func(first, second int) (string, string, string) {
		ps := [][]records.Pause{a, b}
		ds := [][]records.Drop{da, db}
		ss := [][]records.QueueSample{sa, sb}
		log := &records.Log{
			Pauses:  append(append([]records.Pause(nil), ps[first]...), ps[second]...),
			Drops:   append(append([]records.Drop(nil), ds[first]...), ds[second]...),
			Samples: append(append([]records.QueueSample(nil), ss[first]...), ss[second]...),
		}
		var p, d, q bytes.Buffer
		if err := WritePausesCSV(&p, log, Meta{}); err != nil {
			t.Fatal(err)
		}
		if err := WriteDropsCSV(&d, log, Meta{}); err != nil {
			t.Fatal(err)
		}
		if err := WriteQueuesCSV(&q, log, Meta{}); err != nil {
			t.Fatal(err)
		}
		return p.String(), d.String(), q.String()
	}
	p1, d1, q1 := files(0, 1)
	p2, d2, q2 := files(1, 0)
	if p1 != p2 || d1 != d2 || q1 != q2 {
		t.Fatalf("merge order shows:\npfc.csv\n%s---\n%s\ndrops.csv\n%s---\n%s\nqueues.csv\n%s---\n%s", p1, p2, d1, d2, q1, q2)
	}
	// Device 1 before device 3 at t=100; device 3's pause before its resume, as logged.
	want := "at_s,device,name,kind,port,queue,pause,sent,hops\n" +
		"1e-10,1,,host,2,0,true,true,0\n1e-10,3,,host,1,0,true,false,0\n1e-10,3,,host,1,0,false,false,0\n" +
		"1.5e-10,1,,host,2,0,false,false,0\n2e-10,3,,host,0,0,true,false,0\n"
	if p1 != want {
		t.Fatalf("pfc.csv:\n%s\nwant\n%s", p1, want)
	}
}
