package clock

// StepUntil fires the next event if it comes at or before (t, o) in the order of order.go (time, then
// Order), discarding the stopped events in front of it, and returns the fired event's Order. dropped is
// the latest time among the stopped events it discarded (-1: none). A parallel virtual backend runs
// each part of a fabric on a Virtual of its own with it: it bounds a window by time and Order, knows
// which device each event belonged to, and can say how far a sequential clock that discards stopped
// events only on reaching them would have run (Horizon).
func (v *Virtual) StepUntil(t Time, o Order) (fired Order, dropped Time, ok bool) {
	at, eo, dropped, ok := v.Next()
	if !ok || at > t || at == t && eo > o {
		return 0, dropped, false
	}
	v.Step() // fires that event: Next left it, live, at the front
	return eo, dropped, true
}

// Next discards the stopped events in front of the queue and returns the time and Order of the event
// Step would fire next (ok false: none). dropped is as for StepUntil.
func (v *Virtual) Next() (at Time, o Order, dropped Time, ok bool) {
	dropped = -1
	for v.inWheel > 0 || len(v.events) > 0 {
		top := v.peek()
		if tm, isTimer := v.slots[top.key&slotMask].h.(*vtimer); isTimer && tm.stale(*top) {
			dropped = max(dropped, top.at)
			v.take(v.pop())
			continue
		}
		return top.at, Order(top.key >> slotBits), dropped, true
	}
	return 0, 0, dropped, false
}
