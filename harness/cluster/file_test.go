package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodFile = `secret: secret.key
machines:
  - {name: m1, control: "198.19.0.1:7070", underlay: 198.19.0.1}
  - {name: m2, control: "agent-2:7070", underlay: 198.19.0.2}
`

func TestParseCluster(t *testing.T) {
	f, err := Parse([]byte(goodFile))
	if err != nil {
		t.Fatal(err)
	}
	if f.VXLAN.Port != DefaultVXLANPort || f.VXLAN.VNIBase != DefaultVNIBase || len(f.Machines) != 2 {
		t.Fatalf("%+v", f)
	}
}

// Each mistake is refused naming its field.
func TestClusterFileErrorsNameTheField(t *testing.T) {
	for _, c := range []struct{ edit, want string }{
		{"secret: secret.key\n", "secret:"},
		{"name: m2", "machines[1].name \"m1\" is used twice"},
		{"name: m2", "machines[1].name \"M2\""},
		{`"agent-2:7070"`, "machines[1].control \"agent-2\""},
		{`"agent-2:7070"`, "machines[1].control \"agent-2:70700\": port"},
		{"underlay: 198.19.0.2", "machines[1].underlay \"198.19.0.2.5\""},
		{"underlay: 198.19.0.2", "machines[1].underlay \"127.0.0.1\""},
		{"underlay: 198.19.0.2", "machines[1].underlay \"198.19.0.1\" is used twice"},
		{"", "vxlan.port 70000"},
		{"", "vxlan.vni_base 16777216"},
		{"", "clock_bound \"fast\""},
		{"", "field secrets not found"},
	} {
		y := goodFile
		bad := map[string]string{
			"machines[1].name \"m1\" is used twice":             "name: m1",
			"machines[1].name \"M2\"":                           "name: M2",
			"machines[1].control \"agent-2\"":                   `"agent-2"`,
			"machines[1].control \"agent-2:70700\": port":       `"agent-2:70700"`,
			"machines[1].underlay \"198.19.0.2.5\"":             "underlay: 198.19.0.2.5",
			"machines[1].underlay \"127.0.0.1\"":                "underlay: 127.0.0.1",
			"machines[1].underlay \"198.19.0.1\" is used twice": "underlay: 198.19.0.1",
		}[c.want]
		switch {
		case c.edit == "secret: secret.key\n":
			y = strings.Replace(y, c.edit, "", 1)
		case c.edit != "":
			y = strings.Replace(y, c.edit, bad, 1)
		case strings.HasPrefix(c.want, "vxlan.port"):
			y += "vxlan: {port: 70000}\n"
		case strings.HasPrefix(c.want, "vxlan.vni"):
			y += "vxlan: {vni_base: 16777216}\n"
		case strings.HasPrefix(c.want, "clock_bound"):
			y += "clock_bound: fast\n"
		default:
			y += "secrets: x\n"
		}
		_, err := Parse([]byte(y))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error containing %q, got %v\n%s", c.want, err, y)
		}
	}
}

func TestReadSecret(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k")
	os.WriteFile(p, []byte("short\n"), 0o600)
	if _, err := ReadSecret(p); err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Errorf("short secret: %v", err)
	}
	os.WriteFile(p, []byte(string(testSecret)+"\n"), 0o644)
	os.Chmod(p, 0o644)
	if _, err := ReadSecret(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable secret: %v", err)
	}
	os.Chmod(p, 0o600)
	if b, err := ReadSecret(p); err != nil || string(b) != string(testSecret) {
		t.Errorf("good secret: %q %v", b, err)
	}
	f, _ := Parse([]byte(goodFile))
	f.dir = dir
	if f.SecretPath() != filepath.Join(dir, "secret.key") {
		t.Errorf("relative secret path: %s", f.SecretPath())
	}
}
