package spec

import (
	"strings"
	"testing"
)

// A netns spec without dilation leaves it to the backend; a virtual one runs at 1; an explicit 0 or a
// negative value is refused naming the field.
func TestDilationAbsentZeroNegative(t *testing.T) {
	const base = "name: d\ntopology: {family: ndc, n: 2, k: 1}\nworkload: [{kind: flows, list: [{src: h0, dst: h1, size: 1KB}]}]\nduration: 1ms\n"
	s, err := Parse([]byte(base + "backend: netns\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !s.AutoDilation() || s.Dilation != 0 {
		t.Fatalf("netns without dilation: auto %v, dilation %v", s.AutoDilation(), s.Dilation)
	}
	s, err = Parse([]byte(base + "backend: virtual\n"))
	if err != nil || s.AutoDilation() || s.EffectiveDilation() != 1 {
		t.Fatalf("virtual without dilation: %v, auto %v, D %v", err, s.AutoDilation(), s.EffectiveDilation())
	}
	s, err = Parse([]byte(base + "backend: netns\ndilation: 2000\n"))
	if err != nil || s.AutoDilation() || s.EffectiveDilation() != 2000 {
		t.Fatalf("explicit 2000: %v, auto %v, D %v", err, s.AutoDilation(), s.EffectiveDilation())
	}
	for _, v := range []string{"0", "-5", "0.5"} {
		_, err := Parse([]byte(base + "backend: netns\ndilation: " + v + "\n"))
		if err == nil || !strings.Contains(err.Error(), "dilation") {
			t.Errorf("dilation: %s: %v, want a refusal naming the field", v, err)
		}
	}
}
