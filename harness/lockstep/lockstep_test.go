package lockstep

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
)

func TestStampRoundTrip(t *testing.T) {
	frame := bytes.Repeat([]byte{0xab}, 60)
	b := AppendStamp(append([]byte(nil), frame...), 123456789*clock.Nanosecond, 42)
	if len(b) != len(frame)+StampLen {
		t.Fatalf("stamped frame is %d bytes, want %d", len(b), len(frame)+StampLen)
	}
	got, due, seq, err := ParseStamp(b)
	if err != nil || !bytes.Equal(got, frame) || due != 123456789*clock.Nanosecond || seq != 42 {
		t.Fatalf("ParseStamp = %d bytes, %v, %d, %v", len(got), due, seq, err)
	}
}

func TestStampMalformed(t *testing.T) {
	good := AppendStamp(make([]byte, 60), clock.Millisecond, 1)
	cases := map[string][]byte{
		"empty":           nil,
		"truncated":       good[:len(good)-1][:20],
		"no stamp":        make([]byte, 80),
		"stamp cut short": good[:len(good)-3],
		"zero sequence":   AppendStamp(make([]byte, 60), clock.Millisecond, 0),
		"negative time":   AppendStamp(make([]byte, 60), -1, 1),
	}
	for name, b := range cases {
		if _, _, _, err := ParseStamp(b); !errors.Is(err, ErrStamp) {
			t.Errorf("%s: err = %v, want ErrStamp", name, err)
		}
	}
}

// Two agents joined by one cut link in each direction (delay 10): grants follow reached + delay, carry
// the sender's counts, never exceed the end, and never move back.
func TestCoordinatorGrants(t *testing.T) {
	chans := []LockChan{{ID: 1, From: 0, To: 1, Delay: 10}, {ID: 2, From: 1, To: 0, Delay: 10}}
	c := NewCoordinator(2, chans, 100)
	if c.Lookahead() != 10 {
		t.Fatalf("lookahead %v", c.Lookahead())
	}
	gs := c.Start()
	if len(gs) != 2 || gs[0].Until != 10 || gs[1].Until != 10 {
		t.Fatalf("start grants %+v", gs)
	}
	gs, err := c.Reached(0, 7, map[int]uint64{1: 3})
	if err != nil || len(gs) != 1 || gs[0].Agent != 1 || gs[0].Until != 17 || gs[0].Counts[1] != 3 {
		t.Fatalf("after agent 0 reached 7: %+v %v", gs, err)
	}
	if gs, _ := c.Reached(0, 5, map[int]uint64{1: 3}); len(gs) != 0 {
		t.Fatalf("an older report moved grants: %+v", gs)
	}
	if _, err := c.Reached(0, 8, map[int]uint64{1: 2}); err == nil {
		t.Fatal("a count that went back was accepted")
	}
	if _, err := c.Reached(1, 8, nil); err == nil {
		t.Fatal("a report without the channel's count was accepted")
	}
	gs, _ = c.Reached(0, 95, map[int]uint64{1: 9})
	if len(gs) != 1 || gs[0].Until != 101 {
		t.Fatalf("grant past the end: %+v (want the end + 1)", gs)
	}
	gs = c.End(50)
	if len(gs) != 0 || c.Limit(1) != 101 {
		t.Fatalf("End lowered a grant already given: %+v", gs)
	}
	gs, _ = c.Reached(1, 45, map[int]uint64{2: 4})
	if len(gs) != 1 || gs[0].Agent != 0 || gs[0].Until != 51 {
		t.Fatalf("after End(50), agent 0's grant: %+v (want 51)", gs)
	}
}

// An agent no channel reaches may run to the end at once.
func TestCoordinatorUnreached(t *testing.T) {
	c := NewCoordinator(2, []LockChan{{ID: 1, From: 0, To: 1, Delay: 4}}, 20)
	gs := c.Start()
	if len(gs) != 2 || gs[0].Agent != 0 || gs[0].Until != 21 || gs[1].Until != 4 {
		t.Fatalf("start grants %+v", gs)
	}
	if _, err := c.Reached(5, 1, nil); err == nil {
		t.Fatal("a report from an unknown agent was accepted")
	}
}

