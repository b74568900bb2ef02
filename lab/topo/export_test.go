package topo

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The §8 contract: `lab topo ndc n=4 k=1 --json` reports 16 hosts, 8 switches, 32 links, with the
// documented top-level and per-item keys.
func TestJSONShape(t *testing.T) {
	var buf bytes.Buffer
	if err := MustBuild("ndc", "n=4", "k=1").WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Family string            `json:"family"`
		Params map[string]string `json:"params"`
		Nodes  []map[string]any  `json:"nodes"`
		Links  []map[string]any  `json:"links"`
		Stats  map[string]any    `json:"stats"`
	}
	if err := json.Unmarshal(buf.Bytes(), &obj); err != nil {
		t.Fatal(err)
	}
	if obj.Family != "ndc" || obj.Params["n"] != "4" || obj.Params["k"] != "1" || obj.Params["rate"] != "100Gbps" {
		t.Fatalf("family/params: %s %v", obj.Family, obj.Params)
	}
	for k, want := range map[string]float64{"hosts": 16, "switches": 8, "links": 32, "diameter": 4, "avg_shortest_path": 3.2} {
		if obj.Stats[k] != want {
			t.Fatalf("stats.%s = %v, want %v", k, obj.Stats[k], want)
		}
	}
	if len(obj.Nodes) != 24 || len(obj.Links) != 32 {
		t.Fatalf("%d nodes, %d links", len(obj.Nodes), len(obj.Links))
	}
	kinds := map[any]int{}
	for _, n := range obj.Nodes {
		if _, ok := n["name"].(string); !ok {
			t.Fatalf("node without name: %v", n)
		}
		kinds[n["kind"]]++
	}
	if kinds["host"] != 16 || kinds["switch"] != 8 {
		t.Fatalf("kinds %v", kinds)
	}
	l := obj.Links[0]
	if l["a"] != "h0" || l["b"] != "s0" || l["rate_bps"] != 1e11 || l["delay_s"] != 1e-6 {
		t.Fatalf("first link %v", l)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, g := range []*Graph{
		MustBuild("ndc", "n=3", "k=2", "rail=true"),
		MustBuild("fattree", "k=4", "core_fraction=0.25", "delay=300ns"),
		MustBuild("jellyfish", "switches=14", "degree=3", "hosts=9", "seed=7"),
		MustBuild("xpander", "switches=12", "degree=3", "seed=3"),
		MustBuild("dragonfly", "p=1", "a=4", "h=2", "arrangement=relative", "rate=25Gbps"),
		MustBuild("torus", "x=3", "y=4", "hosts_per_switch=2"),
		MustBuild("envelope"),
	} {
		path := filepath.Join(dir, g.Family+".json")
		var first bytes.Buffer
		if err := g.WriteJSON(&first); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, first.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		back, err := Build("file", map[string]string{"path": path})
		if err != nil {
			t.Fatalf("%s: %v", g.Family, err)
		}
		if back.Family != g.Family || !reflect.DeepEqual(back.Params, g.Params) ||
			!reflect.DeepEqual(back.Nodes, g.Nodes) || !reflect.DeepEqual(back.Links, g.Links) ||
			!reflect.DeepEqual(back.Hosts, g.Hosts) || !reflect.DeepEqual(back.Switches, g.Switches) {
			t.Fatalf("%s: import differs from the exported graph", g.Family)
		}
		var second bytes.Buffer
		if err := back.WriteJSON(&second); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("%s: re-export differs", g.Family)
		}
		var viaUnmarshal Graph
		if err := json.Unmarshal(first.Bytes(), &viaUnmarshal); err != nil || !reflect.DeepEqual(viaUnmarshal.Links, g.Links) {
			t.Fatalf("%s: json.Unmarshal: %v", g.Family, err)
		}
	}
}

// Hand-written files: ports come from link order, missing rates and delays from the file family's keys.
func TestJSONHandWritten(t *testing.T) {
	src := `{"nodes":[{"name":"a","kind":"host"},{"name":"x","kind":"switch"},{"name":"b","kind":"host"},{"name":"y","kind":"switch"}],
	 "links":[{"a":"x","b":"y"},{"a":"a","b":"x","rate_bps":1e9},{"a":"b","b":"y","delay_s":2e-6}]}`
	path := filepath.Join(t.TempDir(), "g.json")
	os.WriteFile(path, []byte(src), 0o644)
	g, err := Build("file", map[string]string{"path": path, "rate": "10Gbps", "delay": "5us"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Family != "file" || len(g.Hosts) != 2 || len(g.Switches) != 2 {
		t.Fatalf("%s %d hosts %d switches", g.Family, len(g.Hosts), len(g.Switches))
	}
	x, _ := g.Lookup("x")
	if g.Peer(x, 0).Node != g.Switches[1] || g.Peer(x, 1).Node != g.Hosts[0] {
		t.Fatal("ports of x are not in link order")
	}
	if g.Links[0].RateBps != 10e9 || g.Links[1].RateBps != 1e9 || g.Links[0].Delay.Seconds() != 5e-6 || g.Links[2].Delay.Seconds() != 2e-6 {
		t.Fatalf("rates/delays %+v", g.Links)
	}
	if st := g.Stats(); st.Diameter != 3 || !st.Connected {
		t.Fatalf("stats %+v", st)
	}
	for _, bad := range []struct{ src, want string }{
		{`{"nodes":[{"name":"a","kind":"host"}],"links":[{"a":"a","b":"z"}]}`, `no node named "z"`},
		{`{"nodes":[{"name":"a","kind":"router"}],"links":[]}`, "want host or switch"},
		{`{"nodes":[{"name":"a","kind":"host"},{"name":"a","kind":"host"}],"links":[]}`, "used twice"},
		{`{"nodes":[{"name":"a","kind":"host"},{"name":"b","kind":"host"}],"links":[{"a":"a","b":"b","a_port":1,"b_port":0}]}`, "no link"},
		{`{"nodes":[],"links":[],"colour":1}`, "unknown field"},
	} {
		_, err := ReadJSON(strings.NewReader(bad.src), 1e9, 0)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Fatalf("%s: error %v, want %q", bad.src, err, bad.want)
		}
	}
}

func TestValidateCatchesBrokenWiring(t *testing.T) {
	g := MustBuild("ring", "n=4")
	g.Links[5].B.Port = 0 // link 5 is s1–s2; port 0 of s2 holds its host link
	if err := g.Validate(); err == nil {
		t.Fatal("a link end pointing at another link's port passed")
	}
	g = MustBuild("ring", "n=4")
	g.Nodes[g.Switches[1]].Ports = g.Nodes[g.Switches[1]].Ports[:2]
	if err := g.Validate(); err == nil {
		t.Fatal("a dangling link end passed")
	}
	g = MustBuild("ring", "n=4")
	g.Hosts[0], g.Hosts[1] = g.Hosts[1], g.Hosts[0]
	if err := g.Validate(); err == nil {
		t.Fatal("a misordered host list passed")
	}
}

func TestDOT(t *testing.T) {
	var buf bytes.Buffer
	if err := MustBuild("dragonfly", "p=1", "a=2", "h=1").WriteDOT(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{`graph "dragonfly" {`, `"h0" [shape=ellipse];`, `"s0" [shape=box];`,
		`"h0" -- "s0" [taillabel=0, headlabel=0];`, `label="global"`, `label="local"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("DOT lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, " -- ") != 12 {
		t.Fatalf("DOT has %d edges, want 12", strings.Count(out, " -- "))
	}
}
