package netns

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/harness/nslink/nstest"

	"github.com/fabriclab/fabriclab/nodes"
	"github.com/fabriclab/fabriclab/switchsw"
)

// dimensionless are the engine config numbers that are neither times nor rates nor bytes, so dilation
// leaves them alone; a new field must be a clock.Time (a time), a float64 named ...Bps (a rate), a
// byte count (...Bytes, or int64 in a byte-threshold struct), or join this list with a reason.
var dimensionless = map[string]string{
	"Alpha":          "dynamic-threshold factor",
	"BDPs":           "a threshold in BDPs, resolved with dilated rate x dilated delay: bytes unchanged",
	"PMax":           "marking probability",
	"G":              "DCQCN gain",
	"RateOnFirstCNP": "fraction of the line rate",
	"Ratio":          "telemetry Δ1, a ratio",
	"Wait":           "telemetry first round, in RTTs",
	"P":              "ATE probability",
	"W0":             "ATE initial weight",
	"Seed":           "random seed",
	"MinWindow":      "DCTCP window floor, in packets",
	"InitWindow":     "DCTCP initial window, in packets",
	// Counts of packets or events.
	"AckEvery":          "packets per ACK",
	"FastRecoveryTimes": "DCQCN fast-recovery stages",
	"Every":             "telemetry: probe every N packets",
	"RTOThreshold":      "packets in flight below which the low RTO applies",
}

// bytesName: an int64 that counts bytes.
var bytesName = regexp.MustCompile(`(Bytes|^KMin|^KMax|^Bytes|Offset)$`)

// timeOrRate: names that smell of a time or a rate. Any field so named must be one of the dilated kinds.
var timeOrRate = regexp.MustCompile(`(?i)(interval|gap|delay|timeout|rto|timer|period|every|rate|threshold|wait|time|bps|lag)`)

// TestDilateWalksEveryField walks every number in the switch and NIC configs: each is a time, a rate, a
// byte count or listed as dimensionless (so a timer or rate added later cannot be left undilated
// unnoticed); then it sets every time and rate of a real lab's configs, dilates, and checks each one
// came back scaled (times x D, rates / D), including nested and slice fields. UGAL's threshold
// (nodes.Config.Telemetry.Threshold), ATE's interval and the spread gap were missed by the field list
// Dilate had before.
func TestDilateWalksEveryField(t *testing.T) {
	var check func(tp reflect.Type, path, name string)
	check = func(tp reflect.Type, path, name string) {
		switch {
		case tp == timeType:
			return
		case tp.Kind() == reflect.Struct:
			for i := 0; i < tp.NumField(); i++ {
				f := tp.Field(i)
				if f.IsExported() {
					check(f.Type, path+"."+f.Name, f.Name)
				}
			}
		case tp.Kind() == reflect.Slice || tp.Kind() == reflect.Array || tp.Kind() == reflect.Pointer:
			check(tp.Elem(), path+"[]", name)
		case tp.Kind() == reflect.Map:
			if k := tp.Elem().Kind(); k == reflect.Float64 || tp.Elem() == timeType {
				t.Errorf("%s: a map of times or rates, which dilation does not walk", path)
			}
		case tp.Kind() == reflect.Float64:
			if !strings.HasSuffix(name, "Bps") && dimensionless[name] == "" {
				t.Errorf("%s (float64): not a rate (...Bps) and not listed as dimensionless: dilate it or list it", path)
			}
		case tp.Kind() == reflect.Int64 || tp.Kind() == reflect.Int:
			if timeOrRate.MatchString(name) && !bytesName.MatchString(name) && dimensionless[name] == "" {
				t.Errorf("%s (%v): named like a time or rate but not a clock.Time: dilation would miss it", path, tp)
			}
		}
	}
	check(reflect.TypeOf(switchsw.Config{}), "switchsw.Config", "")
	check(reflect.TypeOf(nodes.Config{}), "nodes.Config", "")

	l := nstest.Lab(t, `
name: audit
backend: netns
topology: {family: dragonfly, p: 1, a: 2, h: 1}
routing: {algorithm: ugal, threshold: 30KB}
switch: {flow_control: pfc}
host: {transport: lossless, cc: dcqcn}
workload: [{kind: flows, list: [{src: h0, dst: h3, size: 1MB, at: 2us}]}]
duration: 5ms`)
	// Every time and rate gets a distinct non-zero value, so a field left alone shows.
	n := 0
	var fill func(v reflect.Value, name string)
	fill = func(v reflect.Value, name string) {
		switch {
		case v.Type() == timeType:
			n++
			v.SetInt(int64(1000 + n))
		case v.Kind() == reflect.Float64 && strings.HasSuffix(name, "Bps"):
			n++
			v.SetFloat(1e9 + float64(n))
		case v.Kind() == reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				if v.Field(i).CanSet() {
					fill(v.Field(i), v.Type().Field(i).Name)
				}
			}
		case v.Kind() == reflect.Slice || v.Kind() == reflect.Array:
			for i := 0; i < v.Len(); i++ {
				fill(v.Index(i), name)
			}
		case v.Kind() == reflect.Pointer && !v.IsNil():
			fill(v.Elem(), name)
		}
	}
	for i := range l.Switches {
		fill(reflect.ValueOf(&l.Switches[i].Config).Elem(), "")
	}
	for i := range l.Hosts {
		fill(reflect.ValueOf(&l.Hosts[i].Config).Elem(), "")
	}
	const d = 10
	dl, err := Dilate(l, d)
	if err != nil {
		t.Fatal(err)
	}
	var cmp func(a, b reflect.Value, path, name string)
	cmp = func(a, b reflect.Value, path, name string) {
		switch {
		case a.Type() == timeType:
			if b.Int() != a.Int()*d {
				t.Errorf("%s: time %d dilated to %d, want %d", path, a.Int(), b.Int(), a.Int()*d)
			}
		case a.Kind() == reflect.Float64 && strings.HasSuffix(name, "Bps"):
			if b.Float() != a.Float()/d {
				t.Errorf("%s: rate %g dilated to %g, want %g", path, a.Float(), b.Float(), a.Float()/d)
			}
		case a.Kind() == reflect.Struct:
			for i := 0; i < a.NumField(); i++ {
				if f := a.Type().Field(i); f.IsExported() {
					cmp(a.Field(i), b.Field(i), path+"."+f.Name, f.Name)
				}
			}
		case a.Kind() == reflect.Slice || a.Kind() == reflect.Array:
			if a.Len() != b.Len() {
				t.Errorf("%s: length %d became %d", path, a.Len(), b.Len())
				return
			}
			for i := 0; i < a.Len(); i++ {
				cmp(a.Index(i), b.Index(i), path+"[]", name)
			}
		case a.Kind() == reflect.Pointer && !a.IsNil():
			cmp(a.Elem(), b.Elem(), path, name)
		}
	}
	for i := range l.Switches {
		cmp(reflect.ValueOf(l.Switches[i].Config), reflect.ValueOf(dl.Switches[i].Config), "switch", "")
	}
	for i := range l.Hosts {
		// Dilate resolves host defaults first; every field filled above is non-zero, so defaults leave it.
		c, err := l.Hosts[i].Config.WithDefaults()
		if err != nil {
			t.Fatal(err)
		}
		cmp(reflect.ValueOf(c), reflect.ValueOf(dl.Hosts[i].Config), "host", "")
	}
	if n == 0 {
		t.Fatal("no time or rate field filled")
	}
	if l.Hosts[0].Config.Telemetry.Threshold == 0 {
		t.Error("the UGAL lab has no threshold to check")
	}
}