// A grant applies only once its counted frames are read; a gap is lost frames, a repeat stale, and a
// grant waited on too long applies with the missing frames counted lost.
func TestWindow(t *testing.T) {
	w := NewWindow()
	if w.Limit() != 0 || w.Advance() {
		t.Fatal("a new window may run")
	}
	w.Grant(10, map[int]uint64{1: 0})
	if !w.Advance() || w.Limit() != 10 {
		t.Fatalf("a grant counting nothing did not apply: %v", w.Limit())
	}
	w.Grant(20, map[int]uint64{1: 2})
	w.Grant(30, map[int]uint64{1: 3})
	if w.Advance() || !w.Waiting() {
		t.Fatal("a grant applied before its frames were read")
	}
	if !w.Read(1, 1) || w.Advance() {
		t.Fatal("one of two frames applied the grant")
	}
	if !w.Read(1, 2) || !w.Advance() || w.Limit() != 20 {
		t.Fatalf("limit %v after both frames, want 20", w.Limit())
	}
	if w.Read(1, 2) || w.Stale != 1 {
		t.Fatal("a repeated sequence number was not stale")
	}
	if !w.Read(1, 5) || w.Lost != 2 || !w.Advance() || w.Limit() != 30 {
		t.Fatalf("gap: lost %d, limit %v", w.Lost, w.Limit())
	}
	w.Grant(40, map[int]uint64{1: 8})
	w.GiveUp()
	if w.Limit() != 40 || w.Lost != 5 || w.Waiting() {
		t.Fatalf("give up: limit %v lost %d", w.Limit(), w.Lost)
	}
	if w.Read(1, 7) {
		t.Fatal("a frame given up on was taken")
	}
}

// Every message comes back as sent, whether it goes as a compact lockstep line or as JSON (a grant
// with a field the compact form has no place for, a setup longer than the reader's buffer), in order;
// bad lines are refused naming what is wrong.
func TestStreamControl(t *testing.T) {
	var buf bytes.Buffer
	c := NewStreamControl(&buf, &buf, nil)
	long := make([]AgentDevice, 3000)
	for i := range long {
		long[i] = AgentDevice{Name: fmt.Sprintf("h%d", i), Node: i}
	}
	sent := []AgentMsg{
		{Type: "grant", Until: 5, Counts: map[int]uint64{3: 7, 1: 1 << 40}},
		{Type: "reached", Now: 123456789, Late: 2, Counts: map[int]uint64{0: 9}},
		{Type: "reached", Now: 1},
		{Type: "grant", Until: 8, Counts: map[int]uint64{2: 1}, Done: 3}, // not compact: JSON
		{Type: "setup", Setup: &AgentSetup{Lab: "x", MTU: 1500, FrameBytes: 1024, Devices: long}},
		{Type: "halt", End: 99},
	}
	for i := range sent {
		if err := c.Send(&sent[i]); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasPrefix(buf.String(), "@grant 5 1:1099511627776 3:7\n@reached 123456789 2 0:9\n@reached 1 0\n{") {
		t.Fatalf("the lockstep messages did not go compact: %.120q", buf.String())
	}
	for i := range sent {
		var m AgentMsg
		if err := c.Recv(&m); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !reflect.DeepEqual(m, sent[i]) {
			t.Fatalf("message %d: got %+v, sent %+v", i, m, sent[i])
		}
	}
	for _, bad := range []struct{ line, want string }{
		{`{"type":"bogus"}`, "not one of the protocol's"},
		{"@grant x 1:2", "time"},
		{"@grant 5 1:", "channel count"},
		{"@reached 5", "no late count"},
		{"@setup 5 1", "not a reached or grant"},
		{"@grant -5", "negative"},
	} {
		buf.WriteString(bad.line + "\n")
		var m AgentMsg
		if err := c.Recv(&m); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Fatalf("%q: %v, want an error saying %q", bad.line, err, bad.want)
		}
	}
	buf.WriteString("@grant 5") // cut off: no newline
	var m AgentMsg
	if err := c.Recv(&m); err != io.ErrUnexpectedEOF {
		t.Fatalf("a cut-off line: %v", err)
	}
}

