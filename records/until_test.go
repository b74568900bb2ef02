package records

import "testing"

func TestUntilKeepsTheAgreedWindow(t *testing.T) {
	l := &Log{
		Flows:   []Flow{{ID: 1, Completed: true, Finish: 50}, {ID: 2, Completed: true, Finish: 150, Delivered: 9}, {ID: 3}},
		Pauses:  []Pause{{At: 10}, {At: 100}, {At: 101}},
		Drops:   []Drop{{At: 200}},
		Samples: []QueueSample{{At: 100}, {At: 300}},
		Links:   []LinkBytes{{At: 0}, {At: 120}},
		FlowRx:  []FlowBytes{{At: 0}, {At: 120}},
		Faults:  []FaultEvent{{At: 90}, {At: 101}},
	}
	l.Until(100)
	if len(l.Pauses) != 2 || len(l.Drops) != 0 || len(l.Samples) != 1 {
		t.Fatalf("pauses %v drops %v samples %v", l.Pauses, l.Drops, l.Samples)
	}
	if len(l.Links) != 1 || len(l.FlowRx) != 1 || len(l.Faults) != 1 {
		t.Fatalf("links %v flow bytes %v faults %v", l.Links, l.FlowRx, l.Faults)
	}
	if !l.Flows[0].Completed || l.Flows[1].Completed || l.Flows[1].Finish != 0 || l.Flows[1].Delivered != 9 || len(l.Flows) != 3 {
		t.Fatalf("flows %+v", l.Flows)
	}
}
