package main

import (
	"crypto/sha256"
	"testing"

	"codeberg.org/go-fonts/liberation/liberationsansregular"
	"codeberg.org/go-fonts/liberation/liberationserifbolditalic"
)

// Dropping the font pages must leave the fonts' bytes as they were: the pages come back from the file.
func TestDropFontPagesKeepsBytes(t *testing.T) {
	fonts := [][]byte{liberationsansregular.TTF, liberationserifbolditalic.TTF}
	var before [][32]byte
	for _, f := range fonts {
		before = append(before, sha256.Sum256(f))
	}
	dropFontPages()
	for i, f := range fonts {
		if sha256.Sum256(f) != before[i] {
			t.Fatalf("font %d changed after its pages were dropped", i)
		}
	}
}