// isZero must know every field of AgentMsg: a field it missed would be dropped from a reached or grant
// that carries it, sent as a compact line.
func TestAgentMsgIsZeroSeesEveryField(t *testing.T) {
	if !(&AgentMsg{}).isZero() {
		t.Fatal("the zero message is not zero")
	}
	typ := reflect.TypeOf(AgentMsg{})
	for i := 0; i < typ.NumField(); i++ {
		var m AgentMsg
		f := reflect.ValueOf(&m).Elem().Field(i)
		switch f.Kind() {
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Map:
			f.Set(reflect.MakeMap(f.Type()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.String:
			f.SetString("x")
		case reflect.Int, reflect.Int64:
			f.SetInt(1)
		case reflect.Uint64:
			f.SetUint(1)
		default:
			t.Fatalf("field %s: kind %v not covered by this test", typ.Field(i).Name, f.Kind())
		}
		if m.isZero() {
			t.Errorf("isZero misses field %s", typ.Field(i).Name)
		}
	}
}

// A loop polling the channel (PolledControl) gets every message whole and in order however the bytes
// arrive: first what Recv had read ahead, a line split over two writes only once it is whole, a line
// longer than the buffer, and io.EOF once the writer has closed.
func TestStreamControlPoll(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := NewStreamControl(r, io.Discard, nil)
	wc := NewStreamControl(nil, w, nil)
	long := make([]AgentDevice, 3000) // > 64 KB of JSON
	for i := range long {
		long[i] = AgentDevice{Name: fmt.Sprintf("h%d", i), Node: i}
	}
	sent := []AgentMsg{{Type: "start", Epoch: 1}, {Type: "grant", Until: 5, Counts: map[int]uint64{1: 2}}}
	for i := range sent {
		if err := wc.Send(&sent[i]); err != nil {
			t.Fatal(err)
		}
	}
	var m AgentMsg
	if err := c.Recv(&m); err != nil || m.Type != "start" { // reads the grant ahead into its buffer
		t.Fatalf("recv: %v %+v", err, m)
	}
	fd, ok := c.PollFd()
	if !ok || fd < 0 {
		t.Fatal("a pipe has no descriptor to poll")
	}
	poll := func() (bool, AgentMsg) {
		t.Helper()
		var m AgentMsg
		ok, err := c.Poll(&m)
		if err != nil {
			t.Fatal(err)
		}
		return ok, m
	}
	if ok, m := poll(); !ok || !reflect.DeepEqual(m, sent[1]) {
		t.Fatalf("the grant read ahead: %v %+v", ok, m)
	}
	if ok, _ := poll(); ok {
		t.Fatal("a message out of nothing")
	}
	w.Write([]byte("@grant 9 "))
	if ok, _ := poll(); ok {
		t.Fatal("half a line taken as a message")
	}
	w.Write([]byte("4:1\n"))
	if ok, m := poll(); !ok || m.Type != "grant" || m.Until != 9 || m.Counts[4] != 1 {
		t.Fatalf("the line written in two parts: %v %+v", ok, m)
	}
	live := AgentMsg{Type: "live", Live: &LiveMsg{Op: "inspect"}}
	big := AgentMsg{Type: "setup", Setup: &AgentSetup{Lab: "x", MTU: 1500, FrameBytes: 1024, Devices: long}}
	go func() {
		wc.Send(&big)
		wc.Send(&live)
		w.Close()
	}()
	var got []AgentMsg
	for len(got) < 2 {
		if ok, m := poll(); ok {
			got = append(got, m)
		}
	}
	if len(got[0].Setup.Devices) != 3000 || got[1].Type != "live" {
		t.Fatalf("after the long line: %d devices, then %q", len(got[0].Setup.Devices), got[1].Type)
	}
	for {
		ok, err := c.Poll(&m)
		if ok {
			t.Fatalf("a message after the last: %+v", m)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A hold (the deadlock monitor's next tick) caps every grant until it is raised, then the grants move
// on: no agent runs past a tick the coordinator has not judged.
func TestCoordinatorHold(t *testing.T) {
	chans := []LockChan{{ID: 1, From: 0, To: 1, Delay: 10}, {ID: 2, From: 1, To: 0, Delay: 10}}
	c := NewCoordinator(2, chans, 100)
	c.hold = 6
	if gs := c.Start(); len(gs) != 2 || gs[0].Until != 6 || gs[1].Until != 6 {
		t.Fatalf("start grants under a hold at 6: %+v", gs)
	}
	c.Reached(0, 6, map[int]uint64{1: 1})
	if gs, _ := c.Reached(1, 6, map[int]uint64{2: 1}); len(gs) != 0 {
		t.Fatalf("grants past the hold: %+v", gs)
	}
	if gs := c.Hold(12); len(gs) != 2 || gs[0].Until != 12 || gs[1].Until != 12 {
		t.Fatalf("raising the hold to 12: %+v", gs)
	}
	if gs := c.Hold(0); len(gs) != 2 || gs[0].Until != 16 || gs[1].Until != 16 {
		t.Fatalf("lifting the hold: %+v (want reached + delay)", gs)
	}
}
