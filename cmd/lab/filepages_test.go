package main

import (
	"crypto/sha256"
	"os"
	"strconv"
	"strings"
	"testing"
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

// Dropping the file pages must leave the mappings it drops as they were (their pages come back from the
// page cache, read through /proc/self/mem at the mappings' own addresses) and must lower the file pages
// this process maps.
func TestDropFilePagesKeepsBytesAndLowersRSS(t *testing.T) {
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	ms := readOnlyFileMappings(smaps)
	if len(ms) == 0 {
		t.Fatal("no read-only file mapping in this process: the program's own text should be one")
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Skip("no /proc/self/mem:", err)
	}
	defer mem.Close()
	sums := func() [][32]byte {
		var out [][32]byte
		for _, m := range ms {
			b := make([]byte, m.end-m.start)
			if _, err := mem.ReadAt(b, int64(m.start)); err != nil {
				t.Fatalf("reading mapping %x-%x: %v", m.start, m.end, err)
			}
			out = append(out, sha256.Sum256(b))
		}
		return out
	}
	before := sums()
	fileBefore := rssFileKB(t)
	dropFilePages()
	fileAfter := rssFileKB(t)
	for i, s := range sums() {
		if s != before[i] {
			t.Fatalf("mapping %x-%x changed after its pages were dropped", ms[i].start, ms[i].end)
		}
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
