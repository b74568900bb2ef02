package bounded

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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

// TestStatFirst: a regular file over the limit is refused by its size before a byte is read (a 3 GB
// sparse file: read up to the limit, it took 9.75 s and 2.1 GB), by ReadFile, ReadAll and Reader.
func TestStatFirst(t *testing.T) {
	p := filepath.Join(t.TempDir(), "summary.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var tl *TooLarge
	if _, err := ReadFile(p, Summary); !errors.As(err, &tl) || tl.Size != 3<<30 {
		t.Fatalf("3 GB sparse file: %v", err)
	}
	g, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := ReadAll(g, p, Summary); !errors.As(err, &tl) || tl.Size != 3<<30 {
		t.Fatalf("ReadAll: %v", err)
	}
	if off, _ := g.Seek(0, io.SeekCurrent); off != 0 {
		t.Errorf("ReadAll read %d bytes before refusing", off)
	}
	n, err := Reader(g, p, Summary).Read(make([]byte, 10))
	if n != 0 || !errors.As(err, &tl) {
		t.Errorf("Reader: %d %v", n, err)
	}
}

// TestFIFONeverBlocks: a FIFO without a writer opens at once (a blocking open(2) hung lab run fifo.yaml
// where no signal handler runs) and reads as empty.
func TestFIFONeverBlocks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo.yaml")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 1)
	go func() {
		b, err := ReadFile(p, Spec)
		if err == nil && len(b) != 0 {
			err = errors.New("read bytes from a FIFO without a writer")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO without a writer blocked")
	}
}

// TestWithin: paths that leave the root, by .. or a link, are refused; paths inside are resolved.
func TestWithin(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(root, "link.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := Within(root, "a.json"); err != nil {
		t.Errorf("a file inside: %v", err)
	}
	for _, p := range []string{"../../../../../dev/zero", "link.json", "/etc/passwd", filepath.Join(root, "..", "x")} {
		if _, err := Within(root, p); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("%s: %v", p, err)
		}
	}
}
