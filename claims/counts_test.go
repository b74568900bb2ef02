package claims

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// The two hand-written count tables, the README's and the "now" columns of docs/claims.md's strict R
// table, say what the shipped table says: a refresh that changes a verdict and leaves them behind fails
// here. The generated blocks (between claims markers) are lab claims' own and not checked here.
func TestWrittenCountsMatchTable(t *testing.T) {
	cs, err := Load("../docs/claims.json")
	if err != nil {
		t.Fatal(err)
	}
	papers := []string{"portfc", "fcplus", "fibre-channel", "dragonfly", "expander"}
	type counts struct{ rows, r, o, n int }
	want := map[string]counts{}
	for _, c := range cs {
		for _, p := range []string{c.Paper, "all"} {
			k := want[p]
			k.rows++
			switch c.Verdict {
			case "R":
				k.r++
			case "O":
				k.o++
			case "N":
				k.n++
			}
			want[p] = k
		}
	}
	share := func(a, b int) string { return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(b)) }

	readme := table(t, "../README.md", "| paper | claims (rows) |")
	names := map[string]string{"PortFC": "portfc", "FC+": "fcplus", "Fibre Channel fabrics": "fibre-channel",
		"lossy Dragonfly": "dragonfly", "expander thesis": "expander", "all": "all"}
	seen := 0
	for _, row := range readme {
		p, ok := names[row[0]]
		if !ok {
			t.Errorf("README: count table row %q names no paper", row[0])
			continue
		}
		seen++
		k := want[p]
		j := k.r + k.o + k.n
		exp := []string{fmt.Sprint(k.rows), fmt.Sprint(j), fmt.Sprint(k.r), fmt.Sprint(k.o), fmt.Sprint(k.n), share(k.r, j), share(k.r, k.rows)}
		if got := row[1:]; strings.Join(got, "|") != strings.Join(exp, "|") {
			t.Errorf("README: %s says %v, docs/claims.json gives %v", row[0], got, exp)
		}
	}
	if seen != len(papers)+1 {
		t.Errorf("README: %d count table rows, want one per paper and all (%d)", seen, len(papers)+1)
	}

	strict := table(t, "../docs/claims.md", "| paper | rows before |")
	seen = 0
	for _, row := range strict {
		k, ok := want[row[0]]
		if !ok || len(row) < 5 {
			t.Errorf("docs/claims.md: strict R table row %v names no paper", row)
			continue
		}
		seen++
		j := k.r + k.o + k.n
		exp := []string{fmt.Sprint(k.rows), fmt.Sprint(j), fmt.Sprint(k.r), share(k.r, j), share(k.r, k.rows)}
		if got := row[len(row)-5:]; strings.Join(got, "|") != strings.Join(exp, "|") {
			t.Errorf("docs/claims.md: strict R table, %s now says %v, docs/claims.json gives %v", row[0], got, exp)
		}
	}
	if seen != len(papers)+1 {
		t.Errorf("docs/claims.md: %d strict R table rows, want one per paper and all (%d)", seen, len(papers)+1)
	}
}

// table returns the cells of the Markdown table whose header line starts with header, one slice per
// body row (the separator line skipped).
func table(t *testing.T, path, header string) [][]string {
	t.Helper()
	bs, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(bs), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, header) {
			continue
		}
		var rows [][]string
		for _, l := range lines[i+2:] {
			if !strings.HasPrefix(l, "|") {
				break
			}
			var cells []string
			for _, c := range strings.Split(strings.Trim(l, "|"), "|") {
				cells = append(cells, strings.TrimSpace(c))
			}
			rows = append(rows, cells)
		}
		return rows
	}
	t.Fatalf("%s: no table headed %q", path, header)
	return nil
}
