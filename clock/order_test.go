package clock

import (
	"strings"
	"testing"
)

// orderScript schedules, on c, events due at one instant in a scrambled scheduling order, some of them
// scheduling more for the same instant, and returns what fired, in order. Both clocks must fire them
// by (time, Order, scheduling order): the rule the two backends share (order.go).
func orderScript(c Ordered, run func()) string {
	var got []string
	note := func(s string) func() { return func() { got = append(got, s) } }
	dev := func(n int) Clock { return For(c, DeviceOrder(n)) }
	c.ScheduleOrdered(10, ArrivalOrder(2, 1), note("d2p1"))
	dev(2).AfterFunc(10, note("d2t-a"))
	c.AfterFunc(10, note("harness"))
	c.ScheduleOrdered(10, ArrivalOrder(2, 0), note("d2p0"))
	dev(1).AfterFunc(10, func() {
		got = append(got, "d1t")
		// Due now, on a device whose events at this instant have not run: it still fires in its place.
		dev(2).AfterFunc(0, note("d2t-c"))
		// Due now on a device that already ran at this instant (this one): after what it ran.
		c.ScheduleOrdered(0, ArrivalOrder(1, 3), note("d1p3"))
	})
	dev(2).AfterFunc(10, note("d2t-b"))
	dev(0).AfterFunc(10, note("d0t"))
	dev(0).AfterFunc(5, note("d0t-early"))
	run()
	return strings.Join(got, " ")
}

const orderWant = "d0t-early d0t d1t d1p3 d2t-a d2t-b d2t-c d2p0 d2p1 harness"

func TestOrderVirtual(t *testing.T) {
	v := NewVirtual()
	if got := orderScript(v, func() { v.RunUntil(Second) }); got != orderWant {
		t.Fatalf("virtual fired %s\nwant %s", got, orderWant)
	}
}

func TestOrderReal(t *testing.T) {
	r := NewReal(MonotonicNanos() - 1e12) // everything is due
	if got := orderScript(r, func() { r.RunDue() }); got != orderWant {
		t.Fatalf("real fired %s\nwant %s", got, orderWant)
	}
}

// The rule holds through the heap (events beyond the wheel's span) as through the wheel, ties of time
// and Order included.
func TestOrderVirtualFar(t *testing.T) {
	v := NewVirtual()
	var got []string
	note := func(s string) func() { return func() { got = append(got, s) } }
	far := 10 * Millisecond
	v.ScheduleOrdered(far, ArrivalOrder(3, 0), note("d3p0"))
	v.ScheduleOrdered(far, DeviceOrder(3), note("d3t-a"))
	v.AfterFuncOrdered(far, DeviceOrder(1), note("d1t"))
	v.ScheduleOrdered(far, DeviceOrder(3), note("d3t-b"))
	stopped := v.AfterFuncOrdered(far, DeviceOrder(0), note("stopped"))
	stopped.Stop()
	v.RunUntil(far - Microsecond) // brings the events onto the wheel's span
	v.ScheduleOrdered(Microsecond, DeviceOrder(3), note("d3t-c"))
	v.RunUntil(far)
	if g := strings.Join(got, " "); g != "d1t d3t-a d3t-b d3t-c d3p0" {
		t.Fatalf("fired %s", g)
	}
}

// A Dilated clock's engine time is the wrapped clock's over D, exactly, and a timer set through it
// fires at a multiple of D.
func TestDilated(t *testing.T) {
	v := NewVirtual()
	c := Dilate(v, 1000)
	var at []Time
	c.AfterFunc(7, func() {
		at = append(at, c.Now(), v.Now())
		For(c, DeviceOrder(1)).(Scheduler).Schedule(3, func() { at = append(at, c.Now(), v.Now()) })
	})
	v.RunUntil(Second)
	if len(at) != 4 || at[0] != 7 || at[1] != 7000 || at[2] != 10 || at[3] != 10000 {
		t.Fatalf("engine/wrapped times %v, want [7 7000 10 10000]", at)
	}
}

// TestOrderRoom: the largest device and port an Order names stay below Harness and apart; past them
// DeviceOrder and ArrivalOrder panic (they aliased other devices' keys, or Harness, without a word) and
// CheckOrderRoom refuses the fabric.
func TestOrderRoom(t *testing.T) {
	last := ArrivalOrder(MaxOrderDevice, MaxOrderPort)
	if last >= Harness || last.Device() != MaxOrderDevice || DeviceOrder(MaxOrderDevice) >= last {
		t.Fatalf("the last device's last port: %#x, Harness %#x", last, Harness)
	}
	if ArrivalOrder(1, MaxOrderPort) >= DeviceOrder(2) {
		t.Fatal("the last port of device 1 is not before device 2")
	}
	for name, f := range map[string]func(){
		"DeviceOrder(MaxOrderDevice+1)":     func() { DeviceOrder(MaxOrderDevice + 1) },
		"DeviceOrder(-1)":                   func() { DeviceOrder(-1) },
		"ArrivalOrder(0, MaxOrderPort+1)":   func() { ArrivalOrder(0, MaxOrderPort+1) },
		"ArrivalOrder(MaxOrderDevice+1, 0)": func() { ArrivalOrder(MaxOrderDevice+1, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
	if err := CheckOrderRoom(MaxOrderDevice+1, MaxOrderPort+1); err != nil {
		t.Errorf("the largest fabric an Order names: %v", err)
	}
	if err := CheckOrderRoom(MaxOrderDevice+2, 1); err == nil || !strings.Contains(err.Error(), "devices") {
		t.Errorf("one device too many: %v", err)
	}
	if err := CheckOrderRoom(1, MaxOrderPort+2); err == nil || !strings.Contains(err.Error(), "ports") {
		t.Errorf("one port too many: %v", err)
	}
}

// TestForAViewTakesTheNewOrder: For on a view is viewed by the new Order (it kept the old one, so an
// engine given another device's view ran its events in that device's place).
func TestForAViewTakesTheNewOrder(t *testing.T) {
	for name, c := range map[string]Ordered{"virtual": NewVirtual(), "real": NewReal(MonotonicNanos() - 1e12)} {
		var got []string
		note := func(s string) func() { return func() { got = append(got, s) } }
		d2 := For(c, DeviceOrder(2))
		d1 := For(d2, DeviceOrder(1)) // device 1's events: before device 2's at one instant
		d2.AfterFunc(10, note("d2"))
		d1.AfterFunc(10, note("d1"))
		For(Dilate(For(c, DeviceOrder(3)).(Ordered), 2), DeviceOrder(0)).AfterFunc(5, note("d0"))
		switch c := c.(type) {
		case *Virtual:
			c.RunUntil(Second)
		case *Real:
			c.RunDue()
		}
		if g := strings.Join(got, " "); g != "d0 d1 d2" {
			t.Errorf("%s: fired %s, want d0 d1 d2", name, g)
		}
	}
}
