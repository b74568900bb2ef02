package pkt

import "testing"

func TestPool(t *testing.T) {
	var none *Pool
	if p := none.New(Packet{Flow: 7}); p.Flow != 7 {
		t.Fatalf("nil pool: %+v", p)
	}
	none.Put(&Packet{}) // a nil pool keeps nothing
	pl := &Pool{}
	a := pl.New(Packet{Kind: Data, Flow: 1, Route: []uint8{1, 2}})
	pl.Put(a)
	if pl.Free() != 1 || a.Route != nil {
		t.Fatalf("after Put: %d free, route %v", pl.Free(), a.Route)
	}
	b := pl.New(Packet{Kind: Ack, Flow: 2})
	if b != a || b.Kind != Ack || b.Flow != 2 || b.Route != nil || pl.Free() != 0 {
		t.Fatalf("New did not reuse the freed packet whole: %+v", b)
	}
	if c := pl.New(Packet{}); c == b {
		t.Fatal("an empty pool handed out a packet in use")
	}
}

// A burst of frees beyond PoolKeep leaves the pool holding PoolKeep packets, not the burst.
func TestPoolKeepsAtMostPoolKeep(t *testing.T) {
	pl := &Pool{}
	ps := make([]*Packet, PoolKeep+100)
	for i := range ps {
		ps[i] = pl.New(Packet{Flow: uint32(i)})
	}
	for _, p := range ps {
		pl.Put(p)
	}
	if pl.Free() != PoolKeep {
		t.Fatalf("%d free after %d Puts, want the cap %d", pl.Free(), len(ps), PoolKeep)
	}
	if p := pl.New(Packet{}); p != ps[PoolKeep-1] {
		t.Fatal("New did not take the most recently kept packet")
	}
}
