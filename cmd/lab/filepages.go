package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// dropFilePages unmaps, from this process only, the pages of the read-only file mappings (lab's own code
// and read-only data, libc, the dynamic loader) that are resident now. Starting lab and building a lab
// (package initialisers, cobra, the YAML decoder, topology and route building) touches code and tables
// that a simulation never runs again, and with the kernel's fault-around every touched page maps its
// cached neighbours too: 11-12 MB of a fat-tree k=8 incast's 27 MB peak RSS were such file pages, mapped
// before the first event. The pages stay in the page cache (no I/O, nothing freed for the machine): the
// process stops counting them, and a page the run still uses faults back in, a minor fault, with the same
// bytes. Only mappings that cannot hold a private change are touched: not writable and no anonymous
// (copied-on-write) pages, so no relocated or written byte can be lost. Errors (not Linux, no /proc)
// leave the pages mapped, which costs memory, not correctness.
func dropFilePages() {
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return
	}
	for _, m := range readOnlyFileMappings(smaps) {
		madviseDontNeed(m.start, m.end)
	}
}

// mapping is an address range [start, end) of this process.
type mapping struct{ start, end uintptr }

// readOnlyFileMappings returns, from the text of /proc/self/smaps, the mappings of a file (a path, not
// [heap], [vdso] or anonymous memory) that are neither writable nor hold anonymous pages.
func readOnlyFileMappings(smaps []byte) []mapping {
	var out []mapping
	var cur mapping
	candidate := false
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Text()
		if m, ok, isHeader := parseMapsHeader(line); isHeader {
			cur, candidate = m, ok
			continue
		}
		if candidate && strings.HasPrefix(line, "Anonymous:") {
			if strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, "Anonymous:"), "kB")) == "0" {
				out = append(out, cur)
			}
			candidate = false
		}
	}
	return out
}

// parseMapsHeader reads a mapping's first line in smaps, "start-end perms offset dev inode [path]";
// isHeader says whether line is one, ok whether it maps a file read-only.
func parseMapsHeader(line string) (m mapping, ok, isHeader bool) {
	f := strings.Fields(line)
	if len(f) < 5 || !strings.Contains(f[0], "-") || len(f[1]) != 4 {
		return mapping{}, false, false
	}
	lo, hi, found := strings.Cut(f[0], "-")
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if !found || err1 != nil || err2 != nil {
		return mapping{}, false, false
	}
	m = mapping{uintptr(start), uintptr(end)}
	ok = len(f) >= 6 && strings.HasPrefix(f[5], "/") && f[1][0] == 'r' && f[1][1] == '-' && f[1][3] == 'p'
	return m, ok, true
}

// madviseDontNeed drops [start, end) from this process's page tables.
func madviseDontNeed(start, end uintptr) {
	if end <= start {
		return
	}
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, start, end-start, syscall.MADV_DONTNEED)
}
