package bounded

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLimits(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(p, 5); err != nil || string(b) != "12345" {
		t.Errorf("a file of exactly the limit: %q %v", b, err)
	}
	var tl *TooLarge
	if _, err := ReadFile(p, 4); !errors.As(err, &tl) || !strings.Contains(err.Error(), "more than 4 bytes") {
		t.Errorf("a file over the limit: %v", err)
	}
	// /dev/zero never ends: refused as a device, and a reader of it after the limit.
	if _, err := ReadFile("/dev/zero", 1<<20); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("/dev/zero: %v", err)
	}
	if _, err := ReadFile(dir, 1<<20); err == nil {
		t.Error("a directory was read")
	}
	z, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	if _, err := ReadAll(z, "/dev/zero", 1<<20); !errors.As(err, &tl) {
		t.Errorf("/dev/zero through ReadAll: %v", err)
	}
	b, err := io.ReadAll(Reader(strings.NewReader("12345"), "s", 5))
	if err != nil || string(b) != "12345" {
		t.Errorf("Reader at the limit: %q %v", b, err)
	}
	if _, err := io.ReadAll(Reader(strings.NewReader("123456"), "s", 5)); !errors.As(err, &tl) {
		t.Errorf("Reader over the limit: %v", err)
	}
}
