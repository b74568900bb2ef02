package deploy

import (
	"bytes"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// allowed are the files that may write a private-range address, and why: each names it as an address
// the code refuses, never as a network anything is put on.
var allowed = map[string]string{
	"wire/codec_test.go":      "10.0.0.1 is an address outside the lab's plan, which the codec refuses",
	"deploy/networks_test.go": "this file: its own test cases",
}

var (
	ipv4 = regexp.MustCompile(`(^|[^0-9.])([0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3})(/[0-9]{1,2})?([^0-9.]|$)`)
	// dockerNet finds a Docker network made without a subnet of its own: Docker then takes one from its
	// default pools, which are private ranges.
	dockerNet = regexp.MustCompile(`"network",\s*"create"|docker network create`)
)

var private = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
}

// privateIn returns the private-range addresses written in b.
func privateIn(b []byte) []string {
	var got []string
	for _, m := range ipv4.FindAllSubmatch(b, -1) {
		a, err := netip.ParseAddr(string(m[2]))
		if err != nil {
			continue
		}
		for _, p := range private {
			if p.Contains(a) {
				got = append(got, string(m[2])+string(m[3]))
			}
		}
	}
	return got
}

func TestPrivateIn(t *testing.T) {
	for text, want := range map[string]string{
		"subnet: 172.29.81.0/24":          "172.29.81.0/24",
		`control: "10.1.2.3:7070"`:        "10.1.2.3",
		"--underlay 192.168.1.20 ":        "192.168.1.20",
		"subnet: 198.19.81.0/24":          "",
		"172.32.0.1 and 11.0.0.1":         "",
		"version 1.10.0.3 of a thing":     "",
		"a 4-part version 2.10.0.3":       "",
		"underlay 172.16.0.1, then more.": "172.16.0.1",
	} {
		if got := strings.Join(privateIn([]byte(text)), " "); got != want {
			t.Errorf("privateIn(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestNetworksOutsidePrivateRanges fails on a private-range address anywhere in the repository's text
// (Compose files, cluster files, manifests, docs, code, tests) but the files of allowed, and on a
// Docker network made without --subnet.
func TestNetworksOutsidePrivateRanges(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			// vm-results: logs scripts/vm.sh copies out of the VM, which quote whatever a test printed.
			if strings.HasPrefix(d.Name(), ".") && rel != "." && d.Name() != ".ci" || d.Name() == "test-results" || d.Name() == "results" || rel == "vm-results" {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() || info.Size() > 4<<20 {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(b, 0) >= 0 {
			return nil // a binary (a suite's compiled test, a built lab)
		}
		seen++
		rel = filepath.ToSlash(rel)
		if _, ok := allowed[rel]; ok {
			return nil
		}
		if got := privateIn(b); len(got) > 0 {
			t.Errorf("%s: private-range address %s: use 198.18.0.0/15 (networks: a /24 of 198.19.0.0/16)", rel, strings.Join(got, ", "))
		}
		for _, line := range strings.Split(string(b), "\n") {
			if dockerNet.MatchString(line) && !strings.Contains(line, "--subnet") {
				t.Errorf("%s: a Docker network made without --subnet (Docker's default pools are private ranges): %s", rel, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 100 {
		t.Fatalf("read %d text files under %s: not the repository", seen, root)
	}
}
