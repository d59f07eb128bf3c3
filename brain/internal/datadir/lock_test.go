package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeletedLockFileKeepsSecondServerOut: removing .lock by hand while a
// server runs (a clean-up script, an operator tidying up) must not let a
// second server open the same data: it would take a lock on a new .lock
// and both would write the same journals. The second process is refused
// as while .lock was there, and once the first closes, the directory
// opens again.
func TestDeletedLockFileKeepsSecondServerOut(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, LockName)); err != nil {
		t.Fatal(err)
	}
	out, code := openInChild(t, dir)
	if code != 3 || !strings.Contains(out, "already in use") {
		d.Close()
		t.Fatalf("second process with .lock deleted under the first: exit %d, output %q; want refusal saying already in use", code, out)
	}
	if d2, err := Open(dir); !errors.Is(err, ErrInUse) {
		if d2 != nil {
			d2.Close()
		}
		d.Close()
		t.Fatalf("second Open with .lock deleted = %v, want ErrInUse", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	out, code = openInChild(t, dir)
	if code != 0 || !strings.Contains(out, "opened") {
		t.Fatalf("child after Close: exit %d, output %q; want opened", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, LockName)); err != nil {
		t.Errorf(".lock was not made again: %v", err)
	}
}

// TestReplacedLockFileKeepsSecondServerOut: .lock replaced by another
// file (restored from a backup, say) while a server runs does not let a
// second one in either.
func TestReplacedLockFileKeepsSecondServerOut(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	other := filepath.Join(dir, "lock-copy")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, filepath.Join(dir, LockName)); err != nil {
		t.Fatal(err)
	}
	out, code := openInChild(t, dir)
	if code != 3 || !strings.Contains(out, "already in use") {
		t.Fatalf("second process with .lock replaced: exit %d, output %q; want refusal saying already in use", code, out)
	}
}
