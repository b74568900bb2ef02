package netns

import "testing"

func TestPaperTimes(t *testing.T) {
	for _, c := range []struct {
		in   string
		d    float64
		want string
	}{
		{"switch 4 port 1 queue 3: lossless drop (headroom) of flow 2 psn 7 from port 0 at 1.5ms", 1000, "switch 4 port 1 queue 3: lossless drop (headroom) of flow 2 psn 7 from port 0 at 1.5us"},
		{"x at 2s and at 40us", 2, "x at 1s and at 20us"},
		{"no time here, at least", 1000, "no time here, at least"},
		{"at 3ms", 1, "at 3ms"},
	} {
		if got := paperTimes(c.in, c.d); got != c.want {
			t.Errorf("paperTimes(%q, %g) = %q, want %q", c.in, c.d, got, c.want)
		}
	}
}
