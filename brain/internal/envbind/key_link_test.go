package envbind

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key file that is a symbolic link to nothing can be neither read nor
// created: loading it fails with an error naming it, rather than trying
// again for ever, and leaves no temporary file behind.
func TestKeyFileDanglingLinkFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, KeyFileName)
	if err := os.Symlink(filepath.Join(dir, "missing", "key"), path); err != nil {
		t.Fatal(err)
	}
	_, err := loadKey(path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("loadKey of a dangling link = %v, want an error naming %s", err, path)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files beside the key: %v", entries)
	}
}

// An empty key file name is refused, not taken for the working directory.
func TestKeyFileEmptyNameFails(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, err := loadKey(""); err == nil {
		t.Fatal("loadKey(\"\") succeeded")
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("files left in the working directory: %v", entries)
	}
}
