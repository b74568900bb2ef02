package outfile

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNeverReplacesWhatIsNotOurs: a symbolic link (to a user's file), a directory, a device, the root
// and system directories are refused and left as they were; policy New refuses any existing file.
func TestNeverReplacesWhatIsNotOurs(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "user.txt")
	if err := os.WriteFile(user, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "compare.json")
	if err := os.Symlink(user, link); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path   string
		policy Policy
		want   string
	}{
		{link, Replace, "symbolic link"},
		{sub, Replace, "a directory"},
		{"/dev/full", New, "system directory /dev"},
		{"/compare.json", Replace, "root directory"},
		{"/etc/fabriclab.json", Replace, "system directory /etc"},
		{user, New, "never replaces a file it did not create"},
		{filepath.Join(dir, "nosuch", "cpu.pprof"), New, "its directory"},
		{filepath.Join(user, "cpu.pprof"), New, "is not a directory"},
	} {
		err := WriteBytes(tc.path, tc.policy, []byte("new"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
		// Check alone says so too: a path checked before a long run is not refused only after it.
		if err := Check(tc.path, tc.policy); err == nil {
			t.Errorf("Check %s: accepted", tc.path)
		}
	}
	if read(t, user) != "mine" {
		t.Error("the user's file was changed")
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	if fi, err := os.Stat(sub); err != nil || !fi.IsDir() {
		t.Error("the directory was replaced")
	}
	// A link to a directory is not written through either.
	if err := os.Symlink(sub, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir(filepath.Join(dir, "out")); err == nil {
		t.Error("a directory that is a link was accepted")
	}
}

// TestAtomic: Replace replaces a regular file whole; a write that fails leaves the old file and no
// temporary; New creates a file that did not exist.
func TestAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "claims.json")
	if err := WriteBytes(p, New, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(p, Replace, []byte("two")); err != nil || read(t, p) != "two" {
		t.Fatalf("replace: %v", err)
	}
	err := Write(p, Replace, func(w io.Writer) error {
		w.Write([]byte("half"))
		return io.ErrUnexpectedEOF
	})
	if err == nil || read(t, p) != "two" {
		t.Errorf("a failed write: %v, file %q", err, read(t, p))
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("left %d entries (a temporary?)", len(ents))
	}
}

// TestCheckOwnDir: an output directory is absent, empty, or the lab's.
func TestCheckOwnDir(t *testing.T) {
	dir := t.TempDir()
	ours := func(names []string) bool { return len(names) == 1 && names[0] == "report.txt" }
	if err := CheckOwnDir("-o", filepath.Join(dir, "new"), ours); err != nil {
		t.Error(err)
	}
	if err := CheckOwnDir("-o", dir, ours); err != nil {
		t.Error("empty:", err)
	}
	os.WriteFile(filepath.Join(dir, "report.txt"), nil, 0o644)
	if err := CheckOwnDir("-o", dir, ours); err != nil {
		t.Error("ours:", err)
	}
	os.WriteFile(filepath.Join(dir, "thesis.tex"), nil, 0o644)
	if err := CheckOwnDir("-o", dir, ours); err == nil || !strings.Contains(err.Error(), "other content") {
		t.Error("a user's directory:", err)
	}
	if err := CheckOwnDir("-o", "/", ours); err == nil {
		t.Error("/ accepted")
	}
}

// A directory not made yet under a link to a system directory is judged where it would be made.
func TestCheckDirFollowsAnAncestorLink(t *testing.T) {
	l := filepath.Join(t.TempDir(), "l")
	if err := os.Symlink("/etc", l); err != nil {
		t.Fatal(err)
	}
	err := CheckDir(filepath.Join(l, "new", "deeper"))
	if err == nil || !strings.Contains(err.Error(), "system directory /etc") {
		t.Fatalf("CheckDir under a link to /etc: %v", err)
	}
	if err := CheckDir(filepath.Join(t.TempDir(), "new", "deeper")); err != nil {
		t.Fatalf("a new directory under a temporary one: %v", err)
	}
}

// TestReplaceKeepsModeAndSyncsDir: a replaced file keeps its permissions (it became 0644), a new one is
// 0644, and the directory is synced after the rename or link that names the file (it was not: a crash
// could lose the new name).
func TestReplaceKeepsModeAndSyncsDir(t *testing.T) {
	var synced []string
	defer func(f func(string) error) { syncDir = f }(syncDir)
	syncDir = func(dir string) error { synced = append(synced, dir); return nil }
	dir := t.TempDir()
	p := filepath.Join(dir, "claims.json")
	if err := WriteBytes(p, New, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("a new file: %v %v, want 0644", fi.Mode(), err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(p, Replace, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 || read(t, p) != "two" {
		t.Fatalf("a replaced 0600 file: %v %v, want 0600", fi.Mode(), err)
	}
	if len(synced) != 2 || synced[0] != dir || synced[1] != dir {
		t.Fatalf("directories synced: %q, want %s after each of the two writes", synced, dir)
	}
	// A failed write commits nothing and so syncs nothing.
	synced = nil
	Write(p, Replace, func(io.Writer) error { return io.ErrUnexpectedEOF })
	if len(synced) != 0 {
		t.Errorf("a failed write synced %q", synced)
	}
}

// TestSyncDir: the real syncDir syncs a directory (fsync on a directory's descriptor is allowed).
func TestSyncDir(t *testing.T) {
	if err := syncDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
}
