package main

import (
	"os"
	"syscall"
	"unsafe"

	"codeberg.org/go-fonts/liberation/liberationmonobold"
	"codeberg.org/go-fonts/liberation/liberationmonobolditalic"
	"codeberg.org/go-fonts/liberation/liberationmonoitalic"
	"codeberg.org/go-fonts/liberation/liberationmonoregular"
	"codeberg.org/go-fonts/liberation/liberationsansbold"
	"codeberg.org/go-fonts/liberation/liberationsansbolditalic"
	"codeberg.org/go-fonts/liberation/liberationsansitalic"
	"codeberg.org/go-fonts/liberation/liberationsansregular"
	"codeberg.org/go-fonts/liberation/liberationserifbold"
	"codeberg.org/go-fonts/liberation/liberationserifbolditalic"
	"codeberg.org/go-fonts/liberation/liberationserifitalic"
	"codeberg.org/go-fonts/liberation/liberationserifregular"
)

// dropFontPages gives back the pages of the plot fonts that gonum/plot's init touched. Its init parses
// all 12 embedded Liberation fonts (4.2 MB of data in the binary, mapped privately from the executable
// file) for its font cache, which left 2.4 MB of them resident in every lab process although only
// commands that draw a plot read them again. The fonts are never written, so the pages are the file's
// own: after MADV_DONTNEED the process no longer maps them, and a plot that reads a glyph faults its page
// back in from the file (the page cache), with the same bytes. Only whole pages inside a font's bytes
// are dropped, never a neighbour's.
func dropFontPages() {
	for _, ttf := range [][]byte{
		liberationserifregular.TTF, liberationserifitalic.TTF, liberationserifbold.TTF, liberationserifbolditalic.TTF,
		liberationmonoregular.TTF, liberationmonoitalic.TTF, liberationmonobold.TTF, liberationmonobolditalic.TTF,
		liberationsansregular.TTF, liberationsansitalic.TTF, liberationsansbold.TTF, liberationsansbolditalic.TTF,
	} {
		dropPages(ttf)
	}
}

// dropPages drops the whole pages inside b from this process's mappings; an error (not Linux, say)
// leaves them mapped, which costs memory, not correctness.
func dropPages(b []byte) {
	if len(b) == 0 {
		return
	}
	pg := os.Getpagesize()
	lo := (pg - int(uintptr(unsafe.Pointer(&b[0]))%uintptr(pg))) % pg
	hi := lo + (len(b)-lo)/pg*pg
	if hi-lo < pg {
		return
	}
	_ = syscall.Madvise(b[lo:hi], syscall.MADV_DONTNEED)
}
