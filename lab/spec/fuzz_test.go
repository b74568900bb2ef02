package spec

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fabriclab/fabriclab/units"
)

// seedSpecs adds the repo's own specs (testdata and every experiment) to a fuzz corpus.
func seedSpecs(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	more, _ := filepath.Glob("../experiments/*.yaml")
	deeper, _ := filepath.Glob("../experiments/*/*.yaml")
	files = append(append(files, more...), deeper...)
	if len(files) < 5 {
		f.Fatalf("seed specs: %v", files)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("name: x\ntopology: {family: ring, n: 3}\nduration: 1e30s\nswitch: {buffer: .nan}\n"))
	f.Add([]byte("name: x\ntopology: {family: ndc}\nduration: 10ms\ndilation: .inf\nworkload: [{kind: poisson, cdf: hadoop, load: 1e-12}]\n"))
}

// FuzzParse: no panic; an accepted spec has every number finite and in range, and printing it parses
// back to the same spec (what a run directory stores and `lab run` replays).
func FuzzParse(f *testing.F) {
	seedSpecs(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		checkNumbers(t, reflect.ValueOf(s).Elem(), "")
		out, err := yaml.Marshal(s)
		if err != nil {
			t.Fatalf("accepted spec does not print: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("printed spec does not parse: %v\n%s", err, out)
		}
		back.lines, s.lines = nil, nil
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("round trip differs:\n%s", out)
		}
	})
}

// checkNumbers walks a parsed spec: every float finite, every size, rate and time in units' ranges.
func checkNumbers(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch x := v.Interface().(type) {
	case Size:
		if x.Bytes < 0 || x.Bytes > units.MaxBytes || x.BDPs < 0 || x.BDPs > units.MaxBDPs || math.IsNaN(x.BDPs) {
			t.Fatalf("%s: size %+v out of range", path, x)
		}
		return
	case Time:
		if x < 0 || x.Clock() > units.MaxTime {
			t.Fatalf("%s: time %d ps out of range", path, int64(x))
		}
		return
	case Rate:
		if !(x >= 0 && float64(x) <= units.MaxRate) {
			t.Fatalf("%s: rate %v out of range", path, float64(x))
		}
		return
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			t.Fatalf("%s: %v accepted", path, f)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			checkNumbers(t, v.Elem(), path)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				checkNumbers(t, v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			checkNumbers(t, v.Index(i), path)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			checkNumbers(t, v.MapIndex(k), path+"."+k.String())
		}
	}
}
