package records

import "testing"

func TestUntilKeepsTheAgreedWindow(t *testing.T) {
	l := &Log{
		Flows:   []Flow{{ID: 1, Completed: true, Finish: 50}, {ID: 2, Completed: true, Finish: 150, Delivered: 9}, {ID: 3}},
		Pauses:  []Pause{{At: 10}, {At: 100}, {At: 101}},
		Drops:   []Drop{{At: 200}},
		Samples: []QueueSample{{At: 100}, {At: 300}},
	}
	l.Until(100)
	if len(l.Pauses) != 2 || len(l.Drops) != 0 || len(l.Samples) != 1 {
		t.Fatalf("pauses %v drops %v samples %v", l.Pauses, l.Drops, l.Samples)
	}
	if !l.Flows[0].Completed || l.Flows[1].Completed || l.Flows[1].Finish != 0 || l.Flows[1].Delivered != 9 || len(l.Flows) != 3 {
		t.Fatalf("flows %+v", l.Flows)
	}
}
