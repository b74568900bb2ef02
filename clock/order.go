package clock

import "fmt"

// Order places an event among the events due at the same picosecond (docs/architecture.md §Order of
// simultaneous events). Both clocks fire events in (time, Order, sequence) order, where the sequence is
// the order in which the events of one Order were scheduled. An Order names the device the event
// belongs to and a class within it:
//
//   - class 0: the device's own timers (its engine's serialization ends, transport, congestion-control
//     and flow-control timers, flow starts), in the order the device scheduled them;
//   - class 1+p: frames arriving on the device's port p, in the link's FIFO order.
//
// Every link has a positive delay, so an event of one device at time t cannot change another device at
// t: events of different devices due at one instant commute, and only the order within a device
// decides a run. That order depends only on the device's own inputs (its timers, and each input
// link's frames by port), never on which device scheduled what first, so the virtual clock, an agent's
// real clock and a parallel virtual backend whose workers each hold some devices all fire a device's
// simultaneous events alike. Devices are ordered by their graph node index all the same, so that
// records of simultaneous events (pauses, drops) come out in one order everywhere.
//
// Events of the harness itself (the deadlock monitor's ticks, faults, run bookkeeping) take Harness:
// after every device's events at that instant, so they see the fabric as it is at the end of it.
type Order uint64

const (
	// orderClassBits is the room for a device's classes: its own timers and up to 65,534 ports.
	orderClassBits = 16
	// orderDeviceBits bounds the devices: 2^24 - 1 graph nodes (lab.Budget allows 1e5).
	orderDeviceBits = 24
	// OrderBits is the width of an Order.
	OrderBits = orderDeviceBits + orderClassBits
	// MaxOrderDevice is the largest device index an Order holds; MaxOrderPort the largest port.
	MaxOrderDevice = 1<<orderDeviceBits - 2
	MaxOrderPort   = 1<<orderClassBits - 2
)

// Harness is the Order of the harness's own events: after every device's.
const Harness Order = (1<<orderDeviceBits - 1) << orderClassBits

// CheckOrderRoom refuses a fabric whose devices or ports an Order cannot name (lab.Build calls it
// before any engine is made): past the room, one device's keys would alias another's, or Harness, and
// simultaneous events would fire in another order than the rule's without a word.
func CheckOrderRoom(devices, maxPorts int) error {
	if devices > MaxOrderDevice+1 {
		return fmt.Errorf("%d devices: more than the %d an event's order can name (clock.Order)", devices, MaxOrderDevice+1)
	}
	if maxPorts > MaxOrderPort+1 {
		return fmt.Errorf("a device of %d ports: more than the %d an event's order can name (clock.Order)", maxPorts, MaxOrderPort+1)
	}
	return nil
}

// DeviceOrder is the Order of device's own timers (device: its graph node index). A device beyond
// MaxOrderDevice panics: CheckOrderRoom refuses such a fabric first, so this is a harness's bug.
func DeviceOrder(device int) Order {
	if device < 0 || device > MaxOrderDevice {
		panic(fmt.Sprintf("clock.DeviceOrder(%d): outside 0..%d (CheckOrderRoom refuses such a fabric)", device, MaxOrderDevice))
	}
	return Order(uint64(device) << orderClassBits)
}

// ArrivalOrder is the Order of frames arriving on device's port. Out of range panics, as DeviceOrder.
func ArrivalOrder(device, port int) Order {
	if port < 0 || port > MaxOrderPort {
		panic(fmt.Sprintf("clock.ArrivalOrder(%d, %d): port outside 0..%d (CheckOrderRoom refuses such a fabric)", device, port, MaxOrderPort))
	}
	return DeviceOrder(device) | Order(port+1)
}

// Device returns the device an Order names (MaxOrderDevice+1 for Harness).
func (o Order) Device() int { return int(o >> orderClassBits) }

// Ordered is a Clock whose events can be placed by an Order. Virtual and Real implement it; For gives
// an engine a Clock whose every event carries its device's Order.
type Ordered interface {
	Clock
	AfterFuncOrdered(d Time, o Order, f func()) Timer
	ScheduleOrdered(d Time, o Order, f func())
}

var (
	_ Ordered = (*Virtual)(nil)
	_ Ordered = (*Real)(nil)
)

// For returns c as seen by the events of Order o: every AfterFunc, Schedule and Rearm through it
// carries o. Engines are given For(clk, DeviceOrder(node)); harness code takes Harness. A view given
// again is viewed by o (it kept its old Order: an engine handed another device's view would have run
// its events in that device's place). A clock without Orders is returned as it is.
func For(c Clock, o Order) Clock {
	switch c := c.(type) {
	case *Virtual:
		return &virtualView{v: c, o: o}
	case *virtualView:
		return &virtualView{v: c.v, o: o}
	case *Real:
		return &realView{r: c, o: o}
	case *realView:
		return &realView{r: c.r, o: o}
	case *Dilated:
		return &Dilated{c: For(c.c, o).(Ordered), d: c.d}
	}
	return c
}

// virtualView is a Virtual seen by one Order. It implements Scheduler and Rearmer, as Virtual does.
type virtualView struct {
	v *Virtual
	o Order
}

func (w *virtualView) Now() Time                             { return w.v.now }
func (w *virtualView) AfterFunc(d Time, f func()) Timer      { return w.v.AfterFuncOrdered(d, w.o, f) }
func (w *virtualView) Schedule(d Time, f func())             { w.v.ScheduleOrdered(d, w.o, f) }
func (w *virtualView) Rearm(t Timer, d Time, f func()) Timer { return w.v.rearm(t, d, w.o, f) }
func (w *virtualView) AfterFuncOrdered(d Time, o Order, f func()) Timer {
	return w.v.AfterFuncOrdered(d, o, f)
}
func (w *virtualView) ScheduleOrdered(d Time, o Order, f func()) { w.v.ScheduleOrdered(d, o, f) }
func (w *virtualView) ScheduleHandler(d Time, h Handler)         { w.v.ScheduleHandler(d, w.o, h) }

// realView is a Real seen by one Order.
type realView struct {
	r *Real
	o Order
}

func (w *realView) Now() Time                        { return w.r.now }
func (w *realView) AfterFunc(d Time, f func()) Timer { return w.r.AfterFuncOrdered(d, w.o, f) }
func (w *realView) Schedule(d Time, f func())        { w.r.ScheduleOrdered(d, w.o, f) }
func (w *realView) AfterFuncOrdered(d Time, o Order, f func()) Timer {
	return w.r.AfterFuncOrdered(d, o, f)
}
func (w *realView) ScheduleOrdered(d Time, o Order, f func()) { w.r.ScheduleOrdered(d, o, f) }

var (
	_ Ordered   = (*virtualView)(nil)
	_ Scheduler = (*virtualView)(nil)
	_ Rearmer   = (*virtualView)(nil)
	_ Handlers  = (*virtualView)(nil)
	_ Ordered   = (*realView)(nil)
	_ Scheduler = (*realView)(nil)
)
