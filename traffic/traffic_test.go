package traffic

import "testing"

func TestIncastShape(t *testing.T) {
	s, err := Incast(Rand(1, 0), 16, 8, 3, nil, 1e6, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, f := range s {
		if f.Dst != 3 || f.Src == 3 || f.Size != 1e6 || seen[f.Src] {
			t.Fatalf("bad incast flow %+v", f)
		}
		seen[f.Src] = true
	}
	if len(s) != 8 {
		t.Fatalf("%d flows, want 8", len(s))
	}
	again, _ := Incast(Rand(1, 0), 16, 8, 3, nil, 1e6, 0)
	for i := range s {
		if s[i].Src != again[i].Src {
			t.Fatal("same seed gave different senders")
		}
	}
	if _, err := Incast(Rand(1, 0), 16, 16, 3, nil, 1e6, 0); err == nil {
		t.Fatal("16 senders among 15 other hosts accepted")
	}
}
