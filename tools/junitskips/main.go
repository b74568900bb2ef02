// Command junitskips says in a Ginkgo JUnit report why each skipped spec did not run. Ginkgo writes
// message="skipped" for a spec the label filter left out; this replaces it with the filter and the
// spec's labels. Specs skipped by Skip(REASON) ("skipped - REASON") and pending ones keep their message.
// scripts/test.sh runs it on the merged report:
//
//	go run ./tools/junitskips FILE LABEL-FILTER
package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"strings"

	"github.com/onsi/ginkgo/v2/reporters"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: junitskips FILE LABEL-FILTER")
		os.Exit(2)
	}
	n, err := rewrite(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "junitskips:", err)
		os.Exit(1)
	}
	fmt.Printf("junitskips: %d skipped specs say why (label filter %q)\n", n, os.Args[2])
}

func rewrite(path, filter string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var r reporters.JUnitTestSuites
	if err := xml.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	n := 0
	for i := range r.TestSuites {
		for j := range r.TestSuites[i].TestCases {
			tc := &r.TestSuites[i].TestCases[j]
			if tc.Skipped == nil || tc.Skipped.Message != "skipped" {
				continue
			}
			tc.Skipped.Message = reason(tc.Name, filter)
			n++
		}
	}
	out, err := xml.MarshalIndent(r, "", "  ")
	if err != nil {
		return 0, err
	}
	return n, os.WriteFile(path, append([]byte(xml.Header), append(out, '\n')...), 0o644)
}

// reason names the filter and the labels Ginkgo appends to a spec's name ("... [netns, smoke]").
func reason(name, filter string) string {
	labels := "it has no labels"
	if i := strings.LastIndex(name, " ["); i >= 0 && strings.HasSuffix(name, "]") {
		labels = "its labels: " + name[i+2:len(name)-1]
	}
	return fmt.Sprintf("not run: the label filter %q does not select it (%s)", filter, labels)
}
