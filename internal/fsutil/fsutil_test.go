package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestFdatasync(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("data")); err != nil {
		t.Fatal(err)
	}
	if err := Fdatasync(f); err != nil {
		t.Fatalf("Fdatasync = %v", err)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != "data" {
		t.Fatalf("after Fdatasync the file holds %q, %v", got, err)
	}
	f.Close()
	if err := Fdatasync(f); err == nil {
		t.Errorf("Fdatasync of a closed file succeeded")
	}
	// A pipe cannot be synced: the failure must be reported, not dropped.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := Fdatasync(w); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Fdatasync of a pipe = %v, want EINVAL", err)
	}
}

func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := SyncDir(dir); err != nil {
		t.Fatalf("SyncDir = %v", err)
	}
	if err := SyncDir(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("SyncDir of a missing directory = %v, want os.ErrNotExist", err)
	}
}

func TestIsTemp(t *testing.T) {
	dir := t.TempDir()
	// The names WriteFileAtomic's temporary files get.
	f, err := os.CreateTemp(dir, tempPrefix+"m.wasm-*")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	for name, want := range map[string]bool{
		filepath.Base(f.Name()):  true,
		".tmp-x.rejected-123":    true,
		".token.tmp-42":          true, // the older form
		"x.wasm":                 false,
		"x.rejected":             false,
		".lock":                  false,
		"format":                 false,
		"requests.log":           false,
		"a.tmp-1":                false, // not hidden: not one of ours
		"0000000000000000.state": false,
	} {
		if got := IsTemp(name); got != want {
			t.Errorf("IsTemp(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestWriteFileAtomicFailureLeavesNoTemp checks that a failed replace
// leaves the old content and no temporary file.
func TestWriteFileAtomicFailureLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteFileAtomic(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A directory in the way of the rename makes it fail after the
	// temporary file was written and synced.
	q := filepath.Join(dir, "d")
	if err := os.MkdirAll(filepath.Join(q, "child"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(q, []byte("new"), 0o600); err == nil {
		t.Fatal("WriteFileAtomic over a non-empty directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if IsTemp(e.Name()) {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
	if got, _ := os.ReadFile(p); string(got) != "old" {
		t.Errorf("f holds %q, want old", got)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	for _, content := range []string{"first", "second, longer"} {
		if err := WriteFileAtomic(p, []byte(content), 0o640); err != nil {
			t.Fatalf("WriteFileAtomic = %v", err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != content {
			t.Fatalf("ReadFile = %q, %v; want %q", got, err, content)
		}
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the target", len(entries))
	}
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "x"), nil, 0o600); err == nil {
		t.Errorf("WriteFileAtomic into a missing directory succeeded")
	}
}

func TestWriteFileExclusive(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	if err := WriteFileExclusive(p, []byte("first"), 0o640); err != nil {
		t.Fatalf("WriteFileExclusive = %v", err)
	}
	if err := WriteFileExclusive(p, []byte("second"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second WriteFileExclusive = %v, want fs.ErrExist", err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "first" {
		t.Fatalf("file holds %q, %v; want the first content", got, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the target (no temporary file)", len(entries))
	}
}

func TestIsTempOf(t *testing.T) {
	dir := t.TempDir()
	tmp, err := os.CreateTemp(dir, tempPrefix+"format-*")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	for name, want := range map[string]bool{
		filepath.Base(tmp.Name()): true,
		".format.tmp-123":         true,
		".tmp-format.old-1":       false,
		".tmp-formats-1":          false,
		"format":                  false,
		".tmp-other-1":            false,
	} {
		if got := IsTempOf(name, "format"); got != want {
			t.Errorf("IsTempOf(%q, format) = %v, want %v", name, got, want)
		}
	}
}
