package journal

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A checkpoint of a session that holds no record (through 0, the only
// sequence its check lets through) is refused with ErrInvalid and leaves
// nothing on disk: no directory of a session that does not exist, and no
// checkpoint that the session, once created, would answer for records it
// was not derived from.
func TestCheckpointOfEmptySessionRefused(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, nil)
	if err := fs.WriteCheckpoint(bg, "s", 0, []byte("before")); !errors.Is(err, ErrInvalid) {
		t.Errorf("WriteCheckpoint of a session with no record = %v; want ErrInvalid", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "s")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory of a session with no record after its checkpoint: %v; want none", err)
	}
	if err := fs.Append(bg, "r", 1, numbered(1, 1)); err != nil {
		t.Fatal(err)
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	fs = openT(t, dir, nil)
	if ids, err := fs.Sessions(bg); err != nil || !slices.Equal(ids, []string{"r"}) {
		t.Errorf("Sessions = %v, %v; want [r]", ids, err)
	}
	if err := fs.Append(bg, "s", 1, numbered(1, 2)); err != nil {
		t.Fatal(err)
	}
	if through, p, err := fs.ReadCheckpoint(bg, "s"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadCheckpoint of the session created since = %d, %q, %v; want ErrNotFound", through, p, err)
	}

	m := NewMemStore()
	if err := m.WriteCheckpoint(bg, "s", 0, []byte("before")); !errors.Is(err, ErrInvalid) {
		t.Errorf("MemStore.WriteCheckpoint of a session with no record = %v; want ErrInvalid", err)
	}
	if err := m.Append(bg, "s", 1, numbered(1, 2)); err != nil {
		t.Fatal(err)
	}
	if through, p, err := m.ReadCheckpoint(bg, "s"); !errors.Is(err, ErrNotFound) {
		t.Errorf("MemStore.ReadCheckpoint of the session created since = %d, %q, %v; want ErrNotFound", through, p, err)
	}
}
