package main

import (
	"crypto/sha256"
	"os"
	"strconv"
	"strings"
	"testing"

	"codeberg.org/go-fonts/liberation/liberationmonoregular"
)

const smapsSample = `00400000-009d9000 r-xp 00000000 fd:01 123 /usr/local/bin/lab
Size:               6000 kB
Rss:                5028 kB
Anonymous:             0 kB
009d9000-00fa1000 r--p 005d9000 fd:01 123 /usr/local/bin/lab
Rss:                4640 kB
Anonymous:             0 kB
00fa1000-014fb000 rw-p 00ba1000 fd:01 123 /usr/local/bin/lab
Rss:                 776 kB
Anonymous:            96 kB
014fb000-0251c000 rw-p 00000000 00:00 0 
Anonymous:           128 kB
7f7113d9c000-7f7113dc2000 r--p 00000000 fd:01 77 /usr/lib/x86_64-linux-gnu/libc.so.6
Anonymous:             0 kB
7f7113f18000-7f7113f6e000 r--p 0017c000 fd:01 77 /usr/lib/x86_64-linux-gnu/libc.so.6
Anonymous:             8 kB
7f7113f6e000-7f7113f72000 r--s 00000000 fd:01 90 /some/shared/file
Anonymous:             0 kB
7ffd1a5f4000-7ffd1a5f6000 r-xp 00000000 00:00 0                          [vdso]
Anonymous:             0 kB
`

// Only read-only private file mappings without anonymous (copied-on-write) pages may be dropped: the
// writable data, the anonymous heap, libc's relocated read-only part, shared mappings and the vdso stay.
func TestReadOnlyFileMappings(t *testing.T) {
	got := readOnlyFileMappings([]byte(smapsSample))
	want := []mapping{{0x400000, 0x9d9000}, {0x9d9000, 0xfa1000}, {0x7f7113d9c000, 0x7f7113dc2000}}
	if len(got) != len(want) {
		t.Fatalf("got %d mappings %x, want %x", len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d: got %x, want %x", i, got[i], want[i])
		}
	}
}

// Dropping the file pages must leave the program and its read-only data as they were (the pages come
// back from the page cache) and must lower the file pages this process maps.
func TestDropFilePagesKeepsBytesAndLowersRSS(t *testing.T) {
	before := sha256.Sum256(liberationmonoregular.TTF)
	fileBefore := rssFileKB(t)
	dropFilePages()
	fileAfter := rssFileKB(t)
	if sha256.Sum256(liberationmonoregular.TTF) != before {
		t.Fatal("read-only data changed after its pages were dropped")
	}
	if strings.Repeat("ab", 3) != "ababab" { // code still runs from refaulted pages
		t.Fatal("strings.Repeat broke")
	}
	if fileAfter >= fileBefore {
		t.Errorf("RssFile %d kB before dropFilePages, %d kB after: nothing dropped", fileBefore, fileAfter)
	}
}

func rssFileKB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status:", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatalf("RssFile line %q: %v", l, err)
			}
			return n
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}
